#pragma once
// One fault rule: match (which requests), when (schedule and trigger), action (what happens).

#include <cstdint>
#include <optional>
#include <string>

#include "faultline/faults/action.hpp"
#include "faultline/faults/duration.hpp"
#include "faultline/faults/match.hpp"

namespace faultline::faults {

struct Trigger {
  std::uint64_t after_matches = 0;  // active once this many requests matching `of` were seen
  Match of;
};

struct When {
  Duration at{0};                      // window opens this long after arm()
  std::optional<Duration> for_;        // window length (from `at`, or from the trigger)
  std::optional<Trigger> trigger;      // afterMatches + of
  std::optional<double> probability;   // [0, 1], drawn from the rule's seeded RNG
  std::optional<std::uint64_t> limit;  // at most this many fires
  std::optional<std::uint64_t> every;  // fire on every Nth match within the window
  // The schedule starts over every `repeat`: period k begins at arm + at + k*repeat. A timed window
  // opens at the period's start, a triggered one once afterMatches `of` requests were seen in the
  // period; it lasts `for` (required, < repeat) and never past the period's end. `limit` and
  // `every` count per window.
  std::optional<Duration> repeat;
};

struct Rule {
  std::string name;
  Match match;
  When when;
  Action action;
};

}  // namespace faultline::faults
