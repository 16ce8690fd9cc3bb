// reset: instead of answering, reset the client's connection (HTTP/2: its stream) with RST.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Reset&, const faults::Plan&) {
  return sequence(effect::CutOff{Cut::reset});
}

}  // namespace faultline::proxy::actions
