#pragma once
// The response relay of an HTTP/1.1 session: the upstream's response goes to the client piece by
// piece as it arrives (a watch filter deciding what a watch's client gets), and an upgrade (101)
// becomes a raw byte tunnel between the two connections.

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <memory>

#include "http1_client.hpp"
#include "http1_message.hpp"
#include "http1_upstream.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

class TlsConnection;
struct Exchange;

class Http1ResponseRelay {
 public:
  Http1ResponseRelay(TlsConnection& conn, Http1Client& client, Http1Upstream& upstream);
  Http1ResponseRelay(const Http1ResponseRelay&) = delete;
  Http1ResponseRelay& operator=(const Http1ResponseRelay&) = delete;

  // Writes the response header (parsed into `parser`) and then the body as it arrives. With a
  // watch filter, the body is cut into events and the filter decides what the client gets.
  // Returns false when the client connection must not carry another request.
  asio::awaitable<bool> stream_body(ResponseParser& parser, Exchange& ex, WatchFilter* filter);
  // After a 101: bytes flow both ways untouched until either side closes; then both are closed.
  asio::awaitable<void> tunnel();

 private:
  asio::awaitable<void> write_body_piece(Http1Framing& framing, int status, const char* data, std::size_t size,
                                         bool more, Exchange& ex);
  asio::awaitable<void> wait_for_send_queue();
  // A watch whose filter holds events back and releases them by time (see the .cpp).
  struct HeldRelay;
  asio::awaitable<bool> relay_held_events(ResponseParser& parser, Exchange& ex, WatchFilter& filter,
                                          Http1Framing& framing, int status);
  static asio::awaitable<void> emit_due(std::shared_ptr<TlsConnection> keep, Http1ResponseRelay* self,
                                        std::shared_ptr<HeldRelay> held, Exchange& ex, WatchFilter& filter,
                                        Http1Framing& framing, int status);
  // `keep` holds the connection (and so this relay) while the pump runs.
  static asio::awaitable<void> pump(std::shared_ptr<TlsConnection> keep, Http1ResponseRelay* self,
                                    bool client_to_upstream);

  TlsConnection& conn_;
  Server::Impl& server_;
  const ServerOptions& options_;
  Http1Client& client_;
  Http1Upstream& upstream_;
};

}  // namespace faultline::proxy
