#pragma once
// hold: matching requests are held, not forwarded, until `count` of them are held or the first of
// them has waited `duration`; then the whole batch is released at once: forwarded together, reset,
// or answered with a Status, as `then` says. The batch is the rule's (one per rule, across
// connections and protocols), so a race is set up the same way in every run.

#include <cstdint>
#include <optional>
#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"
#include "faultline/faults/actions/respond.hpp"

namespace faultline::faults::actions {

struct Hold {
  static constexpr std::string_view type = "hold";
  static Hold parse(detail::MapReader& reader);
  // Bounds: a batch holds at most kMaxCount requests and waits at most kMaxDuration.
  static constexpr std::uint64_t kMaxCount = 1000;
  static constexpr Duration kMaxDuration = std::chrono::minutes(10);
  enum class Then {
    forward,  // the batch is forwarded upstream together
    reset,    // every held request's connection (HTTP/1.1) or stream (HTTP/2) is reset
    respond,  // every held request is answered with a Status (`code`, `message`)
  };
  // At least one of the two (validation): nullopt count holds until `duration`; nullopt duration
  // holds until `count` are held, for at most kMaxDuration.
  std::optional<std::uint64_t> count;
  std::optional<Duration> duration;
  Then then = Then::forward;
  Respond respond{503, "", "", std::nullopt};  // then: respond

  std::uint64_t batch_size() const { return count.value_or(kMaxCount); }
  Duration wait() const { return duration.value_or(kMaxDuration); }
};

std::string_view to_string(Hold::Then then);

}  // namespace faultline::faults::actions
