// The stall action is plain data: the proxy carries it out, the registry parses it.
#include "faultline/faults/actions/stall.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::detail {

actions::Stall parse_stall(MapReader& reader) {
  actions::Stall stall;
  if (auto duration = positive_duration(reader, "duration", true)) stall.duration = *duration;
  return stall;
}

}  // namespace faultline::faults::detail
