// close: end the client's connection cleanly (FIN) without answering.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition close() {
  Disposition d;
  d.forward = false;
  d.cut = Cut::close;
  return d;
}

}  // namespace faultline::proxy::actions
