#include "faultline/faults/actions/watch_coalesce.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

WatchCoalesce WatchCoalesce::parse(detail::MapReader& reader) {
  WatchCoalesce coalesce;
  if (auto window = reader.bounded_duration("window", max_window, true)) coalesce.window = *window;
  if (auto by = reader.choice("by", {"name", "uid"}))
    coalesce.by = *by == "uid" ? WatchCoalesce::Key::uid : WatchCoalesce::Key::name;
  return coalesce;
}

}  // namespace faultline::faults::actions
