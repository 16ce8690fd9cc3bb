// The upstream connection of an HTTP/1.1 session: connect, send the request, read the response.
#include "http1_upstream.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>

#include "connection.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/proxy/headers.hpp"
#include "http1_session.hpp"

namespace faultline::proxy {
namespace {

using net::throw_if;
using net::use_tuple;

// Removes hop-by-hop headers and those the Connection header names (drops_field).
template <class Fields>
void strip_hop_by_hop(Fields& fields, bool keep_upgrade) {
  std::vector<std::string> named = connection_tokens(fields[http::field::connection]);
  std::vector<std::string> drop;
  for (const auto& field : fields) {
    if (drops_field(field.name(), field.name_string(), named, keep_upgrade)) drop.emplace_back(field.name_string());
  }
  for (const auto& name : drop) fields.erase(name);
}

bool wants_upgrade(const http::request<http::buffer_body>& req) {
  if (req.count(http::field::upgrade) == 0) return false;
  auto tokens = connection_tokens(req[http::field::connection]);
  return std::find(tokens.begin(), tokens.end(), "upgrade") != tokens.end();
}

}  // namespace

Http1Upstream::Http1Upstream(TlsConnection& conn) : conn_(conn), server_(conn.server()), options_(conn.options()) {}

Http1Upstream::~Http1Upstream() = default;

asio::awaitable<std::optional<std::string>> Http1Upstream::connect() {
  const auto& up = options_.upstream;
  link_ = std::make_unique<Link>(conn_.executor(), server_.upstream_tls, kResponseHeaderLimit + options_.relay_buffer);
  tcp::resolver resolver(conn_.executor());
  // The deadline covers the TCP connect and the TLS handshake together.
  const net::TlsConnectOptions connect{.verify_name = up.endpoint.host,
                                       .verify = !up.tls.insecure_skip_verify,
                                       .timeout = options_.connect_timeout,
                                       .no_delay = true};
  if (auto failure = co_await net::connect_tls(link_->stream, resolver, up.endpoint, connect)) {
    close();
    co_return failure->message();
  }
  co_return std::nullopt;
}

void Http1Upstream::prepare_request(Exchange& ex) {
  auto& req = ex.parser.get();
  const auto& up = options_.upstream;
  strip_hop_by_hop(req.base(), wants_upgrade(req));
  req.set(http::field::host, up.endpoint.to_string());
  if (!up.base_path.empty()) req.target(up.base_path + std::string(req.target()));
  if (up.replace_identity) {
    req.erase(http::field::authorization);
    if (!up.token.empty()) req.set(http::field::authorization, "Bearer " + up.token);
  } else if (up.fallback_token && req.count(http::field::authorization) == 0) {
    req.set(http::field::authorization, "Bearer " + up.fallback_token->current());
  }
  if (ex.expects_continue) req.erase(http::field::expect);
  if (ex.json_upstream && req.count(http::field::accept) > 0) {
    req.set(http::field::accept, accept_json_instead_of_protobuf(req[http::field::accept]));
  }
}

asio::awaitable<bool> Http1Upstream::send_request(Exchange& ex, Http1Client& client) {
  auto& req = ex.parser.get();
  // A request sent again (relay_response) goes as it was prepared and serialized the first time.
  if (!ex.resent) {
    prepare_request(ex);
    // The request line and fields, serialized once (Beast's serializer walked them through layers
    // of buffer sequences on every write); the body keeps the client's framing.
    request_head_.clear();
    request_head_.append(req.method_string()).append(" ", 1).append(req.target());
    request_head_.append(req.version() == 10 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
    for (const auto& field : req.base()) {
      request_head_.append(field.name_string()).append(": ", 2).append(field.value()).append("\r\n", 2);
    }
    request_head_.append("\r\n");
  }
  const bool chunked = ex.parser.chunked();
  const bool has_body = !ex.parser.is_done();
  Http1Framing framing(request_head_, chunked, has_body);
  // A kept-alive upstream connection may have been closed by the apiserver meanwhile: nothing has
  // been sent yet, so one reconnect is safe.
  for (int attempt = 0;; ++attempt) {
    // The client connection was cut (an outage) while this request was on its way: never reconnect.
    if (conn_.is_cut()) throw boost::system::system_error(asio::error::operation_aborted, "connection cut");
    if (!link_) {
      if (auto failure = co_await connect()) {
        ex.upstream_failure = std::move(*failure);
        co_return false;
      }
    }
    if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
    link_->stream.expires_after(options_.io_timeout);
    auto head = framing.next(nullptr, 0, true);
    const bool reused = link_->reused;
    auto [ec, n] = co_await net::write_all(link_->stream, head);
    if (!ec) {
      const auto method = req.method();
      ex.resendable = reused && !ex.resent && !has_body &&
                      (method == http::verb::get || method == http::verb::head || method == http::verb::options ||
                       method == http::verb::trace);
      break;
    }
    bool retry = link_->reused && attempt == 0;
    close();
    if (!retry) throw boost::system::system_error(ec, "sending the request upstream");
    framing = Http1Framing(request_head_, chunked, has_body);
  }
  // The proxy answers "Expect: 100-continue" itself (it is hop-by-hop in practice), once upstream
  // is reachable: the client sends the body at once, and upstream never sends an interim response.
  if (ex.expects_continue) {
    http::response<http::empty_body> go_on{http::status::continue_, 11};
    client.stream.expires_after(options_.io_timeout);
    co_await http::async_write(client.stream, go_on, asio::use_awaitable);
  }
  link_->reused = true;
  if (framing.done()) co_return true;
  auto& body = req.body();
  if (!ex.parser.is_done()) client.reserve_reads();
  while (!framing.done()) {
    std::size_t size = 0;
    auto& chunk = client.up_chunk();
    if (!ex.parser.is_done()) {
      body.data = chunk.data();
      body.size = chunk.size();
      client.stream.expires_after(options_.io_timeout);
      auto [ec, n] = co_await http::async_read_some(client.stream, client.buffer, ex.parser, use_tuple);
      if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "reading the request body");
      size = chunk.size() - body.size;
      ex.record.bytes_in += size;
      if (size == 0 && !ex.parser.is_done()) continue;
    }
    auto buffers = framing.next(chunk.data(), size, !ex.parser.is_done());
    if (buffers.empty()) continue;
    if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
    link_->stream.expires_after(options_.io_timeout);
    auto [ec, n] = co_await net::write_all(link_->stream, buffers);
    if (ec) throw boost::system::system_error(ec, "sending the request body upstream");
  }
  co_return true;
}

asio::awaitable<boost::system::error_code> Http1Upstream::read_header(ResponseParser& parser, const Exchange& ex) {
  parser.body_limit(boost::none);
  parser.header_limit(kResponseHeaderLimit);
  if (ex.parser.get().method() == http::verb::head) parser.skip(true);
  auto& stream = link_->stream;
  if (ex.request.info.is_watch()) stream.expires_never();
  else stream.expires_after(options_.io_timeout);
  // Not a coroutine itself: the read is the only frame.
  return proxy::read_header(stream, link_->buffer, parser, options_.relay_buffer);
}

asio::awaitable<Http1Upstream::Parsed> Http1Upstream::parse_body_piece(ResponseParser& parser) {
  auto& buffer = link_->buffer;
  for (;;) {
    if (buffer.size() > 0) {
      boost::system::error_code ec;
      std::size_t used = parser.put(buffer.data(), ec);
      if (ec != http::error::need_more) co_return Parsed{ec, used};
      buffer.consume(used);  // need_more: no piece came out of it
    }
    // As Beast's read_some: at least 512 bytes of room, at most the relay buffer size per read.
    // The buffer is bounded: a chunk-size line or a trailer section that does not end within it
    // is an error, not a reason to keep reading (Beast puts no limit on either).
    const std::size_t room = beast::read_size(buffer, options_.relay_buffer);
    if (room == 0) co_return Parsed{http::error::buffer_overflow, 0};
    auto space = buffer.prepare(room);
    auto [ec, n] = co_await link_->stream.async_read_some(space, use_tuple);
    buffer.commit(n);
    if (ec == asio::error::eof) {
      // A body that ends with the connection ends here; any other one is cut short.
      boost::system::error_code eof_ec;
      parser.put_eof(eof_ec);
      co_return Parsed{eof_ec, 0};
    }
    if (ec) co_return Parsed{ec, 0};
  }
}

asio::awaitable<void> Http1Upstream::discard_response(ResponseParser& parser, Exchange& ex) {
  parser.body_limit(boost::none);
  parser.header_limit(kResponseHeaderLimit);
  reserve_reads();
  auto& up_tcp = link_->stream;
  up_tcp.expires_after(options_.io_timeout);
  auto sent = std::chrono::steady_clock::now();
  auto ec = co_await proxy::read_header(link_->stream, link_->buffer, parser, options_.relay_buffer);
  throw_if(ec, "reading the upstream response header");
  ex.upstream_latency = std::chrono::steady_clock::now() - sent;
  ex.record.upstream_status = parser.status();
  if (!parser.is_done()) {
    auto [rec, rn] = co_await http::async_read(link_->stream, link_->buffer, parser, use_tuple);
    throw_if(rec, "reading the upstream body");
  }
  if (!parser.keep_alive()) close();
}

void Http1Upstream::reserve_reads() {
  if (link_ && link_->buffer.capacity() < options_.relay_buffer) link_->buffer.reserve(options_.relay_buffer);
}

void Http1Upstream::release_idle_buffers() {
  // The serialized header is reused from request to request, but one made large by a long header
  // (a request's may reach --max-header-bytes) is not kept by an idle connection.
  constexpr std::size_t kKeptHead = 4096;
  if (request_head_.capacity() > kKeptHead) std::string().swap(request_head_);
  if (link_ && link_->buffer.size() == 0) link_->buffer.shrink_to_fit();
}

void Http1Upstream::cut() {
  if (!link_) return;
  boost::system::error_code ec;
  link_->stream.socket().close(ec);
}

void Http1Upstream::close() {
  if (!link_) return;
  boost::system::error_code ec;
  link_->stream.socket().close(ec);
  link_.reset();
}

}  // namespace faultline::proxy
