#pragma once
// The client side of a TLS connection, from a host name to a finished handshake: resolve, TCP
// connect, TLS handshake (SNI and peer verification set by prepare_client_ssl). One function for
// every client connection of faultline (the relay's HTTP/1.1 and HTTP/2 upstream connections, its
// ALPN probe, the harness's Kubernetes client), one way to report failure: a ConnectError naming
// the step that failed and the endpoint it was for. The caller decides what a failure means (a 503
// in the apiserver's place, a log line, an exception).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "faultline/net/async.hpp"
#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::net {

// A TLS connect that failed: which step, for which endpoint, with which error.
struct ConnectError {
  enum class Step { resolve, connect, handshake };
  Step step;
  Endpoint endpoint;
  boost::system::error_code ec;

  // The step as a user reads it: "resolving <host>", "connecting", "TLS handshake".
  std::string step_name() const;
  // "<step>: <what happened>", for a message that names the endpoint itself.
  std::string message() const;
  // "<host:port>: <step>: <what happened>", for a message that does not.
  std::string describe() const;
};

struct TlsConnectOptions {
  std::string_view verify_name;  // the name the peer's certificate must carry (and SNI)
  bool verify = true;
  // The deadline of the TCP connect and TLS handshake together or, with `deadline_per_step`, of each.
  std::chrono::steady_clock::duration timeout{};
  bool deadline_per_step = false;
  bool no_delay = false;  // TCP_NODELAY once connected
};

// Connects `stream` (net::TlsStream, or a beast::ssl_stream over a beast::tcp_stream: its lowest
// layer has the deadline) to `endpoint`, resolved by `resolver` (the caller may cancel it). The
// stream's deadline is left as the handshake had it. Throws only what prepare_client_ssl throws.
template <class Stream>
boost::asio::awaitable<std::optional<ConnectError>> connect_tls(Stream& stream,
                                                                boost::asio::ip::tcp::resolver& resolver,
                                                                const Endpoint& endpoint,
                                                                const TlsConnectOptions& options) {
  using Step = ConnectError::Step;
  auto [rec, results] = co_await resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), use_tuple);
  if (rec) co_return ConnectError{Step::resolve, endpoint, rec};
  auto& tcp_layer = boost::beast::get_lowest_layer(stream);
  tcp_layer.expires_after(options.timeout);
  auto [cec, ep] = co_await tcp_layer.async_connect(results, use_tuple);
  if (cec) co_return ConnectError{Step::connect, endpoint, cec};
  if (options.no_delay) tcp_layer.socket().set_option(boost::asio::ip::tcp::no_delay(true));
  prepare_client_ssl(stream.native_handle(), std::string(options.verify_name), options.verify);
  if (options.deadline_per_step) tcp_layer.expires_after(options.timeout);
  auto [hec] = co_await stream.async_handshake(boost::asio::ssl::stream_base::client, use_tuple);
  if (hec) co_return ConnectError{Step::handshake, endpoint, hec};
  co_return std::nullopt;
}

}  // namespace faultline::net
