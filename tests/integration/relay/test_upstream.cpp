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
#include <boost/url/parse_query.hpp>

#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <deque>
#include <map>
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
      : tls(net::make_server_context(serving, /*offer_h2=*/true)),
        acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        chunk_wake(ioc) {}

  asio::io_context ioc;
  asio::ssl::context tls;
  tcp::acceptor acceptor;
  std::thread thread;

  std::atomic<std::uint64_t> body_written{0};
  std::atomic<std::uint64_t> body_written_total{0};
  std::atomic<bool> body_complete{false};
  std::atomic<std::size_t> chunks_written{0};
  std::atomic<std::uint64_t> tunnel_received{0};
  std::atomic<std::int64_t> tunnel_last_ns{0};
  std::atomic<std::uint64_t> accepted{0};

  // Chunks released by the test and not yet written (nullopt: the last chunk). Touched only on
  // the server thread.
  std::deque<std::optional<std::string>> chunk_queue;
  asio::steady_timer chunk_wake;

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
      if (ec) co_return;
      ++accepted;
      asio::co_spawn(ioc, serve(Stream(std::move(socket), tls)), asio::detached);
    }
  }

  asio::awaitable<void> serve(Stream stream) {
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (hec) co_return;
    if (net::alpn_selected(stream.native_handle()) == "h2") {
      co_await serve_h2(stream);
      co_return;
    }
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
      } else if (path == "/api/v1/pods" && url->params().contains("watch")) {
        // A watch that sends `count` events of about `size` bytes as fast as it can, then ends.
        auto count_param = url->params().find("count");
        auto size_param = url->params().find("size");
        const std::uint64_t count = count_param == url->params().end() ? 1 : std::stoull((*count_param).value);
        const std::size_t size = size_param == url->params().end() ? 100 : std::stoull((*size_param).value);
        keep_going = co_await send_watch_events(stream, count, size);
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
      body_written_total += n;
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

  asio::awaitable<bool> send_watch_events(Stream& stream, std::uint64_t count, std::size_t size) {
    http::response<http::empty_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.chunked(true);
    http::serializer<false, http::empty_body> sr{res};
    auto [hec, hn] = co_await http::async_write_header(stream, sr, use_tuple);
    if (hec) co_return false;
    const std::string filler(size, 'x');
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string event = R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"namespace":"ns","name":"p)" +
                                std::to_string(i) + R"(","resourceVersion":")" + std::to_string(i + 1) +
                                R"("},"data":")" + filler + "\"}}\n";
      auto [ec, n] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(event)), use_tuple);
      if (ec) co_return false;
    }
    auto [ec, n] = co_await asio::async_write(stream, http::make_chunk_last(), use_tuple);
    co_return !ec;
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
    if (what == "endless-chunk-line") {  // 200 chunked, then a chunk-size line of `count` MiB, no CRLF
      const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;x=";
      auto [hec, hn] = co_await asio::async_write(stream, asio::buffer(head), use_tuple);
      if (hec) co_return;
      const std::string piece(1024 * 1024, 'x');
      for (int i = 0; i < count; ++i) {
        auto [ec, n] = co_await asio::async_write(stream, asio::buffer(piece), use_tuple);
        if (ec) co_return;
      }
      co_return;
    }
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
    } else if (what == "many-chunks") {  // 200, `count` chunks of 1-300 pattern bytes in one write
      out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      std::uint64_t offset = 0;
      for (int i = 0; i < count; ++i) {
        std::string piece(static_cast<std::size_t>(i % 300 + 1), '\0');
        fill_pattern(piece.data(), offset, piece.size());
        offset += piece.size();
        char hex[16];
        auto [end, ec] = std::to_chars(hex, hex + sizeof hex, piece.size(), 16);
        out.append(hex, end).append("\r\n").append(piece).append("\r\n");
      }
      out += "0\r\n\r\n";
    } else if (what == "until-close") {  // 200, `count` pattern bytes, no length: the close ends them
      out = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n";
      std::string body(static_cast<std::size_t>(count), '\0');
      fill_pattern(body.data(), 0, body.size());
      out += body;
    } else if (what == "hop-by-hop") {  // 200 "ok" with every hop-by-hop field, one named by Connection
      out =
          "HTTP/1.1 200 OK\r\nConnection: close, X-Named\r\nKeep-Alive: timeout=5\r\n"
          "Proxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-Sum\r\nUpgrade: h2c\r\nX-Named: 1\r\n"
          "Content-Length: 2\r\nX-Kept: 1\r\nContent-Length: 2\r\n\r\nok";
    } else if (what == "spacing") {  // 200 "ok", fields written with every spacing HTTP/1.1 allows
      out =
          "HTTP/1.1 200 OK\r\nX-Tight:1\r\nX-Wide:   two  words \t\r\nX-Tab:\tt\r\nX-Empty:\r\n"
          "X-Folded: a\r\n b\r\nX-Normal: n\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    } else if (what == "close-after") {  // 200 "ok" as if the connection stayed open, then it closes
      out = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    } else if (what == "chunked-head") {  // the answer to a HEAD of a chunked resource: no body
      out =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
          "Connection: close\r\n\r\n";
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

  // ---- HTTP/2 (ALPN chose h2): an nghttp2 server session, one loop that writes what the session
  // has to send, then reads. GET /bytes and /headers as over HTTP/1.1, and
  // /header-bomb?count=N: 200 with N copies of one 3,000-byte field (nghttp2's deflater indexes
  // it once and refers to it by index: a few bytes on the wire, N x 3 kB decompressed).
  struct H2Stream {
    std::string path, query;
    std::string headers;     // the request's regular fields, "name: value" lines
    std::uint64_t size = 0;  // /bytes: body size
    std::uint64_t sent = 0;  // /bytes: body bytes handed to the session
    std::string text;        // other bodies
    std::size_t text_off = 0;
  };
  struct H2Conn {
    Impl* impl = nullptr;
    nghttp2_session* session = nullptr;
    std::map<std::int32_t, H2Stream> streams;
    ~H2Conn() {
      if (session) nghttp2_session_del(session);
    }
  };

  static ssize_t h2_read_body(nghttp2_session*, std::int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                              nghttp2_data_source*, void* user) {
    auto* c = static_cast<H2Conn*>(user);
    auto& st = c->streams[id];
    if (st.path == "/bytes") {
      auto n = static_cast<std::size_t>(std::min<std::uint64_t>(length, st.size - st.sent));
      fill_pattern(reinterpret_cast<char*>(buf), st.sent, n);
      st.sent += n;
      c->impl->body_written = st.sent;
      c->impl->body_written_total += n;
      if (st.sent == st.size) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        c->impl->body_complete = true;
      }
      return static_cast<ssize_t>(n);
    }
    std::size_t n = std::min(length, st.text.size() - st.text_off);
    std::memcpy(buf, st.text.data() + st.text_off, n);
    st.text_off += n;
    if (st.text_off == st.text.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  static void h2_respond(H2Conn& c, std::int32_t id) {
    auto& st = c.streams[id];
    auto param = [&](std::string_view name) -> std::uint64_t {
      auto params = boost::urls::parse_query(st.query);
      if (!params) return 0;
      auto it = params->find(name);
      return it == params->end() ? 0 : std::stoull(std::string((*it).value));
    };
    std::vector<std::pair<std::string, std::string>> fields = {{":status", "200"}};
    if (st.path == "/bytes") {
      st.size = param("size");
      c.impl->body_written = 0;
      c.impl->body_complete = st.size == 0;
      fields.emplace_back("content-type", "application/octet-stream");
      fields.emplace_back("content-length", std::to_string(st.size));
    } else if (st.path == "/headers") {
      st.text = st.headers;
    } else if (st.path == "/api/v1/pods") {
      // A watch of `count` events of about `size` bytes, sent as fast as flow control lets it.
      const std::string filler(param("size"), 'x');
      for (std::uint64_t i = 0, n = param("count"); i < n; ++i) {
        st.text += R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"namespace":"ns","name":"p)" +
                   std::to_string(i) + R"(","resourceVersion":")" + std::to_string(i + 1) + R"("},"data":")" + filler +
                   "\"}}\n";
      }
      fields.emplace_back("content-type", "application/json");
    } else if (st.path == "/header-bomb") {
      const std::string value(3000, 'b');
      for (std::uint64_t i = 0, n = param("count"); i < n; ++i) fields.emplace_back("x-bomb", value);
      st.text = "ok";
    } else {
      fields[0].second = "404";
      st.text = "no such test endpoint\n";
    }
    if (st.path != "/bytes") fields.emplace_back("content-length", std::to_string(st.text.size()));
    std::vector<nghttp2_nv> nva;
    for (auto& [name, value] : fields) {
      nva.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()), name.size(),
                     value.size(), NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    provider.read_callback = h2_read_body;
    const bool empty = st.path == "/bytes" ? st.size == 0 : st.text.empty();
    nghttp2_submit_response(c.session, id, nva.data(), nva.size(), empty ? nullptr : &provider);
  }

  asio::awaitable<void> serve_h2(Stream& stream) {
    H2Conn c;
    c.impl = this;
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(
        callbacks, [](nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t, void* user) {
          auto& st = static_cast<H2Conn*>(user)->streams[frame->hd.stream_id];
          std::string_view n(reinterpret_cast<const char*>(name), namelen);
          std::string_view v(reinterpret_cast<const char*>(value), valuelen);
          if (n == ":path") {
            auto q = v.find('?');
            st.path = v.substr(0, q);
            st.query = q == std::string_view::npos ? std::string() : std::string(v.substr(q + 1));
          } else if (!n.starts_with(":")) {
            st.headers += std::string(n) + ": " + std::string(v) + "\n";
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        callbacks, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
          // The request is answered once it is complete (these tests send no request bodies).
          if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
              (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
            h2_respond(*static_cast<H2Conn*>(user), frame->hd.stream_id);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                           [](nghttp2_session*, std::int32_t id, uint32_t, void* user) {
                                                             static_cast<H2Conn*>(user)->streams.erase(id);
                                                             return 0;
                                                           });
    // A header list of any size may be sent (the relay's limit is what is tested).
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_max_send_header_block_length(option, 1 << 30);
    nghttp2_session_server_new2(&c.session, callbacks, &c, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
    nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    std::vector<uint8_t> out;
    std::array<uint8_t, 16384> in;
    for (;;) {
      for (;;) {
        const uint8_t* data = nullptr;
        auto n = nghttp2_session_mem_send(c.session, &data);
        if (n < 0) co_return;
        if (n == 0) break;
        out.insert(out.end(), data, data + n);
      }
      if (!out.empty()) {
        auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), use_tuple);
        if (ec) co_return;
        out.clear();
        continue;
      }
      if (!nghttp2_session_want_read(c.session) && !nghttp2_session_want_write(c.session)) break;
      auto [ec, n] = co_await stream.async_read_some(asio::buffer(in), use_tuple);
      if (ec) co_return;
      if (nghttp2_session_mem_recv(c.session, in.data(), n) < 0) co_return;
    }
    co_await stream.async_shutdown(use_tuple);
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
std::uint64_t TestUpstream::body_bytes_written_total() const { return impl_->body_written_total.load(); }
bool TestUpstream::body_complete() const { return impl_->body_complete.load(); }
std::size_t TestUpstream::chunks_written() const { return impl_->chunks_written.load(); }
std::uint64_t TestUpstream::tunnel_bytes_received() const { return impl_->tunnel_received.load(); }
std::uint64_t TestUpstream::connections_accepted() const { return impl_->accepted.load(); }

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
