#pragma once
// One client connection as TLS, knowing nothing of HTTP: it waits for the client's first byte,
// makes the TLS handshake and hands the connection to the protocol ALPN chose, an HTTP/1.1 session
// (http1_session.hpp) or an HTTP/2 session (http2_session.hpp), peers of each other; then it closes. It
// also owns what both protocols share: how the connection is cut (RST or FIN), the graceful stop,
// and holding relayed bytes during a blackhole outage. Everything runs on the connection's strand;
// abort()/drain() may be called from anywhere.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "faultline/net/tls_stream.hpp"
#include "faultline/proxy/effects.hpp"
#include "http1_session.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

class Http2Session;

class TlsConnection : public std::enable_shared_from_this<TlsConnection> {
 public:
  TlsConnection(std::shared_ptr<Server::Impl> server, tcp::socket socket, std::uint64_t id);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  void start();
  // Cut the connection now (RST or FIN), from any thread.
  void abort(Cut how);
  // Graceful stop, from any thread: idle connections close now, streams are cut, a request in
  // flight finishes and then the connection closes.
  void drain();

  // For the protocol sessions, on the strand.
  Server::Impl& server() { return *server_; }
  const ServerOptions& options() const { return options_; }
  std::uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }
  const asio::any_io_executor& executor() const { return executor_; }
  net::TlsStream& stream() { return *client_; }
  tcp::socket& socket() { return client_ ? client_->socket() : *plain_; }
  bool is_cut() const { return cut_; }
  bool draining() const { return draining_; }
  // Cut the connection now: RST (reset) or FIN (close); the protocol session stops.
  void cut_now(Cut how);
  // Before every write of relayed bytes: `if (conn.blackholed()) co_await conn.hold_while_blackholed();`,
  // so that a request outside an outage costs no coroutine frame for it.
  bool blackholed() const;
  asio::awaitable<void> hold_while_blackholed();
  asio::awaitable<void> sleep(std::chrono::milliseconds d);

 private:
  static asio::awaitable<void> run(std::shared_ptr<TlsConnection> self);
  asio::awaitable<void> serve();
  asio::awaitable<bool> wait_for_client_hello();
  asio::awaitable<void> close_gracefully();

  std::shared_ptr<Server::Impl> server_;
  const ServerOptions& options_;
  std::uint64_t id_;
  std::string peer_;
  asio::any_io_executor executor_;  // the connection's strand
  // The TLS stream (OpenSSL's state and record buffers, about 70 KB) is made once the client has
  // sent its first byte; until then the connection is the plain TCP socket.
  std::optional<tcp::socket> plain_;
  std::optional<net::TlsStream> client_;
  // The protocol ALPN chose, once the handshake is done: one of the two.
  std::optional<Http1Session> h1_;
  std::shared_ptr<Http2Session> h2_;
  bool draining_ = false;
  bool cut_ = false;
};

}  // namespace faultline::proxy
