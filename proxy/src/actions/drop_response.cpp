// drop-response: forward the request and let the apiserver carry it out, then lose the answer:
// the client sees a reset, a clean close or a hang instead, and never learns the write happened.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition drop_response(const faults::actions::DropResponse& action) {
  using Then = faults::actions::DropResponse::Then;
  Disposition d;
  d.discard_response = true;
  switch (action.then) {
    case Then::reset: d.cut = Cut::reset; break;
    case Then::close: d.cut = Cut::close; break;
    case Then::hang: d.hang = true; break;
  }
  return d;
}

}  // namespace faultline::proxy::actions
