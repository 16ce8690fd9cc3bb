#include "faultline/faults/actions/stall.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

Stall Stall::parse(detail::MapReader& reader) {
  Stall stall;
  if (auto duration = detail::positive_duration(reader, "duration", true)) stall.duration = *duration;
  return stall;
}

}  // namespace faultline::faults::actions
