// The request loop of one client connection and the primitive steps fault actions are made of:
// answer locally, wait, hang, cut (RST or FIN).
#include "session.hpp"

#include "faultline/net/error_text.hpp"
#include "faultline/net/tls.hpp"
#include "h2_session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "faultline/net/async.hpp"

namespace faultline::proxy {
namespace {

using net::use_tuple;

std::string endpoint_text(const tcp::socket& socket) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  auto address = ep.address().to_string();
  return (ep.address().is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(ep.port());
}

}  // namespace

Session::Session(std::shared_ptr<Server::Impl> server, tcp::socket socket, std::uint64_t id)
    : server_(std::move(server)),
      options_(server_->options),
      id_(id),
      peer_(endpoint_text(socket)),
      executor_(socket.get_executor()),
      plain_(std::move(socket)),
      // Room for the largest request header plus one relay buffer. Beast bounds a request header
      // (header_limit) but not a chunk-size line or a trailer section: without this bound, a client
      // sending one endless chunk line grew the buffer by every byte of it.
      client_buffer_(options_.header_limit + options_.relay_buffer) {}

Session::~Session() { server_->forget(this); }

void Session::start() { asio::co_spawn(executor_, run(shared_from_this()), asio::detached); }

asio::awaitable<void> Session::run(std::shared_ptr<Session> self) {
  if (self->server_->observer) self->server_->observer->connection_opened();
  try {
    co_await self->serve();
  } catch (const boost::system::system_error& e) {
    // A peer going away mid-exchange is routine (debug); a limit reached is not.
    if (e.code() == http::error::buffer_overflow) {
      spdlog::warn(
          "conn {} ({}): {}: a chunk-size line or trailer section did not end within the "
          "connection's read buffer; connection closed",
          self->id_, self->peer_, net::error_text(e));
    } else {
      spdlog::debug("conn {} ({}): {}", self->id_, self->peer_, net::error_text(e));
    }
  } catch (const std::exception& e) {
    spdlog::debug("conn {} ({}): {}", self->id_, self->peer_, net::error_text(e));
  }
  self->close_upstream();
  boost::system::error_code ec;
  self->client_socket().close(ec);
  if (self->server_->observer) self->server_->observer->connection_closed();
}

asio::awaitable<void> Session::serve() {
  if (!co_await wait_for_client_hello()) co_return;
  client_.emplace(std::move(*plain_), server_->server_tls);
  plain_.reset();
  client_->expires_after(options_.handshake_timeout);
  auto [ec] = co_await client_->async_handshake(asio::ssl::stream_base::server, use_tuple);
  if (ec) {
    spdlog::debug("conn {} ({}): TLS handshake failed: {}", id_, peer_, ec.message());
    co_return;
  }
  if (options_.http2 && net::alpn_selected(client_->native_handle()) == "h2") {
    state_ = State::streaming;
    h2_ = std::make_shared<H2Connection>(shared_from_this());
    co_await H2Connection::run(h2_);
    h2_.reset();  // it holds this session
    if (!cut_) co_await close_gracefully();
    co_return;
  }
  bool first = true;
  while (!cut_ && co_await wait_for_request(first)) {
    first = false;
    if (!co_await serve_request()) break;
    if (draining_) break;
  }
  if (!cut_) co_await close_gracefully();
}

// Waits (within the handshake timeout) until the client has sent something, without reading it:
// a connection that never starts its handshake costs no TLS state.
asio::awaitable<bool> Session::wait_for_client_hello() {
  using namespace asio::experimental::awaitable_operators;
  char byte = 0;
  asio::steady_timer timer(executor_, options_.handshake_timeout);
  auto first = co_await (plain_->async_receive(asio::buffer(&byte, 1), tcp::socket::message_peek, use_tuple) ||
                         timer.async_wait(use_tuple));
  if (first.index() != 0) co_return false;  // the handshake timeout passed
  auto [ec, n] = std::get<0>(first);
  co_return !ec && n > 0 && !cut_;
}

// Waits for the first byte of the next request: the idle (keep-alive) timeout applies here, the
// header timeout only once a request has started.
asio::awaitable<bool> Session::wait_for_request(bool first) {
  state_ = State::idle;
  if (draining_) co_return false;
  release_idle_buffers();
  if (client_buffer_.size() == 0) {
    client_->expires_after(first ? options_.header_timeout : options_.idle_timeout);
    auto [ec, n] = co_await client_->async_read_some(client_buffer_.prepare(4096), use_tuple);
    if (ec) co_return false;
    client_buffer_.commit(n);
  }
  state_ = State::busy;
  co_return !cut_;
}

asio::awaitable<bool> Session::serve_request() {
  Exchange ex;
  ex.parser.header_limit(static_cast<std::uint32_t>(options_.header_limit));
  ex.parser.body_limit(boost::none);
  client_->expires_after(options_.header_timeout);
  auto ec = co_await read_header(*client_, client_buffer_, ex.parser, options_.relay_buffer);
  if (ec == http::error::header_limit) {
    co_await write_simple_error(431, "request header too large");
    co_return false;
  }
  if (ec) {
    if (ec != beast::error::timeout && ec != http::error::end_of_stream && ec != asio::error::operation_aborted) {
      co_await write_simple_error(400, "malformed HTTP request");
    }
    co_return false;
  }
  auto& req = ex.parser.get();
  // A Transfer-Encoding whose last coding is not chunked leaves the body's length unknown: the
  // request cannot be framed, so it is refused and the connection closed (RFC 9112 section 6.3).
  if (req.count(http::field::transfer_encoding) > 0 && !ex.parser.chunked()) {
    co_await write_simple_error(400, "Transfer-Encoding must end with chunked");
    co_return false;
  }
  single_content_length(ex.parser);
  ex.client_keep_alive = req.keep_alive();
  ex.expects_continue = beast::iequals(req[http::field::expect], "100-continue");
  if (server_->memory_over.load(std::memory_order_relaxed)) {
    // Past --max-memory: no new work; the connection closes after the answer (its buffers go).
    server_->refused(Server::Impl::Refusal::max_memory);
    ex.client_keep_alive = false;
    co_await write_local_response(ex, memory_refused_response(options_, server_->memory_bytes.load()));
    co_return false;
  }
  std::vector<faults::Header> headers;
  for (const auto& field : req.base()) add_matchable_header(headers, field.name_string(), field.value());
  begin_exchange(*server_, ex, id_, peer_, "h1", req.method_string(), req.target(), std::move(headers));
  bool keep_going = false;
  try {
    keep_going = co_await carry_out(ex);
  } catch (...) {
    finish(ex);
    throw;
  }
  finish(ex);
  co_return (keep_going && ex.client_keep_alive);
}

asio::awaitable<bool> Session::carry_out(Exchange& ex) {
  // A client waiting for "100 Continue" sends no body unless forwarded: do not wait for it.
  if (ex.expects_continue && !forwards(ex.effects)) ex.client_keep_alive = false;
  for (auto& effect : ex.effects) {
    const Next next = co_await std::visit([this, &ex](auto& e) { return apply(ex, e); }, effect);
    if (next) co_return *next;
  }
  if (ex.forwarded) {
    cut_now(Cut::close);  // the answer was lost and no effect said what then
    co_return false;
  }
  if (!co_await send_request(ex)) {
    co_await answer_upstream_unreachable(ex);
    co_return true;
  }
  co_return co_await relay_response(ex);
}

// The effects over HTTP/1.1, one request at a time: what holds the request holds the connection.
// A request not forwarded has its body read and dropped before the connection is held or closed
// (unless its client waits for "100 Continue": then it sends none).

asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::Answer& e) {
  if (!ex.expects_continue) co_await discard_request_body(ex);
  co_await write_local_response(ex, e.response);
  co_return true;
}

asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::CutOff& e) {
  if (e.how == Cut::close && !ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  cut_now(e.how == Cut::none ? Cut::close : e.how);
  co_return false;
}

asio::awaitable<Session::Next> Session::apply(Exchange&, effect::Wait& e) {
  if (e.duration.count() > 0) co_await sleep(e.duration);
  co_return std::nullopt;
}

asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::Hold& e) {
  if (!ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  co_await hang(e.limit);
  co_return false;
}

asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::DiscardResponse&) {
  if (!co_await send_request(ex)) {
    co_await answer_upstream_unreachable(ex);
    co_return true;
  }
  ResponseParser parser(response_head_);
  co_await discard_response(parser, ex);
  ex.forwarded = true;
  co_return std::nullopt;
}

asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::FilterWatch& e) {
  ex.watch_filter = std::move(e.filter);
  ex.json_upstream = e.json_upstream;
  co_return std::nullopt;
}

asio::awaitable<Session::Next> Session::apply(Exchange&, effect::EnforceOutage&) {
  server_->enforce_outage();
  co_return std::nullopt;
}

// Graceful: the answer carries Connection: close. Abrupt: a close, this request unanswered.
asio::awaitable<Session::Next> Session::apply(Exchange& ex, effect::EndConnection& e) {
  if (e.graceful) {
    ex.client_keep_alive = false;
    co_return std::nullopt;
  }
  if (!ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  cut_now(Cut::close);
  co_return false;
}

// One request at a time: while this one waits, the connection sends and reads nothing.
asio::awaitable<Session::Next> Session::apply(Exchange&, effect::StallConnection& e) {
  co_await sleep(e.duration);
  co_return std::nullopt;
}

asio::awaitable<void> Session::write_local_response(Exchange& ex, const faults::HttpResponse& requested) {
  const faults::HttpResponse response = final_local_response(ex, requested, id_);
  http::response<http::string_body> res{static_cast<http::status>(response.code), 11};
  for (const auto& header : response.headers) res.set(header.name, header.value);
  res.keep_alive(ex.client_keep_alive && !draining_);
  // 204 and 304 never have a body (nor a length); the answer to HEAD has the length of the body
  // a GET would get, without the body.
  bool bodiless_status = response.code == 204 || response.code == 304;
  bool head = ex.parser.get().method() == http::verb::head;
  if (bodiless_status) {
    res.erase(http::field::content_length);
  } else {
    res.content_length(response.body.size());
    if (!head) res.body() = response.body;
  }
  client_->expires_after(options_.io_timeout);
  co_await http::async_write(*client_, res, asio::use_awaitable);
  ex.record.status = response.code;
  ex.record.bytes_out += res.body().size();
}

asio::awaitable<void> Session::write_simple_error(int code, const char* message) {
  http::response<http::string_body> res{static_cast<http::status>(code), 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::string(message) + "\n";
  res.keep_alive(false);
  res.prepare_payload();
  client_->expires_after(options_.io_timeout);
  co_await http::async_write(*client_, res, use_tuple);
}

// Reads and drops the rest of the request body, so the connection can carry the next request
// (or be closed without a RST caused by unread data).
asio::awaitable<void> Session::discard_request_body(Exchange& ex) {
  auto& body = ex.parser.get().body();
  if (ex.parser.is_done()) co_return;
  auto& chunk = up_chunk();
  reserve_client_reads();
  while (!ex.parser.is_done()) {
    body.data = chunk.data();
    body.size = chunk.size();
    client_->expires_after(options_.io_timeout);
    auto [ec, n] = co_await http::async_read(*client_, client_buffer_, ex.parser, use_tuple);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    ex.record.bytes_in += chunk.size() - body.size;
  }
}

// Upstream could not be reached (DNS, connect, TLS handshake): the client gets what an apiserver
// behind a load balancer would answer, a 503 with a Kubernetes Status, instead of a dropped
// connection. The message names the upstream and the failed step; no credentials are involved.
asio::awaitable<void> Session::answer_upstream_unreachable(Exchange& ex) {
  spdlog::warn("conn {}: upstream {} unreachable ({}); answering 503 to {} {}", id_,
               options_.upstream.endpoint.to_string(), ex.upstream_failure, ex.request.method,
               path_only(ex.request.target));
  if (ex.expects_continue) ex.client_keep_alive = false;  // its body was never asked for
  else co_await discard_request_body(ex);
  const faults::HttpResponse answer = upstream_unreachable_response(options_, ex.upstream_failure);
  co_await write_local_response(ex, answer);
}

// Upstream answered with something that is not a valid HTTP response (a bad status line, an
// oversized header, conflicting framing, endless interim responses), and nothing of it reached
// the client yet: the client gets a 502 with a Kubernetes Status, as from a gateway, instead of a
// dropped connection. The upstream connection is in an unknown state and is closed; the client's
// request was read completely, so its connection can carry the next request.
asio::awaitable<void> Session::answer_bad_gateway(Exchange& ex, const std::string& why) {
  close_upstream();
  spdlog::warn("conn {}: upstream {} sent an invalid response ({}); answering 502 to {} {}", id_,
               options_.upstream.endpoint.to_string(), why, ex.request.method, path_only(ex.request.target));
  const faults::HttpResponse answer = bad_gateway_response(options_, why);
  co_await write_local_response(ex, answer);
}

bool Session::blackholed() const {
  if (cut_) return false;
  auto outage = server_->engine.outage(server_->clock.now());
  return outage && outage->mode == faults::actions::Outage::Mode::blackhole;
}

// Blackhole outage: open connections relay nothing, in either direction, until the outage is over
// (or the connection is cut). Called before every write of relayed bytes, so at most one buffer
// per direction is held; TCP backpressure stops both peers beyond that.
asio::awaitable<void> Session::hold_while_blackholed() {
  bool held = false;
  for (;;) {
    if (cut_) break;
    auto now = server_->clock.now();
    auto outage = server_->engine.outage(now);
    if (!outage || outage->mode != faults::actions::Outage::Mode::blackhole) break;
    if (!held) spdlog::debug("conn {}: blackhole outage: relaying held", id_);
    held = true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(outage->until - now);
    // Short naps: the outage may also end early (disarm, a new scenario).
    co_await sleep(std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(100)));
  }
  if (held) spdlog::debug("conn {}: blackhole outage over: relaying again", id_);
}

// Holds the connection without answering: reads (and drops) whatever the client sends until it
// gives up, or until `limit` has passed (then the connection is closed).
asio::awaitable<void> Session::hang(std::optional<std::chrono::milliseconds> limit) {
  state_ = State::streaming;
  if (limit) client_->expires_after(*limit);
  else client_->expires_never();
  char sink[4096];
  for (;;) {
    auto [ec, n] = co_await client_->async_read_some(asio::buffer(sink), use_tuple);
    if (ec) break;
  }
  if (!cut_) cut_now(Cut::close);
}

asio::awaitable<void> Session::close_gracefully() {
  if (cut_) co_return;
  client_->expires_after(std::chrono::seconds(2));
  co_await client_->async_shutdown(use_tuple);  // close_notify; the peer may or may not answer
  cut_now(Cut::close);
}

asio::awaitable<void> Session::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(executor_, d);
  co_await timer.async_wait(use_tuple);
}

