#pragma once
// watch-drop: silently leave events out of a watch stream (the client misses them).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchDrop {
  static constexpr std::string_view type = "watch-drop";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchDrop parse(detail::MapReader& reader);
  std::vector<std::string> events{"ADDED", "MODIFIED", "DELETED"};  // event types to drop
  std::uint64_t after_events = 0;                                   // relay this many events untouched first
  std::optional<std::uint64_t> count;  // drop at most this many (nullopt: all while the stream lives)

  bool drops(std::string_view event_type) const;
};

}  // namespace faultline::faults::actions
