#pragma once
// The proxy's admin HTTP API (plain HTTP/1.1, 127.0.0.1 by default), served on an io_context the
// caller owns and runs on any number of threads (the relay's): one coroutine per connection, each
// on a strand of its own, and one accepting. Endpoints (docs/proxy.md, "Admin API"):
//   GET  /v1/scenario           running scenario (YAML; JSON with Accept: application/json)
//   PUT  /v1/scenario           replace it (body YAML); 400 {"errors":[...]} keeps the old one
//   POST /v1/arm | /v1/disarm   schedule time zero / stop
//   POST /v1/outage             ?duration=10s&mode=reset|refuse|blackhole, or the same as JSON
//   GET  /v1/rules              per-rule counters
//   GET  /v1/audit?since=SEQ    audit records as JSON lines (410 when evicted; see docs/proxy.md)
//   GET  /metrics               Prometheus text
//   GET  /healthz               {"status":"ok"}; never needs the token
// With a token set, every other endpoint answers 401 unless "Authorization: Bearer <token>".

#include "faultline/admin/admin_backend.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace faultline::admin {

struct AdminServerOptions {
  std::string address = "127.0.0.1";         // IPv4 or IPv6 literal
  std::uint16_t port = 0;                    // 0: pick a free port (see AdminServer::local_endpoint)
  std::string token{};                       // empty: no authentication; never logged
  std::size_t body_limit = 4 * 1024 * 1024;  // larger bodies: 413
  std::size_t header_limit = 16 * 1024;      // larger headers: 431
  std::chrono::seconds timeout{30};          // per request read and keep-alive idle time
  // Admin connections open at once; one more is closed right after accept (and counted:
  // AdminBackend::admin_connection_refused). They share the process's descriptors with the relay.
  std::size_t max_connections = 64;
  // From accept to the end of a connection's first request header: a connection that says
  // nothing (so shows no token either) holds its place no longer.
  std::chrono::seconds first_request_timeout{5};
  std::size_t audit_default_limit = 10000;  // records per /v1/audit answer without ?limit
  std::size_t audit_max_limit = 100000;     // largest ?limit accepted
};

class AdminServer {
 public:
  // Does not touch the network yet; `backend` must outlive every handler the server runs.
  AdminServer(boost::asio::io_context& ioc, AdminServerOptions options, AdminBackend& backend);
  ~AdminServer();  // stop()
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds and starts accepting. Throws std::system_error naming the address on failure
  // (bad address, port in use). Call once.
  void start();
  // The bound address, e.g. to print or write the port chosen for port 0.
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Stops accepting and closes open admin connections. Thread-safe, idempotent; the io_context
  // runs out of admin work once the close handlers ran.
  void stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace faultline::admin
