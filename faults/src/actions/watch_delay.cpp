#include "faultline/faults/actions/watch_delay.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

WatchDelay WatchDelay::parse(detail::MapReader& reader) {
  WatchDelay delay;
  if (auto duration = reader.bounded_duration("duration", max_duration, true)) delay.duration = *duration;
  return delay;
}

}  // namespace faultline::faults::actions
