// The close action has no attributes: the proxy carries it out, the registry parses it.
#include "faultline/faults/actions/close.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::detail {

actions::Close parse_close(MapReader&) { return {}; }

}  // namespace faultline::faults::detail
