#pragma once
// The proxy's metric set, registered in one Registry the admin API renders.

#include "faultline/admin/metrics.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::admin {

class ProxyMetrics {
  // Declared before everything else: the family and series references below point into it and
  // members are initialised in declaration order.
  metrics::Registry registry_;
  std::uint64_t id_;  // unique per object (the per-thread series cache of request_done)

 public:
  ProxyMetrics();
  ProxyMetrics(const ProxyMetrics&) = delete;
  ProxyMetrics& operator=(const ProxyMetrics&) = delete;

  // faultline_requests_total{verb,resource,code}: every request answered or cut. `code` is the
  // status the client saw, or "none" when the connection was cut before a status was sent (0).
  // Clients choose the resource (any path segment): only the first kMaxResources distinct ones
  // of at most kMaxResourceBytes get a series of their own; the rest count as kOtherResource.
  // They choose the verb too outside the Kubernetes API (the method, lower-cased): a verb that is
  // neither a Kubernetes verb nor a method of RFC 9110/5789 counts as kOtherResource as well.
  void request_done(std::string_view verb, std::string_view resource, int code);
  static constexpr std::size_t kMaxResources = 256;
  static constexpr std::size_t kMaxResourceBytes = 128;
  static constexpr std::string_view kOtherResource = "_other";
  // faultline_rule_matched_total{rule}: a rule's match clause selected the request.
  void rule_matched(std::string_view rule);
  // faultline_faults_fired_total{rule,action}: the engine decided to act and the action ran.
  void fault_fired(std::string_view rule, std::string_view action);
  // faultline_held_requests_total{rule,outcome}: requests a hold rule held, by what became of them
  // (forwarded, reset, answered, gave-up, not-held).
  void request_held(std::string_view rule, std::string_view outcome);
  // faultline_watch_events_held_total{rule,action,outcome}: watch events a watch-delay or
  // watch-coalesce rule held back and relayed later (outcome "delayed") or left out ("withheld"),
  // counted when the watch ends.
  void watch_events_held(std::string_view rule, std::string_view action, std::uint64_t delayed, std::uint64_t withheld);
  // faultline_stale_reads_total{rule,outcome}: a stale-read rule's LIST, by what came of it:
  // "served" (read at the rule's resourceVersion), "expired" (kube-apiserver answered 410: the
  // resourceVersion is compacted), "refused" (another error), "unrecorded" (no resourceVersion
  // recorded: forwarded as it was).
  void stale_read(std::string_view rule, std::string_view outcome);
  // faultline_upstream_latency_seconds: forwarding the request until upstream response headers.
  void upstream_latency(std::chrono::nanoseconds latency);

  // faultline_open_connections / faultline_open_watches: inc() on open, dec() on close.
  metrics::Gauge& open_connections;
  metrics::Gauge& open_watches;
  // faultline_connections_rejected_total: connections closed at accept (--max-connections).
  metrics::Counter& connections_rejected;
  // faultline_admin_connections / faultline_admin_connections_rejected_total: the admin API's
  // connections open now, and those closed right after accept (--admin-max-connections).
  metrics::Gauge& admin_connections;
  metrics::Counter& admin_connections_rejected;
  // faultline_memory_bytes: the proxy's resident memory as last sampled (the allocator's count).
  metrics::Gauge& memory_bytes;
  // faultline_memory_refusals_total{reason}: HTTP/2 streams refused (REFUSED_STREAM) and
  // HTTP/1.1 requests answered 503 to keep memory bounded; reason "h2-header-memory" or
  // "max-memory".
  void memory_refused(std::string_view reason);

  std::string render() const { return registry_.render(); }

  // Upper bounds (seconds) of faultline_upstream_latency_seconds.
  static const std::vector<double>& latency_buckets();

 private:
  metrics::Counter& requests_series(std::string_view verb, std::string_view resource, int code);
  metrics::CounterFamily& requests_;
  metrics::CounterFamily& faults_fired_;
  metrics::CounterFamily& watch_events_held_;
  metrics::CounterFamily& rule_matched_;
  metrics::CounterFamily& held_;
  metrics::CounterFamily& stale_reads_;
  metrics::CounterFamily& memory_refusals_;
  metrics::Counter& refused_header_memory_;
  metrics::Counter& refused_max_memory_;
  metrics::Histogram& upstream_latency_;
  std::shared_mutex resources_mutex_;
  std::set<std::string, std::less<>> resources_;  // those with a series of their own
};

}  // namespace faultline::admin
