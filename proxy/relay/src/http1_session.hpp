#pragma once
// HTTP/1.1 on one client connection (connection.hpp; ALPN chose http/1.1, or none): requests one
// after another (keep-alive), each classified, decided by the engine and carried out: answered
// here, or forwarded over a kept-alive upstream connection (http1_upstream.hpp) and its response
// relayed (http1_relay.hpp). Everything runs on the connection's strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "exchange.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls_stream.hpp"
#include "faultline/proxy/effects.hpp"
#include "faultline/proxy/observer.hpp"
#include "http1_client.hpp"
#include "http1_message.hpp"
#include "http1_relay.hpp"
#include "http1_upstream.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = net::TlsStream;

// One request/response in flight.
struct Exchange : ExchangeCore {
  RequestParser parser;
  bool client_keep_alive = true;
  bool expects_continue = false;  // "Expect: 100-continue": the body comes only when asked for
  std::string upstream_failure;   // why upstream could not be reached (then the client gets 503)
  // Sent without a body on a kept-alive upstream connection, by a method a client may send again
  // (GET, HEAD, OPTIONS, TRACE, as Go's http.Transport decides): when that connection turns out
  // closed before any byte of the answer, the request goes again, once, on a new one.
  bool resendable = false;
  bool resent = false;
  bool forwarded = false;  // the effect discard_response forwarded it (its answer was lost)
};

class TlsConnection;

class Http1Session {
 public:
  explicit Http1Session(TlsConnection& conn);
  Http1Session(const Http1Session&) = delete;
  Http1Session& operator=(const Http1Session&) = delete;

  // Serves requests until the connection ends, is cut or drains (then TlsConnection closes it).
  asio::awaitable<void> serve();
  // The connection was cut: the upstream socket closes too.
  void cut();
  void close_upstream();
  // Whether a graceful stop cuts the connection at once: between requests, or streaming (a watch,
  // a tunnel, a hang); a request in flight finishes first.
  bool cut_when_draining() const { return client_.phase != Http1Client::Phase::busy; }

 private:
  asio::awaitable<bool> wait_for_request(bool first);
  asio::awaitable<bool> serve_request();
  asio::awaitable<bool> carry_out(Exchange& ex);
  // The effects of a fault (effects.hpp), each carried out here once. nullopt: go on with the next;
  // a value: the request is over, and whether the connection can carry another.
  using Next = std::optional<bool>;
  asio::awaitable<Next> apply(Exchange& ex, effect::Answer& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::CutOff& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::Wait& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::Hold& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::DiscardResponse& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::FilterWatch& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::EnforceOutage& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::EndConnection& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::StallConnection& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::Gate& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::RecordResourceVersion& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::ReadAsOf& e);
  asio::awaitable<void> write_local_response(Exchange& ex, const faults::HttpResponse& response);
  asio::awaitable<void> write_simple_error(int code, const char* message);
  asio::awaitable<void> discard_request_body(Exchange& ex);
  asio::awaitable<void> answer_upstream_unreachable(Exchange& ex);
  asio::awaitable<void> answer_bad_gateway(Exchange& ex, const std::string& why);
  asio::awaitable<void> hang(std::optional<std::chrono::milliseconds> limit);

  // Reads the response header (dropping interim ones, sending the request again once when a
  // kept-alive upstream connection turns out closed) and relays the response.
  asio::awaitable<bool> relay_response(Exchange& ex);
  void release_idle_buffers();
  void finish(Exchange& ex);

  TlsConnection& conn_;
  Server::Impl* const server_;
  const ServerOptions& options_;
  const std::uint64_t id_;
  Http1Client client_;
  Http1Upstream upstream_;
  Http1ResponseRelay relay_;
  std::string response_head_;  // the response header for the client (ResponseParser)
};

}  // namespace faultline::proxy
