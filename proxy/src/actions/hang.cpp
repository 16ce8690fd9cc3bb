// hang: read the request, never answer; after the duration (if any) close the connection.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition hang(const faults::actions::Hang& action) {
  Disposition d;
  d.forward = false;
  d.hang = true;
  d.hang_for = action.duration;
  return d;
}

}  // namespace faultline::proxy::actions
