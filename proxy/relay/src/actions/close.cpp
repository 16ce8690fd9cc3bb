// close: instead of answering, close the client's connection (HTTP/2: its stream) with FIN.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::Close&, const faults::Plan&) {
  return sequence(effect::CutOff{Cut::close});
}

}  // namespace faultline::proxy::actions