RelayBuffer& Session::up_chunk() {
  if (up_chunk_.empty()) up_chunk_.resize(options_.relay_buffer);
  return up_chunk_;
}

RelayBuffer& Session::down_chunk() {
  if (down_chunk_.empty()) down_chunk_.resize(options_.relay_buffer);
  return down_chunk_;
}

// Beast reads into a flat_buffer only as much as its free capacity (at least 512 bytes): without
// room reserved, a 100 MB body crossed the proxy in 512-byte reads and 512-byte TLS records.
void Session::reserve_client_reads() {
  if (client_buffer_.capacity() < options_.relay_buffer) client_buffer_.reserve(options_.relay_buffer);
}

void Session::reserve_upstream_reads() {
  if (upstream_ && upstream_->buffer.capacity() < options_.relay_buffer)
    upstream_->buffer.reserve(options_.relay_buffer);
}

void Session::release_idle_buffers() {
  RelayBuffer().swap(up_chunk_);
  RelayBuffer().swap(down_chunk_);
  // The serialized headers are reused from request to request, but one made large by a long
  // header (a request's may reach --max-header-bytes) is not kept by an idle connection.
  constexpr std::size_t kKeptHead = 4096;
  if (request_head_.capacity() > kKeptHead) std::string().swap(request_head_);
  if (response_head_.capacity() > kKeptHead) std::string().swap(response_head_);
  if (client_buffer_.size() == 0) client_buffer_.shrink_to_fit();  // bytes of a pipelined request stay
  if (upstream_ && upstream_->buffer.size() == 0) upstream_->buffer.shrink_to_fit();
}

