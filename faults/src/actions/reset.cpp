// The reset action has no attributes: the proxy carries it out, the registry parses it.
#include "faultline/faults/actions/reset.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::detail {

actions::Reset parse_reset(MapReader&) { return {}; }

}  // namespace faultline::faults::detail
