#include "test_upstream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/url/parse.hpp>

#include <openssl/evp.h>

#include <atomic>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "faultline/net/async.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::relaytest {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Stream = beast::ssl_stream<tcp::socket>;

namespace {
using faultline::net::use_tuple;
constexpr std::size_t kPiece = 64 * 1024;
}  // namespace

void fill_pattern(char* out, std::uint64_t offset, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) out[i] = pattern_byte(offset + i);
}

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) { EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr); }
Sha256::~Sha256() = default;
void Sha256::update(const void* data, std::size_t size) { EVP_DigestUpdate(ctx_->md, data, size); }
std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &length);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < length; ++i) {
    out += digits[digest[i] >> 4];
    out += digits[digest[i] & 15];
  }
  return out;
}

std::string pattern_sha256(std::uint64_t size) {
  Sha256 sha;
  std::vector<char> piece(kPiece);
  for (std::uint64_t offset = 0; offset < size; offset += piece.size()) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - offset));
    fill_pattern(piece.data(), offset, n);
    sha.update(piece.data(), n);
  }
  return sha.hex();
}

struct TestUpstream::Impl : std::enable_shared_from_this<TestUpstream::Impl> {
  explicit Impl(const net::CertifiedKey& serving)
      : tls(net::make_server_context(serving)),
        acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        chunk_wake(ioc) {}

  asio::io_context ioc;
  asio::ssl::context tls;
  tcp::acceptor acceptor;
  std::thread thread;

  std::atomic<std::uint64_t> body_written{0};
  std::atomic<bool> body_complete{false};
  std::atomic<std::size_t> chunks_written{0};
  std::atomic<std::uint64_t> tunnel_received{0};
  std::atomic<std::int64_t> tunnel_last_ns{0};

