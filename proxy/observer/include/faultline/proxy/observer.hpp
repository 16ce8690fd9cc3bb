#pragma once
// What the relay reports about its traffic. faultline-proxy plugs the audit log and the metrics in
// here (main.cpp); tests plug in recorders. Calls come from the relay's threads concurrently, so
// implementations must be thread-safe. No header values are ever passed and the path comes
// redacted: an Authorization header or token cannot reach an observer.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "faultline/audit/record.hpp"

namespace faultline::proxy {

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void connection_opened() {}
  virtual void connection_closed() {}
  // A connection was closed right after accept: max_connections were open already.
  virtual void connection_rejected() {}
  // New work refused to keep the proxy's memory bounded: an HTTP/2 stream (REFUSED_STREAM) or
  // an HTTP/1.1 request (503). `reason`: "h2-header-memory" (decoded request headers waiting to
  // go upstream past their budget) or "max-memory" (--max-memory).
  virtual void memory_refused(std::string_view reason) { (void)reason; }
  // The proxy's resident memory in bytes, sampled (every 100 ms by default).
  virtual void memory_sampled(std::uint64_t bytes) { (void)bytes; }
  virtual void watch_opened() {}
  virtual void watch_closed() {}
  // Once per request, when it is finished (answered, cut, or the stream ended): its audit record
  // (seq unset) and how long upstream took from the request sent to the response header
  // (nullopt when it never answered).
  virtual void exchange_done(const audit::Record& record, std::optional<std::chrono::nanoseconds> upstream_latency) = 0;
};

}  // namespace faultline::proxy
