#include "faultline/admin/proxy_metrics.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include <string>

namespace faultline::admin {

const std::vector<double>& ProxyMetrics::latency_buckets() {
  // From 1 ms (loopback apiserver) to 60 s (a hang or a slow LIST); finer where binds live.
  static const std::vector<double> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                              0.5,   1,      2.5,   5,    10,    30,   60};
  return buckets;
}

namespace {
std::atomic<std::uint64_t> next_id{1};
}  // namespace

ProxyMetrics::ProxyMetrics()
    : id_(next_id++),
      open_connections(
          registry_.gauge("faultline_open_connections", "Client connections currently open to the proxy.").get()),
      open_watches(
          registry_.gauge("faultline_open_watches", "Watch requests currently streaming through the proxy.").get()),
      connections_rejected(registry_
                               .counter("faultline_connections_rejected_total",
                                        "Client connections closed right after accept because "
                                        "--max-connections were open.")
                               .get()),
      admin_connections(
          registry_.gauge("faultline_admin_connections", "Connections currently open to the admin API.").get()),
      admin_connections_rejected(registry_
                                     .counter("faultline_admin_connections_rejected_total",
                                              "Admin API connections closed right after accept because "
                                              "--admin-max-connections were open.")
                                     .get()),
      memory_bytes(registry_
                       .gauge("faultline_memory_bytes",
                              "The proxy's resident memory as last sampled (bytes; what --max-memory compares).")
                       .get()),
      requests_(registry_.counter("faultline_requests_total",
                                  "Requests handled by the proxy, by Kubernetes verb, resource "
                                  "and the status the client saw (\"none\": connection cut).",
                                  {"verb", "resource", "code"})),
      faults_fired_(registry_.counter("faultline_faults_fired_total",
                                      "Fault actions carried out, by rule and action type.", {"rule", "action"})),
      watch_events_held_(registry_.counter("faultline_watch_events_held_total",
                                           "Watch events a watch-delay or watch-coalesce rule relayed late (delayed) "
                                           "or left out (withheld), by rule, action and outcome; counted when the "
                                           "watch ends.",
                                           {"rule", "action", "outcome"})),
      rule_matched_(registry_.counter("faultline_rule_matched_total",
                                      "Requests selected by a rule's match clause, by rule.", {"rule"})),
      held_(registry_.counter("faultline_held_requests_total",
                              "Requests a hold rule held, by rule and what became of them (forwarded, reset, "
                              "answered, gave-up: the client went away while held; not-held: the bound of held "
                              "requests was reached, forwarded at once).",
                              {"rule", "outcome"})),
      stale_reads_(registry_.counter("faultline_stale_reads_total",
                                     "LISTs a stale-read rule acted on, by rule and outcome (served, expired, "
                                     "refused, unrecorded).",
                                     {"rule", "outcome"})),
      memory_refusals_(registry_.counter("faultline_memory_refusals_total",
                                         "New work refused to keep memory bounded (HTTP/2 streams: "
                                         "REFUSED_STREAM; HTTP/1.1 requests: 503), by reason.",
                                         {"reason"})),
      refused_header_memory_(memory_refusals_.with({"h2-header-memory"})),
      refused_max_memory_(memory_refusals_.with({"max-memory"})),
      upstream_latency_(registry_
                            .histogram("faultline_upstream_latency_seconds",
                                       "Time from forwarding a request to receiving the "
                                       "apiserver's response headers.",
                                       latency_buckets())
                            .get()) {}

void ProxyMetrics::memory_refused(std::string_view reason) {
  (reason == "max-memory" ? refused_max_memory_ : refused_header_memory_).inc();
}

namespace {

// The verbs a request can have: Kubernetes' (RequestInfo; "" for a resource request whose method
// maps to none) and, outside the API, the methods of RFC 9110 and PATCH, lower-cased.
bool known_verb(std::string_view verb) {
  static constexpr std::array<std::string_view, 16> kVerbs = {
      "get",   "list",    "watch", "create", "update", "patch",   "delete", "deletecollection",
      "proxy", "connect", "post",  "put",    "head",   "options", "trace",  ""};
  return std::find(kVerbs.begin(), kVerbs.end(), verb) != kVerbs.end();
}

}  // namespace

void ProxyMetrics::request_done(std::string_view verb, std::string_view resource, int code) {
  // The series of this thread's last request: a connection mostly repeats the request before it,
  // and then the verb check, the resource set and the family's map are not searched again. Series
  // are never removed, and `id_` tells this object from an earlier one at the same address.
  struct Last {
    std::uint64_t owner = 0;
    std::string verb, resource;
    int code = 0;
    metrics::Counter* series = nullptr;
  };
  thread_local Last last;
  if (last.owner == id_ && last.code == code && last.verb == verb && last.resource == resource) {
    last.series->inc();
    return;
  }
  metrics::Counter& series = requests_series(verb, resource, code);
  series.inc();
  if (resource.size() <= kMaxResourceBytes && verb.size() <= kMaxResourceBytes)
    last = {id_, std::string(verb), std::string(resource), code, &series};
}

metrics::Counter& ProxyMetrics::requests_series(std::string_view verb, std::string_view resource, int code) {
  if (!known_verb(verb)) verb = kOtherResource;
  std::string_view label = resource;
  if (resource.size() > kMaxResourceBytes) {
    label = kOtherResource;
  } else {
    std::shared_lock known(resources_mutex_);
    if (!resources_.contains(resource)) {
      known.unlock();
      std::unique_lock add(resources_mutex_);
      if (resources_.size() < kMaxResources) resources_.emplace(resource);
      else if (!resources_.contains(resource)) label = kOtherResource;
    }
  }
  return requests_.with({std::string(verb), std::string(label), code > 0 ? std::to_string(code) : "none"});
}

void ProxyMetrics::rule_matched(std::string_view rule) { rule_matched_.with({std::string(rule)}).inc(); }

void ProxyMetrics::watch_events_held(std::string_view rule, std::string_view action, std::uint64_t delayed,
                                     std::uint64_t withheld) {
  if (delayed > 0) watch_events_held_.with({std::string(rule), std::string(action), "delayed"}).inc(delayed);
  if (withheld > 0) watch_events_held_.with({std::string(rule), std::string(action), "withheld"}).inc(withheld);
}

void ProxyMetrics::fault_fired(std::string_view rule, std::string_view action) {
  faults_fired_.with({std::string(rule), std::string(action)}).inc();
}

void ProxyMetrics::request_held(std::string_view rule, std::string_view outcome) {
  held_.with({std::string(rule), std::string(outcome)}).inc();
}

void ProxyMetrics::stale_read(std::string_view rule, std::string_view outcome) {
  stale_reads_.with({std::string(rule), std::string(outcome)}).inc();
}

void ProxyMetrics::upstream_latency(std::chrono::nanoseconds latency) {
  upstream_latency_.observe(std::chrono::duration<double>(latency).count());
}

}  // namespace faultline::admin
