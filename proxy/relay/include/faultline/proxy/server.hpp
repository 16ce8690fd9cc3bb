#pragma once
// The relay server: accepts TLS connections from clients, reads HTTP/1.1 requests, asks the engine
// for a plan per request and carries it out (usually: forward to kube-apiserver and stream the
// answer back). One strand per connection; the io_context may be run by several threads.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "faultline/faults/clock.hpp"
#include "faultline/faults/engine.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/token_file.hpp"
#include "faultline/proxy/observer.hpp"

namespace faultline::proxy {

struct UpstreamOptions {
  net::Endpoint endpoint;     // kube-apiserver host:port
  std::string base_path;      // prefix of every forwarded target ("" for a plain apiserver URL)
  net::ClientTlsOptions tls;  // CA / insecure / client identity (from --upstream-kubeconfig)
  // Identity replacement (--upstream-kubeconfig): the client's Authorization header is dropped
  // and, when set, this bearer token is sent instead. Without replacement Authorization passes.
  bool replace_identity = false;
  std::string token;
  // --upstream-in-cluster: the pod's service-account token, re-read when the kubelet rotates it,
  // sent on a request that carries no Authorization (a client's own passes through).
  std::shared_ptr<const net::RotatingTokenFile> fallback_token;
};

struct ServerOptions {
  net::Endpoint listen{"127.0.0.1", 0};
  net::CertifiedKey serving;  // serving certificate (+ chain) and key
  UpstreamOptions upstream;
  std::size_t header_limit = 1024 * 1024;           // request header bytes (as Go's default)
  std::chrono::milliseconds header_timeout{30000};  // from first byte to end of the header
  std::chrono::milliseconds idle_timeout{120000};   // keep-alive wait for the next request
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds io_timeout{120000};      // per body read/write on non-streaming requests
  std::chrono::milliseconds connect_timeout{10000};  // upstream TCP + TLS
  std::size_t relay_buffer = 64 * 1024;              // bytes per direction per connection
  // Client connections open at once; a connection beyond it is closed right after accept.
  std::size_t max_connections = 4096;
  // HTTP/2: ALPN offers h2 (then the upstream connection of that client speaks h2 too); false
  // offers http/1.1 only (--http1-only, the HTTP/1.1 mode).
  bool http2 = true;
  // Concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS; Go's and so
  // kube-apiserver's default is 250) and the flow-control window per stream. Each stream holds
  // at most one window of bytes per direction in the proxy, a connection at most streams x window.
  std::uint32_t h2_max_streams = 250;
  std::uint32_t h2_stream_window = 64 * 1024;
  // Decoded request header bytes of HTTP/2 streams not yet sent upstream (HPACK lets a client
  // send a list of up to header_limit for a few hundred bytes), per connection and in the whole
  // process: past either, new streams are refused (RST_STREAM REFUSED_STREAM). A connection may
  // always hold h2_header_memory_floor, whatever the others hold.
  std::size_t h2_header_memory_per_connection = 4 * 1024 * 1024;
  std::size_t h2_header_memory_total = 64 * 1024 * 1024;
  std::size_t h2_header_memory_floor = 64 * 1024;
  // Resident memory (jemalloc's stats.resident, else VmRSS) past which new work is refused:
  // HTTP/2 streams get REFUSED_STREAM, HTTP/1.1 requests a 503 Status and the connection closes.
  // 0: no limit. Sampled every memory_sample_interval.
  std::uint64_t max_memory = 0;
  std::chrono::milliseconds memory_sample_interval{100};
  // Threads that run the io_context (and nothing else touches a connection): with exactly one, a
  // connection needs no strand and its handlers run on the io_context's executor directly; any
  // other value (0: not known) gives every connection a strand of its own.
  unsigned relay_threads = 0;
};

class Server {
 public:
  Server(boost::asio::io_context& ioc, ServerOptions options, faults::Engine& engine, const faults::Clock& clock,
         Observer* observer = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts accepting. Throws std::system_error naming the address on failure.
  void start();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  // Applies the engine's current outage to live connections and the listener (call after
  // Engine::start_outage or Engine::disarm from outside the relay; the relay calls it itself when
  // a rule starts an outage). Thread-safe.
  void enforce_outage();

  // Graceful stop: stop accepting, close idle connections at once, cut watches and upgraded
  // tunnels, let requests in flight finish for up to `drain`, then reset what is left.
  // Thread-safe; the io_context runs out of relay work afterwards.
  void stop(std::chrono::milliseconds drain);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Runs `ioc` on the calling thread until it has no work left. An exception that escapes a handler
// (which would end the process through std::terminate) is logged (the first one, then at most
// one report every 10 s with the count) and counted, and the thread goes back to running
// everything else: one connection's failure never takes down the others. A thread with nothing
// ready keeps polling its sockets for up to `spin` before it sleeps (`--spin-us`).
void run_relay_thread(boost::asio::io_context& ioc, std::chrono::microseconds spin = {});
// Exceptions run_relay_thread caught so far, in this process.
std::uint64_t escaped_handler_exceptions();

}  // namespace faultline::proxy
