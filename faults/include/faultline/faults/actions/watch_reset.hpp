#pragma once
// watch-reset: cut a watch stream after N relayed events or after a time, whichever comes first.

#include <cstdint>
#include <optional>
#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchReset {
  static constexpr std::string_view type = "watch-reset";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchReset parse(detail::MapReader& reader);
  enum class Mode { reset, close };  // RST, or a clean end of the chunked stream
  std::optional<std::uint64_t> after_events;
  std::optional<Duration> after;
  Mode mode = Mode::reset;
};

std::string_view to_string(WatchReset::Mode mode);

}  // namespace faultline::faults::actions
