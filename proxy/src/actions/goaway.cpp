// goaway: end the client connection. HTTP/2: GOAWAY (graceful: this stream is the last one taken
// and is forwarded; abrupt: the connection ends at once). HTTP/1.1: graceful forwards and answers
// with Connection: close, abrupt closes without an answer.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition goaway(const faults::actions::GoAway& action) {
  Disposition d;
  bool graceful = action.mode == faults::actions::GoAway::Mode::graceful;
  d.goaway = Disposition::GoAway{graceful, action.error_code};
  if (!graceful) {
    d.forward = false;
    d.cut = Cut::close;
  }
  return d;
}

}  // namespace faultline::proxy::actions
