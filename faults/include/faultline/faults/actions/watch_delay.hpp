#pragma once
// watch-delay: every event of a watch stream reaches the client `duration` after the proxy received
// it, in the original order (bookmarks too).

#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchDelay {
  static constexpr std::string_view type = "watch-delay";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchDelay parse(detail::MapReader& reader);
  // The longest delay a scenario may ask for: events held longer pile up in the proxy's memory.
  static constexpr Duration max_duration{std::chrono::minutes(10)};
  Duration duration{0};  // required, > 0
};

}  // namespace faultline::faults::actions
