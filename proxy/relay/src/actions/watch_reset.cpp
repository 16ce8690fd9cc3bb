// watch-reset: cut a watch stream after N events or after a time, whichever comes first, with a
// RST or with a clean end of the chunked response. The N-th event still reaches the client.
#include "actions/watch_filter.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchResetFilter final : public ActAfterEvents<faults::actions::WatchReset> {
 public:
  using ActAfterEvents::ActAfterEvents;

  std::optional<std::chrono::milliseconds> deadline() const override { return action_.after; }
  End at_deadline() const override { return end_mode(); }

 private:
  End end_mode() const { return action_.mode == faults::actions::WatchReset::Mode::close ? End::clean : End::reset; }
  void act(Step& step) override {
    acted_ = true;
    step.end = end_mode();
  }
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchReset& action, const faults::Plan&) {
  // Counting events needs framing; a pure time-based cut does not.
  return filter_watch(std::make_unique<WatchResetFilter>(action), action.after_events.has_value());
}

}  // namespace faultline::proxy::actions
