#pragma once
// The two HTTP services the harness reads besides the apiserver: the proxy's admin API (scenario,
// arm/disarm, rule counters, audit log) and YuniKorn's REST API (queues, applications, nodes).
// Coroutines on the caller's executor (faultline/harness/async.hpp). Answers are read within
// ReadLimits (LimitError past them).
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/limits.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/report.hpp"

namespace faultline::harness {

class ProxyAdmin {
 public:
  ProxyAdmin(std::string base_url, std::string bearer_token, ReadLimits limits = {});

  // PUT /v1/scenario; throws with the proxy's errors when it refuses the scenario.
  boost::asio::awaitable<void> put_scenario(std::string yaml);
  boost::asio::awaitable<void> arm();
  boost::asio::awaitable<void> disarm();
  boost::asio::awaitable<std::vector<FaultCounter>> rules();
  // GET /v1/rules: the rules, where each is in its schedule ("phase": scheduled, waiting, open,
  // closed, ended, disarmed; empty from a proxy that does not say) and whether an outage is in force.
  struct Activity {
    std::vector<FaultCounter> rules;
    std::vector<std::string> phases;  // of rules[i]
    bool outage = false;
  };
  boost::asio::awaitable<Activity> activity();
  // The newest sequence number so far (records after it belong to this run).
  boost::asio::awaitable<std::uint64_t> audit_head();
  // Appends records after `since` (following `more`), advancing `since`; malformed lines are
  // counted in `out` and skipped. Throws when records were evicted from the proxy's memory (a
  // gap would hide deletes), and LimitError when `out` would hold more than
  // limits.max_audit_records records.
  boost::asio::awaitable<void> read_audit(std::uint64_t& since, audit::DecodedLines& out);

  const std::string& url() const { return base_; }

 private:
  boost::asio::awaitable<PlainResponse> call(std::string method, std::string url, std::string body = {},
                                             std::string content_type = {});
  std::string base_;
  std::string token_;
  ReadLimits limits_;
};

// GET queues, applications/active and nodes of the partition. fullStateDump (if non-null) gets
// the raw /ws/v1/fullstatedump text (kept as evidence next to the reports).
boost::asio::awaitable<YunikornSnapshot> take_yunikorn_snapshot(std::string base_url,
                                                                std::string* full_state_dump = nullptr,
                                                                std::string partition = "default",
                                                                ReadLimits limits = {});

}  // namespace faultline::harness
