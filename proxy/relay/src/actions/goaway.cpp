// goaway: end the client's connection the HTTP/2 way. Graceful: GOAWAY naming this stream as the
// last one taken, which is forwarded (HTTP/1.1: forwarded, answered with Connection: close).
// Abrupt: the connection ends at once, this request unanswered.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::GoAway& action, const faults::Plan&) {
  return sequence(effect::EndConnection{action.mode == faults::actions::GoAway::Mode::graceful, action.error_code});
}

}  // namespace faultline::proxy::actions
