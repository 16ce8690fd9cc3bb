// The client connection as TLS: first byte, handshake, the protocol ALPN chose, close; cuts,
// graceful stop and blackhole outages.
#include "connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/error.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "faultline/net/async.hpp"
#include "faultline/net/error_text.hpp"
#include "faultline/net/tls.hpp"
#include "http2_session.hpp"

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

TlsConnection::TlsConnection(std::shared_ptr<Server::Impl> server, tcp::socket socket, std::uint64_t id)
    : server_(std::move(server)),
      options_(server_->options),
      id_(id),
      peer_(endpoint_text(socket)),
      executor_(socket.get_executor()),
      plain_(std::move(socket)) {}

TlsConnection::~TlsConnection() { server_->forget(this); }

void TlsConnection::start() { asio::co_spawn(executor_, run(shared_from_this()), asio::detached); }

asio::awaitable<void> TlsConnection::run(std::shared_ptr<TlsConnection> self) {
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
  if (self->h1_) self->h1_->close_upstream();
  boost::system::error_code ec;
  self->socket().close(ec);
  if (self->server_->observer) self->server_->observer->connection_closed();
}

asio::awaitable<void> TlsConnection::serve() {
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
    h2_ = std::make_shared<Http2Session>(shared_from_this());
    co_await Http2Session::run(h2_);
    h2_.reset();  // it holds this connection
  } else {
    h1_.emplace(*this);
    co_await h1_->serve();
  }
  if (!cut_) co_await close_gracefully();
}

// Waits (within the handshake timeout) until the client has sent something, without reading it:
// a connection that never starts its handshake costs no TLS state.
asio::awaitable<bool> TlsConnection::wait_for_client_hello() {
  using namespace asio::experimental::awaitable_operators;
  char byte = 0;
  asio::steady_timer timer(executor_, options_.handshake_timeout);
  auto first = co_await (plain_->async_receive(asio::buffer(&byte, 1), tcp::socket::message_peek, use_tuple) ||
                         timer.async_wait(use_tuple));
  if (first.index() != 0) co_return false;  // the handshake timeout passed
  auto [ec, n] = std::get<0>(first);
  co_return !ec && n > 0 && !cut_;
}

bool TlsConnection::blackholed() const {
  if (cut_) return false;
  auto outage = server_->engine.outage(server_->clock.now());
  return outage && outage->mode == faults::actions::Outage::Mode::blackhole;
}

// Blackhole outage: open connections relay nothing, in either direction, until the outage is over
// (or the connection is cut). Called before every write of relayed bytes, so at most one buffer
// per direction is held; TCP backpressure stops both peers beyond that.
asio::awaitable<void> TlsConnection::hold_while_blackholed() {
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

asio::awaitable<void> TlsConnection::close_gracefully() {
  if (cut_) co_return;
  client_->expires_after(std::chrono::seconds(2));
  co_await client_->async_shutdown(use_tuple);  // close_notify; the peer may or may not answer
  cut_now(Cut::close);
}

asio::awaitable<void> TlsConnection::sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(executor_, d);
  co_await timer.async_wait(use_tuple);
}

void TlsConnection::cut_now(Cut how) {
  if (cut_) return;
  cut_ = true;
  boost::system::error_code ec;
  auto& s = socket();
  if (how == Cut::reset) {
    s.set_option(asio::socket_base::linger(true, 0), ec);  // close() then sends RST
  } else {
    s.shutdown(tcp::socket::shutdown_both, ec);  // FIN
  }
  s.close(ec);
  if (h2_) h2_->cut();
  if (h1_) h1_->cut();
}

void TlsConnection::abort(Cut how) {
  asio::post(executor_, [self = shared_from_this(), how] { self->cut_now(how); });
}

void TlsConnection::drain() {
  asio::post(executor_, [self = shared_from_this()] {
    self->draining_ = true;
    if (self->h2_) {
      self->h2_->drain();
      return;
    }
    // Before the handshake ended, between requests, or streaming (a watch, a tunnel, a hang).
    if (!self->h1_ || self->h1_->cut_when_draining()) self->cut_now(Cut::close);
  });
}

}  // namespace faultline::proxy