  // Chunks released by the test and not yet written (nullopt: the last chunk). Touched only on
  // the server thread.
  std::deque<std::optional<std::string>> chunk_queue;
  asio::steady_timer chunk_wake;

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
      if (ec) co_return;
      asio::co_spawn(ioc, serve(Stream(std::move(socket), tls)), asio::detached);
    }
  }

  asio::awaitable<void> serve(Stream stream) {
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (hec) co_return;
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      parser.header_limit(1024 * 1024);  // as kube-apiserver's; the proxy's limits are what is tested
      auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
      if (ec) break;
      auto& req = parser.get();
      auto url = boost::urls::parse_origin_form(req.target());
      std::string path = url ? std::string(url->path()) : std::string();
      bool keep_going = false;
      if (path == "/bytes") {
        auto size_param = url->params().find("size");
        const std::uint64_t size = size_param == url->params().end() ? 0 : std::stoull((*size_param).value);
        keep_going = co_await send_bytes(stream, size);
      } else if (path == "/digest") {
        keep_going = co_await digest(stream, buffer, parser);
      } else if (path == "/chunks") {
        keep_going = co_await send_chunks(stream);
      } else if (path == "/echo" && beast::iequals(req[http::field::upgrade], "faultline-echo")) {
        co_await echo(stream, buffer);
      } else if (path == "/headers") {
        keep_going = co_await echo_headers(stream, buffer, parser);
      } else if (path.starts_with("/raw/")) {
        // Computed before the co_await: GCC 12 mishandles temporaries of a conditional expression
        // inside a co_await's arguments (ASan caught a corrupted decoded string here).
        auto count_param = url->params().find("count");
        const int count = count_param == url->params().end() ? 1 : std::stoi((*count_param).value);
        const std::string name = path.substr(5);
        co_await send_raw(stream, name, count);
      } else {
        http::response<http::string_body> res{http::status::not_found, 11};
        res.body() = "no such test endpoint\n";
        res.prepare_payload();
        co_await http::async_write(stream, res, use_tuple);
        keep_going = true;
      }
      if (!keep_going || !req.keep_alive()) break;
    }
    co_await stream.async_shutdown(use_tuple);
  }

  asio::awaitable<bool> send_bytes(Stream& stream, std::uint64_t size) {
    body_written = 0;
    body_complete = false;
    http::response<http::buffer_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/octet-stream");
    res.content_length(size);
    http::serializer<false, http::buffer_body> sr{res};
    auto [hec, hn] = co_await http::async_write_header(stream, sr, use_tuple);
    if (hec) co_return false;
    std::vector<char> piece(kPiece);
    std::uint64_t offset = 0;
    do {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - offset));
      fill_pattern(piece.data(), offset, n);
      res.body().data = piece.data();
      res.body().size = n;
      res.body().more = offset + n < size;
      auto [ec, written] = co_await http::async_write(stream, sr, use_tuple);
      if (ec && ec != http::error::need_buffer) co_return false;
      offset += n;
      body_written = offset;
    } while (!sr.is_done());
    body_complete = true;
    co_return true;
  }

  asio::awaitable<bool> digest(Stream& stream, beast::flat_buffer& buffer,
                               http::request_parser<http::buffer_body>& parser) {
    Sha256 sha;
    std::uint64_t size = 0;
    std::vector<char> piece(kPiece);
    while (!parser.is_done()) {
      parser.get().body().data = piece.data();
      parser.get().body().size = piece.size();
      auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, use_tuple);
      if (ec && ec != http::error::need_buffer) co_return false;
      std::size_t got = piece.size() - parser.get().body().size;
      sha.update(piece.data(), got);
      size += got;
    }
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/plain");
    res.body() = std::to_string(size) + " " + sha.hex();
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(stream, res, use_tuple);
    co_return !ec;
  }

  asio::awaitable<bool> send_chunks(Stream& stream) {
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.chunked(true);
    http::serializer<false, http::empty_body> sr{res};
    auto [hec, hn] = co_await http::async_write_header(stream, sr, use_tuple);
    if (hec) co_return false;
    for (;;) {
      while (chunk_queue.empty()) {
        chunk_wake.expires_at(asio::steady_timer::time_point::max());
        co_await chunk_wake.async_wait(use_tuple);
      }
      auto chunk = std::move(chunk_queue.front());
      chunk_queue.pop_front();
      if (!chunk) {
        auto [ec, n] = co_await asio::async_write(stream, http::make_chunk_last(), use_tuple);
        co_return !ec;
      }
      auto [ec, n] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(*chunk)), use_tuple);
      if (ec) co_return false;
      ++chunks_written;
    }
  }

  // The request's header fields, one "name: value" line each, in the order received; the body is
  // read and dropped.
  asio::awaitable<bool> echo_headers(Stream& stream, beast::flat_buffer& buffer,
                                     http::request_parser<http::buffer_body>& parser) {
    std::vector<char> piece(kPiece);
    while (!parser.is_done()) {
      parser.get().body().data = piece.data();
      parser.get().body().size = piece.size();
      auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, use_tuple);
      if (ec && ec != http::error::need_buffer) co_return false;
    }
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "text/plain");
    for (const auto& field : parser.get()) {
      res.body() += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
    }
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(stream, res, use_tuple);
    co_return !ec;
  }

  // Responses no valid server sends, written as raw bytes; the connection is closed afterwards.
  asio::awaitable<void> send_raw(Stream& stream, std::string what, int count) {
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    std::string out;
    if (what == "bad-status") {
      out = "HTTP/1.1 twohundred OK\r\nContent-Length: 2\r\n\r\nok";
    } else if (what == "big-header") {
      out = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(20 * 1024, 'b') + "\r\nContent-Length: 2\r\n\r\nok";
    } else if (what == "huge-field") {
      out = "HTTP/1.1 200 OK\r\nX-Huge: " + std::string(70 * 1024, 'h') + "\r\nContent-Length: 2\r\n\r\nok";
    } else if (what == "length-and-chunked") {
      out = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    } else if (what == "interim") {  // `count` interim responses, then 200 "ok"
      for (int i = 0; i < count; ++i) out += "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
      out += ok;
    } else {
      out = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    }
    co_await asio::async_write(stream, asio::buffer(out), use_tuple);
  }

  // 101, a greeting in the same write (so the relay receives tunnel bytes together with the
  // response header), then echo until the client closes.
  asio::awaitable<void> echo(Stream& stream, beast::flat_buffer& buffer) {
    std::string head =
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: faultline-echo\r\n\r\nhello\n";
    auto [hec, hn] = co_await asio::async_write(stream, asio::buffer(head), use_tuple);
    if (hec) co_return;
    if (buffer.size() > 0) {
      note_tunnel_bytes(buffer.size());
      auto [ec, n] = co_await asio::async_write(stream, buffer.data(), use_tuple);
      if (ec) co_return;
      buffer.consume(buffer.size());
    }
    std::vector<char> piece(kPiece);
    for (;;) {
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(piece), use_tuple);
      if (ec) co_return;
      note_tunnel_bytes(n);
      auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(piece.data(), n), use_tuple);
      if (wec) co_return;
    }
  }

  void note_tunnel_bytes(std::size_t n) {
    tunnel_last_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    tunnel_received += n;
  }
};

TestUpstream::TestUpstream(const net::CertifiedKey& serving) : impl_(std::make_shared<Impl>(serving)) {
  asio::co_spawn(impl_->ioc, impl_->accept_loop(), asio::detached);
  impl_->thread = std::thread([impl = impl_] { impl->ioc.run(); });
}

TestUpstream::~TestUpstream() {
  impl_->ioc.stop();
  impl_->thread.join();
}

unsigned short TestUpstream::port() const { return impl_->acceptor.local_endpoint().port(); }
std::uint64_t TestUpstream::body_bytes_written() const { return impl_->body_written.load(); }
bool TestUpstream::body_complete() const { return impl_->body_complete.load(); }
std::size_t TestUpstream::chunks_written() const { return impl_->chunks_written.load(); }
std::uint64_t TestUpstream::tunnel_bytes_received() const { return impl_->tunnel_received.load(); }

std::chrono::steady_clock::time_point TestUpstream::tunnel_last_received() const {
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(impl_->tunnel_last_ns.load()));
}

void TestUpstream::release_chunk(std::string data) {
  asio::post(impl_->ioc, [impl = impl_, data = std::move(data)]() mutable {
    impl->chunk_queue.emplace_back(std::move(data));
    impl->chunk_wake.cancel();
  });
}

void TestUpstream::finish_chunks() {
  asio::post(impl_->ioc, [impl = impl_] {
    impl->chunk_queue.emplace_back(std::nullopt);
    impl->chunk_wake.cancel();
  });
}

}  // namespace faultline::relaytest