void Session::cut_now(Cut how) {
  if (cut_) return;
  cut_ = true;
  boost::system::error_code ec;
  auto& socket = client_socket();
  if (how == Cut::reset) {
    socket.set_option(asio::socket_base::linger(true, 0), ec);  // close() then sends RST
  } else {
    socket.shutdown(tcp::socket::shutdown_both, ec);  // FIN
  }
  client_socket().close(ec);
  if (h2_) h2_->cut();
  // Close the upstream socket but keep the Upstream object: cut_now also runs from outside the
  // exchange (an outage resetting every live connection) while a coroutine is suspended on that
  // stream holding references into it. It wakes with operation_aborted and ends the session;
  // destroying the object here would leave it a dangling pointer.
  if (upstream_) upstream_->stream.socket().close(ec);
}

void Session::close_upstream() {
  if (!upstream_) return;
  boost::system::error_code ec;
  upstream_->stream.socket().close(ec);
  upstream_.reset();
}

void Session::abort(Cut how) {
  asio::post(executor_, [self = shared_from_this(), how] { self->cut_now(how); });
}

void Session::drain() {
  asio::post(executor_, [self = shared_from_this()] {
    self->draining_ = true;
    if (self->h2_) {
      self->h2_->drain();
      return;
    }
    if (self->state_ == State::idle || self->state_ == State::handshake) self->cut_now(Cut::close);
    if (self->state_ == State::streaming) self->cut_now(Cut::close);
  });
}

void Session::finish(Exchange& ex) { finish_exchange(*server_, ex, id_); }

}  // namespace faultline::proxy
