// respond: answer in the apiserver's place with the Status the engine rendered (code, body,
// Retry-After); the request never reaches upstream.
#include "faultline/proxy/disposition.hpp"

#include <stdexcept>

namespace faultline::proxy::actions {

Disposition respond(const faults::Plan& plan) {
  if (!plan.response) throw std::logic_error("respond plan without a rendered response (rule " + plan.rule + ")");
  Disposition d;
  d.respond = *plan.response;
  d.forward = false;
  return d;
}

}  // namespace faultline::proxy::actions
