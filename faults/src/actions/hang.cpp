#include "faultline/faults/actions/hang.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

Hang Hang::parse(detail::MapReader& reader) {
  Hang hang;
  hang.duration = detail::positive_duration(reader, "duration");
  return hang;
}

}  // namespace faultline::faults::actions
