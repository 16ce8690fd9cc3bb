#pragma once
// A listener whose accept fails (out of file descriptors, above all: every proxied connection holds
// two) gets the same error again at once: retrying without a pause spins and floods the log while
// the connections waiting in the backlog get nowhere. Both listeners of faultline-proxy (relay and
// admin API) retry after kAcceptRetry and report at most once per 5 s.

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

namespace faultline::net {

inline constexpr std::chrono::milliseconds kAcceptRetry{50};

class AcceptFailures {
 public:
  // Counts one failure. Returns how many failed since the last report when a report is due.
  std::optional<std::uint64_t> count(std::chrono::steady_clock::time_point now) {
    ++unreported_;
    if (reported_ && now - *reported_ < kReportEvery) return std::nullopt;
    reported_ = now;
    return std::exchange(unreported_, 0);
  }

 private:
  static constexpr std::chrono::seconds kReportEvery{5};
  std::uint64_t unreported_ = 0;
  std::optional<std::chrono::steady_clock::time_point> reported_;
};

}  // namespace faultline::net
