// delay: hold the request for the latency the engine resolved (jitter included), then forward.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {

Disposition delay(const faults::Plan& plan) {
  Disposition d;
  d.wait_before = plan.delay;
  return d;
}

}  // namespace faultline::proxy::actions
