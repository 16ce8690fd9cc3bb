#pragma once
// HTTP/1.1 on one client connection (connection.hpp; ALPN chose http/1.1, or none): requests one
// after another (keep-alive), each classified, decided by the engine and carried out, forwarded
// over a kept-alive upstream connection. Everything runs on the connection's strand.

#include <boost/asio/any_io_executor.hpp>
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
#include "http1_message.hpp"
#include "relay_buffer.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = net::TlsStream;

// The upstream (kube-apiserver) connection of an HTTP/1.1 session, kept alive between requests.
struct Http1Upstream {
  Http1Upstream(const asio::any_io_executor& executor, asio::ssl::context& tls, std::size_t buffer_limit)
      : stream(executor, tls), buffer(buffer_limit) {}
  TlsStream stream;
  beast::flat_buffer buffer;  // bounded (Http1Session::connect_upstream): a response header and a relay buffer
  bool reused = false;        // a request already went over it
};

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
  bool cut_when_draining() const { return state_ != State::busy; }

 private:
  enum class State { idle, busy, streaming };

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
  asio::awaitable<void> write_local_response(Exchange& ex, const faults::HttpResponse& response);
  asio::awaitable<void> write_simple_error(int code, const char* message);
  asio::awaitable<void> discard_request_body(Exchange& ex);
  asio::awaitable<void> answer_upstream_unreachable(Exchange& ex);
  asio::awaitable<void> answer_bad_gateway(Exchange& ex, const std::string& why);
  asio::awaitable<void> hang(std::optional<std::chrono::milliseconds> limit);

  // relay.cpp: forwarding and streaming.
  asio::awaitable<std::optional<std::string>> connect_upstream();
  // False when upstream could not be reached and nothing was sent (ex.upstream_failure says why).
  asio::awaitable<bool> send_request(Exchange& ex);
  asio::awaitable<bool> relay_response(Exchange& ex);
  asio::awaitable<void> discard_response(ResponseParser& parser, Exchange& ex);
  asio::awaitable<bool> stream_body(ResponseParser& parser, Exchange& ex, WatchFilter* filter);
  // Parses the next element of the upstream response body (one piece of it, a chunk header, the
  // end), reading from upstream when the buffer holds none. The piece (parser.take_body()) is
  // still in upstream_->buffer: the caller consumes `used` bytes once it went on.
  struct Parsed {
    boost::system::error_code ec;
    std::size_t used = 0;
  };
  asio::awaitable<Parsed> parse_body_piece(ResponseParser& parser);
  asio::awaitable<void> write_body_piece(Http1Framing& framing, int status, const char* data, std::size_t size,
                                         bool more, Exchange& ex);
  asio::awaitable<void> wait_for_send_queue();
  asio::awaitable<void> tunnel();
  // `keep` holds the connection (and so this session) while the pump runs.
  static asio::awaitable<void> pump(std::shared_ptr<TlsConnection> keep, Http1Session* self, bool client_to_upstream);
  void prepare_upstream_request(Exchange& ex);

  // The relay buffers exist only while a request or a tunnel uses them: an idle connection (or
  // one still in its TLS handshake) holds none of them.
  RelayBuffer& up_chunk();
  RelayBuffer& down_chunk();
  void reserve_client_reads();
  void reserve_upstream_reads();
  void release_idle_buffers();

  void finish(Exchange& ex);

  TlsConnection& conn_;
  Server::Impl* const server_;
  const ServerOptions& options_;
  const std::uint64_t id_;
  asio::any_io_executor executor_;  // the connection's strand
  TlsStream& client_;
  beast::flat_buffer client_buffer_;
  std::unique_ptr<Http1Upstream> upstream_;
  RelayBuffer up_chunk_;       // request body (or tunnel) bytes on their way upstream
  RelayBuffer down_chunk_;     // tunnel bytes on their way to the client (response bodies
                               // go out from upstream_->buffer)
  std::string request_head_;   // the request header for the upstream (send_request)
  std::string response_head_;  // the response header for the client (ResponseParser)
  State state_ = State::idle;
};

}  // namespace faultline::proxy
