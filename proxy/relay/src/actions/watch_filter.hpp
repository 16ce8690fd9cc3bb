#pragma once
// What the watch actions (the fault actions with state, one file each in this folder) share: their
// effect is a filter of the watch stream.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "actions/effects_of.hpp"

namespace faultline::proxy::actions {

// Acts on the stream by `filter`; counting and changing events needs JSON framing upstream.
inline Effects filter_watch(std::unique_ptr<WatchFilter> filter, bool json_upstream = true) {
  return sequence(effect::FilterWatch{std::move(filter), json_upstream});
}

// A filter for `Action` that acts once, right after its `after_events`-th relayed event (before the
// first when it is 0, never on an event count when it is nullopt). The event that triggers it still
// reaches the client first.
template <typename Action>
class ActAfterEvents : public WatchFilter {
 public:
  explicit ActAfterEvents(Action action) : action_(std::move(action)), after_events_(action_.after_events) {}

  Step on_start() final { return after_events_ == 0u ? act_once({}) : Step{}; }
  Step on_event(std::string_view event) final {
    ++seen_;
    observe(event);
    if (after_events_ && seen_ >= *after_events_) return act_once(event);
    return pass(event);
  }

 protected:
  // Sees every event from upstream before the count is checked.
  virtual void observe(std::string_view /*event*/) {}
  // What the action does; `step` already carries the triggering event (if any).
  virtual void act(Step& step) = 0;

  const Action action_;

 private:
  Step act_once(std::string_view event) {
    if (done_) return pass(event);
    done_ = true;
    Step step;
    if (!event.empty()) step.emit.emplace_back(event);
    act(step);
    return step;
  }

  std::optional<std::uint64_t> after_events_;
  std::uint64_t seen_ = 0;
  bool done_ = false;
};

}  // namespace faultline::proxy::actions
