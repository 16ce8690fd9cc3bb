// watch-delay: every event of the stream (bookmarks and errors too) is held for `duration` from the
// time it came from upstream, then relayed, in the upstream's order.
#include "actions/held_events.hpp"
#include "actions/watch_filter.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchDelayFilter final : public HoldingWatchFilter {
 public:
  explicit WatchDelayFilter(faults::actions::WatchDelay action) : action_(action) {}

  Step on_event(std::string_view event) override {
    if (!held_.fits(event.size())) return held_bound_reached(faults::actions::WatchDelay::type);
    held_.push(event, now_ + action_.duration);
    ++counts_.delayed;
    acted_ = true;
    return {};
  }

 private:
  faults::actions::WatchDelay action_;
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchDelay& action, const faults::Plan&) {
  return filter_watch(std::make_unique<WatchDelayFilter>(action));
}

}  // namespace faultline::proxy::actions
