// The hang action is plain data: the proxy carries it out, the registry parses it.
#include "faultline/faults/actions/hang.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::detail {

actions::Hang parse_hang(MapReader& reader) {
  actions::Hang hang;
  hang.duration = positive_duration(reader, "duration");
  return hang;
}

}  // namespace faultline::faults::detail
