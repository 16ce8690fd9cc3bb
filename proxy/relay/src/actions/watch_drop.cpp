// watch-drop: leave events of the given types out of the stream (after N untouched, at most
// `count`), so the client silently misses them.
#include "actions/watch_filter.hpp"
#include "faultline/proxy/watch_stream.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchDropFilter final : public WatchFilter {
 public:
  explicit WatchDropFilter(faults::actions::WatchDrop action) : action_(std::move(action)) {}

  Step on_event(std::string_view event) override {
    if (seen_++ < action_.after_events) return pass(event);
    if (action_.count && dropped_ >= *action_.count) return pass(event);
    auto type = watch_event_type(event);
    if (!type || !action_.drops(*type)) return pass(event);
    ++dropped_;
    acted_ = true;
    return {};
  }

 private:
  faults::actions::WatchDrop action_;
  std::uint64_t seen_ = 0;
  std::uint64_t dropped_ = 0;
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchDrop& action, const faults::Plan&) {
  return filter_watch(std::make_unique<WatchDropFilter>(action));
}

}  // namespace faultline::proxy::actions
