// reset: abort the client's TCP connection with RST (SO_LINGER 0) instead of answering.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition reset() {
  Disposition d;
  d.forward = false;
  d.cut = Cut::reset;
  return d;
}

}  // namespace faultline::proxy::actions
