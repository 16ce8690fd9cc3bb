// drop-response: forward the request and let the apiserver carry it out, then lose the answer: the
// client sees a reset, a clean close or a hang instead, and never learns the write happened.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::DropResponse& action, const faults::Plan&) {
  using Then = faults::actions::DropResponse::Then;
  switch (action.then) {
    case Then::reset:
      return sequence(effect::DiscardResponse{}, effect::CutOff{Cut::reset});
    case Then::close:
      return sequence(effect::DiscardResponse{}, effect::CutOff{Cut::close});
    case Then::hang:
      break;
  }
  return sequence(effect::DiscardResponse{}, effect::Hold{});
}

}  // namespace faultline::proxy::actions
