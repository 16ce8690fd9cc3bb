// Forwarding: the request goes upstream with its body streamed, the response comes back streamed
// piece by piece (watch events as they arrive), upgrades (101) become a raw byte tunnel.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <charconv>

#include <linux/sockios.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>

#include "connection.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/proxy/headers.hpp"
#include "faultline/proxy/watch_stream.hpp"
#include "session.hpp"

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

// Largest upstream response header. kube-apiserver's are a few hundred bytes; its Warning headers,
// the only ones that grow, are capped at 4 KiB in total.
constexpr std::uint32_t kResponseHeaderLimit = 16 * 1024;
// Interim (1xx) responses accepted before the final one; servers send one or two (100, 103).
constexpr int kMaxInterimResponses = 100;

// A read of the response header failed because what upstream sent is not a valid HTTP response
// (rather than the connection failing or the proxy cutting it).
bool is_invalid_response(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream;
}

// How a connection the upstream closed before answering ends the read of a response header: a
// clean end, an end without TLS close_notify, or a reset.
bool closed_before_answering(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated ||
         ec == asio::error::connection_reset;
}

}  // namespace

void ResponseParser::on_response_impl(int code, beast::string_view reason, int, boost::system::error_code&) {
  status_ = code;
  // Always HTTP/1.1 towards the client, whatever the upstream spoke; a missing reason phrase
  // gets the usual one, as Beast's serializer did.
  if (reason.empty()) reason = http::obsolete_reason(static_cast<http::status>(code));
  char digits[4];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, code);
  head_.append("HTTP/1.1 ", 9)
      .append(digits, end)
      .append(" ", 1)
      .append(reason.data(), reason.size())
      .append("\r\n", 2);
}

void ResponseParser::on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                                   boost::system::error_code&) {
  if (name == http::field::connection) {
    if (!connection_.empty()) connection_ += ',';
    connection_.append(value.data(), value.size());
  } else if (name == http::field::content_type) {
    content_type_.assign(value.data(), value.size());
  } else if (name == http::field::content_length) {
    // Repeated ones are identical (the parser refuses differing ones): forwarded once.
    if (content_length_seen_) return;
    content_length_seen_ = true;
  }
  // Named by Connection or not, an upgrade keeps its Connection and Upgrade; every other
  // hop-by-hop field is dropped here, the ones Connection names once the header is complete.
  if (drops_field(name, upgrade())) return;
  // The views point into the parsed buffer: a field written "Name: value" is copied as it is, in
  // one piece (a folded value was assembled elsewhere by the parser, and other spacing is redone).
  const char* end = value.data() + value.size();
  if (value.data() == name_string.data() + name_string.size() + 2 && name_string.data()[name_string.size()] == ':' &&
      name_string.data()[name_string.size() + 1] == ' ') {
    head_.append(name_string.data(), static_cast<std::size_t>(end - name_string.data())).append("\r\n", 2);
    return;
  }
  head_.append(name_string.data(), name_string.size())
      .append(": ", 2)
      .append(value.data(), value.size())
      .append("\r\n", 2);
}

void ResponseParser::on_header_impl(boost::system::error_code&) {
  std::vector<std::string> named = connection_tokens(connection_);
  // "keep-alive" (nginx sends it on every response) names a field dropped already.
  std::erase_if(named, [](const std::string& token) { return is_hop_by_hop(token); });
  if (named.empty()) return;
  // Rare (kube-apiserver names no fields in Connection): the fields it names leave the header.
  std::string_view all = head_;
  std::size_t status_line = all.find("\r\n") + 2;
  std::string kept(all.substr(0, status_line));
  for (std::size_t at = status_line; at < all.size();) {
    std::size_t eol = all.find("\r\n", at);
    std::string_view line = all.substr(at, eol - at);
    std::string_view field_name = line.substr(0, line.find(':'));
    if (!drops_field(http::string_to_field(field_name), field_name, named, upgrade())) kept.append(line).append("\r\n");
    at = eol + 2;
  }
  head_ = std::move(kept);
}

std::string_view ResponseParser::finish_head(bool keep_alive) {
  if (!keep_alive && !upgrade()) head_ += "Connection: close\r\n";
  head_ += "\r\n";
  return head_;
}

