#include "faultline/faults/actions/watch_reset.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

std::string_view to_string(WatchReset::Mode mode) { return mode == WatchReset::Mode::close ? "close" : "reset"; }

WatchReset WatchReset::parse(detail::MapReader& reader) {
  WatchReset reset;
  reset.after_events = reader.count("afterEvents", 1);
  reset.after = detail::positive_duration(reader, "after");
  if (auto mode = reader.choice("mode", {"reset", "close"}))
    reset.mode = *mode == "close" ? WatchReset::Mode::close : WatchReset::Mode::reset;
  if (reader.valid() && !reader.has("afterEvents") && !reader.has("after"))
    reader.errors().add(reader.node().Mark(), reader.path(), "watch-reset needs afterEvents or after");
  return reset;
}

}  // namespace faultline::faults::actions
