// stale-read: forward the LIST with its query rewritten to read at the resourceVersion of the plan
// (resourceVersionMatch=Exact); the answer, or kube-apiserver's error, is relayed as it is.
#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

template <>
Effects effects_of(const faults::actions::StaleRead&, const faults::Plan& plan) {
  return sequence(effect::ReadAsOf{plan.stale_target, plan.stale_resource_version});
}

}  // namespace faultline::proxy::actions
