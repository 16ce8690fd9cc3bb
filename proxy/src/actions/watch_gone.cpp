// watch-gone: after N relayed events, send an ERROR event with a 410 Expired Status and end the
// stream, as kube-apiserver does when the watch's resourceVersion is too old. The client must
// relist.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchGoneFilter final : public WatchFilter {
 public:
  explicit WatchGoneFilter(faults::actions::WatchGone action) : action_(std::move(action)) {}

  Step on_start() override { return action_.after_events == 0 ? gone({}) : Step{}; }
  Step on_event(std::string_view event) override {
    if (++seen_ >= action_.after_events) return gone(event);
    return pass(event);
  }

 private:
  Step gone(std::string_view last_event) {
    acted_ = true;
    Step step;
    if (!last_event.empty()) step.emit.emplace_back(last_event);
    step.emit.push_back(action_.render_event());
    step.end = End::clean;
    return step;
  }

  faults::actions::WatchGone action_;
  std::uint64_t seen_ = 0;
};

}  // namespace

Disposition watch_gone(const faults::actions::WatchGone& action) {
  Disposition d;
  d.watch_filter = std::make_unique<WatchGoneFilter>(action);
  d.json_upstream = true;
  return d;
}

}  // namespace faultline::proxy::actions
