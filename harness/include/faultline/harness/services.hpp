#pragma once
// The two HTTP services the harness reads besides the apiserver: the proxy's admin API (scenario,
// arm/disarm, rule counters, audit log) and YuniKorn's REST API (queues, applications, nodes).
#include <cstdint>
#include <string>
#include <vector>

#include "faultline/harness/observations.hpp"
#include "faultline/harness/report.hpp"

namespace faultline::harness {

class ProxyAdmin {
public:
    ProxyAdmin(std::string baseUrl, std::string bearerToken);

    // PUT /v1/scenario; throws with the proxy's errors when it refuses the scenario.
    void put_scenario(const std::string& yaml);
    void arm();
    void disarm();
    std::vector<FaultCounter> rules();
    // The newest sequence number so far (records after it belong to this run).
    std::uint64_t audit_head();
    // Appends records after `since` (following `more`), advancing `since`; malformed lines are
    // counted in `out` and skipped. Throws when records were evicted from the proxy's memory (a
    // gap would hide deletes).
    void read_audit(std::uint64_t& since, audit::DecodedLines& out);

    const std::string& url() const { return base_; }

private:
    std::string base_;
    std::string token_;
};

// GET queues, applications/active and nodes of the partition. fullStateDump (if non-null) gets
// the raw /ws/v1/fullstatedump text (kept as evidence next to the reports).
YunikornSnapshot take_yunikorn_snapshot(const std::string& baseUrl, std::string* fullStateDump = nullptr,
                                        const std::string& partition = "default");

}  // namespace faultline::harness
