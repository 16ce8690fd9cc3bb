#pragma once
// What the relay reports about its traffic. faultline-proxy plugs the audit log and the metrics in
// here (main.cpp); tests plug in recorders. Calls come from the relay's threads concurrently, so
// implementations must be thread-safe. No header values are ever passed: an Authorization header
// or token cannot reach an observer.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace faultline::proxy {

// One request that crossed (or was stopped by) the proxy.
struct ExchangeRecord {
  std::chrono::system_clock::time_point start;
  std::uint64_t conn = 0;       // proxy-assigned client connection id
  std::string client;           // "ip:port"
  std::string proto = "h1";     // "h1" (HTTP/1.1) or "h2" (an HTTP/2 stream)
  std::string user_agent;
  std::string method;
  std::string target;           // as sent by the client (the audit log redacts query secrets)
  std::string verb;
  std::string resource;         // "pods", "deployments.apps"
  std::string subresource;
  std::string namespace_;
  std::string name;
  bool watch = false;
  std::string rule;             // "" when no rule fired
  std::string action;           // action type name, "" when none
  int status = 0;               // status written to the client, 0 when the connection was cut
  std::optional<int> upstream_status;
  std::uint64_t bytes_in = 0;   // request body bytes read from the client
  std::uint64_t bytes_out = 0;  // response body bytes written to the client
  std::chrono::microseconds duration{0};
  std::optional<std::chrono::nanoseconds> upstream_latency;  // request sent -> response header
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void connection_opened() {}
  virtual void connection_closed() {}
  // A connection was closed right after accept: max_connections were open already.
  virtual void connection_rejected() {}
  virtual void watch_opened() {}
  virtual void watch_closed() {}
  // Once per request, when it is finished (answered, cut, or the stream ended).
  virtual void exchange_done(const ExchangeRecord& record) = 0;
};

}  // namespace faultline::proxy