std::span<const asio::const_buffer> Http1Framing::next(const char* data, std::size_t size, bool more) {
  std::size_t n = 0;
  if (!head_.empty()) buffers_[n++] = asio::buffer(head_.data(), head_.size());
  head_ = {};
  if (done_) return {buffers_.data(), n};
  if (chunked_ && size > 0) {
    char* end = std::to_chars(size_line_, size_line_ + 16, size, 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    buffers_[n++] = asio::buffer(size_line_, static_cast<std::size_t>(end - size_line_));
  }
  if (size > 0) buffers_[n++] = asio::buffer(data, size);
  if (chunked_ && size > 0) buffers_[n++] = asio::buffer("\r\n", 2);
  if (!more) {
    if (chunked_) buffers_[n++] = asio::buffer("0\r\n\r\n", 5);
    done_ = true;
  }
  return {buffers_.data(), n};
}

// Opens the upstream connection. Returns what failed (resolving, connecting, the TLS handshake),
// or nothing when the connection is up; the caller answers the client in the apiserver's place.
asio::awaitable<std::optional<std::string>> Http1Session::connect_upstream() {
  const auto& up = options_.upstream;
  upstream_ =
      std::make_unique<Http1Upstream>(executor_, server_->upstream_tls, kResponseHeaderLimit + options_.relay_buffer);
  tcp::resolver resolver(executor_);
  // The deadline covers the TCP connect and the TLS handshake together.
  const net::TlsConnectOptions connect{.verify_name = up.endpoint.host,
                                       .verify = !up.tls.insecure_skip_verify,
                                       .timeout = options_.connect_timeout,
                                       .no_delay = true};
  if (auto failure = co_await net::connect_tls(upstream_->stream, resolver, up.endpoint, connect)) {
    close_upstream();
    co_return failure->message();
  }
  co_return std::nullopt;
}

void Http1Session::prepare_upstream_request(Exchange& ex) {
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

asio::awaitable<bool> Http1Session::send_request(Exchange& ex) {
  auto& req = ex.parser.get();
  // A request sent again (relay_response) goes as it was prepared and serialized the first time.
  if (!ex.resent) {
    prepare_upstream_request(ex);
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
    if (!upstream_) {
      if (auto failure = co_await connect_upstream()) {
        ex.upstream_failure = std::move(*failure);
        co_return false;
      }
    }
    if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
    upstream_->stream.expires_after(options_.io_timeout);
    auto head = framing.next(nullptr, 0, true);
    const bool reused = upstream_->reused;
    auto [ec, n] = co_await net::write_all(upstream_->stream, head);
    if (!ec) {
      const auto method = req.method();
      ex.resendable = reused && !ex.resent && !has_body &&
                      (method == http::verb::get || method == http::verb::head || method == http::verb::options ||
                       method == http::verb::trace);
      break;
    }
    bool retry = upstream_->reused && attempt == 0;
    close_upstream();
    if (!retry) throw boost::system::system_error(ec, "sending the request upstream");
    framing = Http1Framing(request_head_, chunked, has_body);
  }
  // The proxy answers "Expect: 100-continue" itself (it is hop-by-hop in practice), once upstream
  // is reachable: the client sends the body at once, and upstream never sends an interim response.
  if (ex.expects_continue) {
    http::response<http::empty_body> go_on{http::status::continue_, 11};
    client_.expires_after(options_.io_timeout);
    co_await http::async_write(client_, go_on, asio::use_awaitable);
  }
  upstream_->reused = true;
  if (framing.done()) co_return true;
  auto& body = req.body();
  if (!ex.parser.is_done()) reserve_client_reads();
  while (!framing.done()) {
    std::size_t size = 0;
    auto& chunk = up_chunk();
    if (!ex.parser.is_done()) {
      body.data = chunk.data();
      body.size = chunk.size();
      client_.expires_after(options_.io_timeout);
      auto [ec, n] = co_await http::async_read_some(client_, client_buffer_, ex.parser, use_tuple);
      if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "reading the request body");
      size = chunk.size() - body.size;
      ex.record.bytes_in += size;
      if (size == 0 && !ex.parser.is_done()) continue;
    }
    auto buffers = framing.next(chunk.data(), size, !ex.parser.is_done());
    if (buffers.empty()) continue;
    if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
    upstream_->stream.expires_after(options_.io_timeout);
    auto [ec, n] = co_await net::write_all(upstream_->stream, buffers);
    if (ec) throw boost::system::system_error(ec, "sending the request body upstream");
  }
  co_return true;
}

asio::awaitable<bool> Http1Session::relay_response(Exchange& ex) {
  auto sent = std::chrono::steady_clock::now();
  reserve_upstream_reads();
  std::optional<ResponseParser> final_response;
  for (int interim = 0;; ++interim) {
    // Interim responses (100, 103) are read and dropped: the client does not need them, the final
    // one follows. Each needs a parser of its own.
    final_response.emplace(response_head_);
    auto& parser = *final_response;
    parser.body_limit(boost::none);
    parser.header_limit(kResponseHeaderLimit);
    if (ex.parser.get().method() == http::verb::head) parser.skip(true);
    auto& up_tcp = upstream_->stream;
    if (ex.request.info.is_watch()) up_tcp.expires_never();
    else up_tcp.expires_after(options_.io_timeout);
    auto ec = co_await read_header(upstream_->stream, upstream_->buffer, parser, options_.relay_buffer);
    if (ec && interim == 0 && ex.resendable && !parser.got_some() && closed_before_answering(ec)) {
      // The apiserver closed the kept-alive connection (its idle timeout, a restart) before it
      // read the request. Without the proxy the client's own connection would have been the
      // closed one, and Go's http.Transport would have sent the request again: so does the proxy,
      // once, on a new connection, and the client never sees it.
      spdlog::debug("conn {}: upstream closed a kept-alive connection before answering ({}); sending {} {} again", id_,
                    ec.message(), ex.request.method, path_only(ex.request.target));
      close_upstream();
      ex.resendable = false;
      ex.resent = true;
      if (!co_await send_request(ex)) {
        co_await answer_upstream_unreachable(ex);
        co_return true;
      }
      reserve_upstream_reads();
      sent = std::chrono::steady_clock::now();
      interim = -1;  // the new connection's first response
      continue;
    }
    if (is_invalid_response(ec)) {
      // (A named string: GCC destroys temporaries of a conditional expression in a co_await twice.)
      std::string why = ec.message();
      if (ec == http::error::header_limit) {
        why = "response header larger than " + std::to_string(kResponseHeaderLimit) + " bytes";
      }
      co_await answer_bad_gateway(ex, why);
      co_return true;
    }
    throw_if(ec, "reading the upstream response header");
    bool is_interim = parser.status() / 100 == 1 && !parser.upgrade();
    if (!is_interim) break;
    if (interim + 1 >= kMaxInterimResponses) {
      std::string why = "more than " + std::to_string(kMaxInterimResponses) + " interim responses";
      co_await answer_bad_gateway(ex, why);
      co_return true;
    }
  }
  auto& parser = *final_response;
  ex.upstream_latency = std::chrono::steady_clock::now() - sent;
  ex.record.upstream_status = parser.status();
  bool upstream_keep_alive = parser.keep_alive();
  bool upgrade = parser.upgrade();
  // A body that ends when upstream closes (no length, not chunked) also ends the client connection:
  // the client has no other way to see where it ends.
  bool until_eof = !upgrade && !parser.is_done() && parser.need_eof();
  if (until_eof) ex.client_keep_alive = false;

  WatchFilter* filter = ex.watch_filter.get();
  if (filter && ex.json_upstream && (!parser.chunked() || !is_json_content_type(parser.content_type()))) {
    spdlog::error("conn {}: rule '{}' ({}) cannot act: the watch response is not chunked JSON (Content-Type '{}')", id_,
                  ex.plan.rule, ex.record.action.value_or(""), parser.content_type());
    filter = nullptr;
  }
  bool keep_going = co_await stream_body(parser, ex, filter);
  if (upgrade) {
    co_await tunnel();
    co_return false;
  }
  if (upstream_ && !upstream_keep_alive) close_upstream();
  co_return keep_going;
}

// Writes the response header and then the body as it arrives. With a watch filter, the body is cut
// into events and the filter decides what the client gets. Returns false when the client
// connection must not carry another request.
asio::awaitable<bool> Http1Session::stream_body(ResponseParser& parser, Exchange& ex, WatchFilter* filter) {
  const int status = parser.status();
  const bool upgrade = parser.upgrade();
  // The body is framed as the upstream's was: chunked stays chunked (re-chunked piece by piece),
  // a length stays that length; a 101, a HEAD answer, 204 and 304 have none.
  const bool has_body = !upgrade && !parser.is_done();
  const bool keep_alive = ex.client_keep_alive && !conn_.draining();
  Http1Framing framing(parser.finish_head(keep_alive), parser.chunked(), has_body);
  bool streaming = ex.request.info.is_watch();
  // When the first body bytes came in together with the header (a small GET, the start of a
  // LIST), header and body leave in one write: one TLS record and one send instead of two. A watch,
  // an upgrade, or a body that is not here yet gets its header at once.
  bool header_with_body = !streaming && !filter && has_body && upstream_->buffer.size() > 0;
  if (!header_with_body) co_await write_body_piece(framing, status, nullptr, 0, true, ex);
  if (upgrade) co_return false;

  if (streaming) {
    state_ = State::streaming;
    if (server_->observer) server_->observer->watch_opened();
  }
  struct WatchGuard {
    Http1Session* s;
    bool on;
    ~WatchGuard() {
      if (on && s->server_->observer) s->server_->observer->watch_closed();
    }
  } guard{this, streaming};

  auto& up_tcp = upstream_->stream;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (filter && filter->deadline()) deadline = std::chrono::steady_clock::now() + *filter->deadline();
  JsonFrameSplitter splitter;
  WatchFilter::End end = WatchFilter::End::none;
  std::string out;
  auto apply = [&](WatchFilter::Step step) {
    for (auto& event : step.emit) out += event;
    end = step.end;
  };
  if (filter && ex.json_upstream) apply(filter->on_start());

  parser.eager(false);  // one piece per put: each is written before the buffer is read into again
  while (end == WatchFilter::End::none && !parser.is_done()) {
    if (deadline) up_tcp.expires_at(*deadline);
    else if (streaming) up_tcp.expires_never();
    else up_tcp.expires_after(options_.io_timeout);
    auto [ec, used] = co_await parse_body_piece(parser);
    if (ec == beast::error::timeout && deadline) {
      filter->acted_by_deadline();
      end = filter->at_deadline();
      break;
    }
    if (ec) throw boost::system::system_error(ec, "reading the upstream body");
    // Without a filter the bytes go out from where they were read.
    std::string_view piece = parser.take_body();
    if (filter && ex.json_upstream) {
      for (auto& event : splitter.feed(piece)) {
        if (end == WatchFilter::End::none) apply(filter->on_event(event));
      }
      piece = out;
    }
    if (!piece.empty() || (parser.is_done() && end == WatchFilter::End::none)) {
      bool more = !parser.is_done() && end == WatchFilter::End::none;
      co_await write_body_piece(framing, status, piece.data(), piece.size(), more || end != WatchFilter::End::none, ex);
      out.clear();
    }
    upstream_->buffer.consume(used);
  }
  if (end == WatchFilter::End::reset) {
    if (!out.empty()) co_await write_body_piece(framing, status, out.data(), out.size(), true, ex);
    co_await wait_for_send_queue();  // a RST discards unsent data: let the last events leave first
    conn_.cut_now(Cut::reset);
    co_return false;
  }
  if (!framing.done()) co_await write_body_piece(framing, status, out.data(), out.size(), false, ex);
  if (!parser.is_done()) close_upstream();  // the upstream response was abandoned mid-stream
  state_ = State::busy;
  co_return true;
}

asio::awaitable<Http1Session::Parsed> Http1Session::parse_body_piece(ResponseParser& parser) {
  auto& buffer = upstream_->buffer;
  for (;;) {
    if (buffer.size() > 0) {
      boost::system::error_code ec;
      std::size_t used = parser.put(buffer.data(), ec);
      if (ec != http::error::need_more) co_return Parsed{ec, used};
      buffer.consume(used);  // need_more: no piece came out of it
    }
    // As Beast's read_some: at least 512 bytes of room, at most the relay buffer size per read.
    // The buffer is bounded (Http1Upstream::buffer): a chunk-size line or a trailer section that does
    // not end within it is an error, not a reason to keep reading (Beast puts no limit on either).
    const std::size_t room = beast::read_size(buffer, options_.relay_buffer);
    if (room == 0) co_return Parsed{http::error::buffer_overflow, 0};
    auto space = buffer.prepare(room);
    auto [ec, n] = co_await upstream_->stream.async_read_some(space, use_tuple);
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

asio::awaitable<void> Http1Session::write_body_piece(Http1Framing& framing, int status, const char* data,
                                                     std::size_t size, bool more, Exchange& ex) {
  auto buffers = framing.next(data, size, more);
  if (buffers.empty()) co_return;
  if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
  client_.expires_after(options_.io_timeout);
  auto [ec, n] = co_await net::write_all(client_, buffers);
  if (ec) throw boost::system::system_error(ec, "writing the response");
  ex.record.status = status;  // the header went out (with the first piece, or before it)
  ex.record.bytes_out += size;
}

asio::awaitable<void> Http1Session::discard_response(ResponseParser& parser, Exchange& ex) {
  parser.body_limit(boost::none);
  parser.header_limit(kResponseHeaderLimit);
  reserve_upstream_reads();
  auto& up_tcp = upstream_->stream;
  up_tcp.expires_after(options_.io_timeout);
  auto sent = std::chrono::steady_clock::now();
  auto ec = co_await read_header(upstream_->stream, upstream_->buffer, parser, options_.relay_buffer);
  throw_if(ec, "reading the upstream response header");
  ex.upstream_latency = std::chrono::steady_clock::now() - sent;
  ex.record.upstream_status = parser.status();
  if (!parser.is_done()) {
    auto [rec, rn] = co_await http::async_read(upstream_->stream, upstream_->buffer, parser, use_tuple);
    throw_if(rec, "reading the upstream body");
  }
  if (!parser.keep_alive()) close_upstream();
}

asio::awaitable<void> Http1Session::wait_for_send_queue() {
  int fd = conn_.socket().native_handle();
  for (int i = 0; i < 100; ++i) {
    int unsent = 0;
    if (::ioctl(fd, SIOCOUTQ, &unsent) != 0 || unsent == 0) break;
    co_await conn_.sleep(std::chrono::milliseconds(5));
  }
}

// After a 101: bytes flow both ways untouched until either side closes; then both are closed.
asio::awaitable<void> Http1Session::tunnel() {
  state_ = State::streaming;
  client_.expires_never();
  upstream_->stream.expires_never();
  asio::co_spawn(executor_, pump(conn_.shared_from_this(), this, true), asio::detached);
  co_await pump(conn_.shared_from_this(), this, false);
}

asio::awaitable<void> Http1Session::pump(std::shared_ptr<TlsConnection>, Http1Session* self, bool client_to_upstream) {
  // Bytes already read past the HTTP header belong to the tunnel.
  beast::flat_buffer& leftover = client_to_upstream ? self->client_buffer_ : self->upstream_->buffer;
  RelayBuffer& chunk = client_to_upstream ? self->up_chunk() : self->down_chunk();
  auto write_to = [&](auto buffers) -> asio::awaitable<boost::system::error_code> {
    if (self->conn_.blackholed()) co_await self->conn_.hold_while_blackholed();
    if (self->conn_.is_cut() || !self->upstream_) co_return asio::error::operation_aborted;
    auto& to = client_to_upstream ? self->upstream_->stream : self->client_;
    auto [ec, n] = co_await net::write_all(to, buffers);
    co_return ec;
  };
  if (leftover.size() > 0) {
    auto ec = co_await write_to(leftover.data());
    leftover.consume(leftover.size());
    if (ec) {
      self->conn_.cut_now(Cut::close);
      co_return;
    }
  }
  for (;;) {
    if (self->conn_.is_cut() || !self->upstream_) break;
    auto [ec, n] = client_to_upstream
                       ? co_await self->client_.async_read_some(asio::buffer(chunk), use_tuple)
                       : co_await self->upstream_->stream.async_read_some(asio::buffer(chunk), use_tuple);
    if (ec) break;
    if (co_await write_to(asio::buffer(chunk.data(), n))) break;
  }
  self->conn_.cut_now(Cut::close);
}

}  // namespace faultline::proxy
