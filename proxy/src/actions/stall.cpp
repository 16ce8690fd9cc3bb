// stall: the client connection sends and reads nothing for the duration, then the request is
// forwarded (HTTP/2: no frames, no PING ACKs; HTTP/1.1: the one request waits, as with delay).
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition stall(const faults::actions::Stall& action) {
  Disposition d;
  d.stall_for = action.duration;
  return d;
}

}  // namespace faultline::proxy::actions
