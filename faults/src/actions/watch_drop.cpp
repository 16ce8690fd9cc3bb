#include "faultline/faults/actions/watch_drop.hpp"

#include "actions/parse.hpp"

#include <algorithm>

namespace faultline::faults::actions {

bool WatchDrop::drops(std::string_view event_type) const {
  return std::find(events.begin(), events.end(), event_type) != events.end();
}

WatchDrop WatchDrop::parse(detail::MapReader& reader) {
  WatchDrop drop;
  if (auto events = reader.string_list("events")) {
    static const std::vector<std::string_view> known{"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};
    for (std::size_t i = 0; i < events->size(); ++i)
      if (std::find(known.begin(), known.end(), (*events)[i]) == known.end())
        reader.errors().add(reader.take("events")[i].Mark(), reader.path_of("events") + "[" + std::to_string(i) + "]",
                            "must be one of " + detail::join(known) + ", got \"" + (*events)[i] + "\"");
    if (events->empty()) reader.error_at("events", "must list at least one event type");
    else drop.events = *events;
  }
  if (auto after = reader.count("afterEvents", 0)) drop.after_events = *after;
  drop.count = reader.count("count", 1);
  return drop;
}

}  // namespace faultline::faults::actions
