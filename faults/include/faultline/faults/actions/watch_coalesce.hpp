#pragma once
// watch-coalesce: of the events for one object (namespace/name, or uid) within `window` of the first
// of them, only the last reaches the client, when the window ends; the client never sees the states
// in between.

#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchCoalesce {
  static constexpr std::string_view type = "watch-coalesce";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchCoalesce parse(detail::MapReader& reader);
  static constexpr Duration max_window{std::chrono::minutes(10)};
  enum class Key { name, uid };  // what makes two events "for one object"
  Duration window{0};            // required, > 0
  Key by = Key::name;
};

}  // namespace faultline::faults::actions
