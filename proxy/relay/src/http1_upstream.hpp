#pragma once
// The upstream (kube-apiserver) side of an HTTP/1.1 session: one connection, kept alive between
// requests and opened again when it closed. It sends a request (its body read from the client as
// it comes) and reads the response's header and body pieces; the session and the response relay
// (http1_relay.hpp) decide what the client gets.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "faultline/net/tls_stream.hpp"
#include "http1_client.hpp"
#include "http1_message.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

class TlsConnection;
struct Exchange;

class Http1Upstream {
 public:
  // Largest upstream response header. kube-apiserver's are a few hundred bytes; its Warning headers,
  // the only ones that grow, are capped at 4 KiB in total.
  static constexpr std::uint32_t kResponseHeaderLimit = 16 * 1024;

  explicit Http1Upstream(TlsConnection& conn);
  Http1Upstream(const Http1Upstream&) = delete;
  Http1Upstream& operator=(const Http1Upstream&) = delete;
  ~Http1Upstream();

  // Whether the connection is open (it opens again on the next request when not).
  bool open() const { return link_ != nullptr; }
  // The open connection's stream, and its buffer: bounded (a response header and a relay buffer);
  // a response's body pieces stay there until the relay consumes them.
  net::TlsStream& stream() { return link_->stream; }
  boost::beast::flat_buffer& buffer() { return link_->buffer; }

  // Sends the request (its body read from `client` as it comes; "100 Continue" to the client
  // first when it expects one), opening the connection when it is not. False when upstream could
  // not be reached and nothing was sent (ex.upstream_failure says why). Sent again after
  // ex.resent is set, it goes as it was prepared the first time.
  asio::awaitable<bool> send_request(Exchange& ex, Http1Client& client);
  // Reads the response header to ex's request into `parser` (its limits set here), under the
  // I/O timeout (none for a watch). The errors of read_header() in http1_message.hpp.
  asio::awaitable<boost::system::error_code> read_header(ResponseParser& parser, const Exchange& ex);
  // Parses the next element of the response body (one piece of it, a chunk header, the end),
  // reading when the buffer holds none. The piece (parser.take_body()) is still in buffer(): the
  // caller consumes `used` bytes once it went on.
  struct Parsed {
    boost::system::error_code ec;
    std::size_t used = 0;
  };
  asio::awaitable<Parsed> parse_body_piece(ResponseParser& parser);
  // Reads the whole response and drops it.
  asio::awaitable<void> discard_response(ResponseParser& parser, Exchange& ex);

  // Beast reads into a flat_buffer only as much as its free capacity: room for a relay buffer.
  void reserve_reads();
  // Between requests: an empty buffer and a large serialized request header are not kept.
  void release_idle_buffers();
  // Close the socket but keep the connection's objects: a cut also comes from outside the
  // exchange (an outage resetting every live connection) while a coroutine is suspended on that
  // stream holding references into it. It wakes with operation_aborted and ends the session;
  // destroying the objects here would leave it a dangling pointer.
  void cut();
  void close();

 private:
  struct Link {
    Link(const asio::any_io_executor& executor, asio::ssl::context& tls, std::size_t buffer_limit)
        : stream(executor, tls), buffer(buffer_limit) {}
    net::TlsStream stream;
    boost::beast::flat_buffer buffer;
    bool reused = false;  // a request already went over it
  };

  // Opens the connection. Returns what failed (resolving, connecting, the TLS handshake), or
  // nothing when the connection is up; the caller answers the client in the apiserver's place.
  asio::awaitable<std::optional<std::string>> connect();
  void prepare_request(Exchange& ex);

  TlsConnection& conn_;
  Server::Impl& server_;
  const ServerOptions& options_;
  std::unique_ptr<Link> link_;
  std::string request_head_;  // the request header, serialized once (send_request)
};

}  // namespace faultline::proxy
