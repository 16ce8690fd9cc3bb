// Dispatch from the engine's Plan to the one file per action that knows how to carry it out.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy {
namespace fa = faults::actions;

Disposition dispose(const faults::Plan& plan) {
  if (!plan.action) return {};
  struct Visitor {
    const faults::Plan& plan;
    Disposition operator()(const fa::Respond&) const { return actions::respond(plan); }
    Disposition operator()(const fa::Reset&) const { return actions::reset(); }
    Disposition operator()(const fa::Close&) const { return actions::close(); }
    Disposition operator()(const fa::Delay&) const { return actions::delay(plan); }
    Disposition operator()(const fa::Hang& a) const { return actions::hang(a); }
    Disposition operator()(const fa::DropResponse& a) const { return actions::drop_response(a); }
    Disposition operator()(const fa::Outage& a) const { return actions::outage(a); }
    Disposition operator()(const fa::WatchReset& a) const { return actions::watch_reset(a); }
    Disposition operator()(const fa::WatchGone& a) const { return actions::watch_gone(a); }
    Disposition operator()(const fa::WatchInject& a) const { return actions::watch_inject(a); }
    Disposition operator()(const fa::WatchDrop& a) const { return actions::watch_drop(a); }
    Disposition operator()(const fa::GoAway& a) const { return actions::goaway(a); }
    Disposition operator()(const fa::Stall& a) const { return actions::stall(a); }
  };
  return std::visit(Visitor{plan}, *plan.action);
}

}  // namespace faultline::proxy
