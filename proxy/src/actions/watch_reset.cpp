// watch-reset: cut a watch stream after N events or after a time, whichever comes first, with a
// RST or with a clean end of the chunked response.
#include "faultline/proxy/disposition.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchResetFilter final : public WatchFilter {
 public:
  explicit WatchResetFilter(faults::actions::WatchReset action) : action_(std::move(action)) {}

  Step on_start() override {
    if (action_.after_events && *action_.after_events == 0) return cut({});
    return {};
  }
  Step on_event(std::string_view event) override {
    ++seen_;
    if (action_.after_events && seen_ >= *action_.after_events) return cut(event);
    return pass(event);
  }
  std::optional<std::chrono::milliseconds> deadline() const override { return action_.after; }
  End at_deadline() const override { return end_mode(); }

 private:
  End end_mode() const {
    return action_.mode == faults::actions::WatchReset::Mode::close ? End::clean : End::reset;
  }
  // The N-th event still reaches the client; the stream ends right after it.
  Step cut(std::string_view last_event) {
    acted_ = true;
    Step step;
    if (!last_event.empty()) step.emit.emplace_back(last_event);
    step.end = end_mode();
    return step;
  }

  faults::actions::WatchReset action_;
  std::uint64_t seen_ = 0;
};

}  // namespace

Disposition watch_reset(const faults::actions::WatchReset& action) {
  Disposition d;
  d.watch_filter = std::make_unique<WatchResetFilter>(action);
  // Counting events needs framing; a pure time-based cut does not.
  d.json_upstream = action.after_events.has_value();
  return d;
}

}  // namespace faultline::proxy::actions
