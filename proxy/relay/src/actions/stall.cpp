// stall: the client's connection sends and reads nothing for the duration, then the request is
// forwarded (HTTP/2: no frames, no PING ACKs; HTTP/1.1: the one request waits, as with delay).
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Stall& action, const faults::Plan&) {
  return sequence(effect::StallConnection{action.duration});
}

}  // namespace faultline::proxy::actions
