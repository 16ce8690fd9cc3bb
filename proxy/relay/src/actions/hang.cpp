// hang: read the request, never answer; after the duration (if any) close the connection.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Hang& action, const faults::Plan&) {
  return sequence(effect::Hold{action.duration});
}

}  // namespace faultline::proxy::actions
