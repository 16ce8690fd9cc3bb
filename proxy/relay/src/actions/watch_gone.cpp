// watch-gone: after N relayed events, send an ERROR event with a 410 Expired Status and end the
// stream, as kube-apiserver does when the watch's resourceVersion is too old. The client must
// relist.
#include "actions/watch_filter.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchGoneFilter final : public ActAfterEvents<faults::actions::WatchGone> {
 public:
  using ActAfterEvents::ActAfterEvents;

 private:
  void act(Step& step) override {
    acted_ = true;
    step.emit.push_back(action_.render_event());
    step.end = End::clean;
  }
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchGone& action, const faults::Plan&) {
  return filter_watch(std::make_unique<WatchGoneFilter>(action));
}

}  // namespace faultline::proxy::actions
