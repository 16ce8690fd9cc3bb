// watch-inject: after N relayed events, insert a synthetic event (by default the last object
// again, as DELETED, without a deletionTimestamp). The stream goes on afterwards.
#include "faultline/proxy/disposition.hpp"

#include <spdlog/spdlog.h>

#include "faultline/proxy/watch_stream.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchInjectFilter final : public WatchFilter {
 public:
  explicit WatchInjectFilter(faults::actions::WatchInject action) : action_(std::move(action)) {}

  Step on_start() override {
    if (action_.after_events == 0) return inject({});
    return {};
  }
  Step on_event(std::string_view event) override {
    ++seen_;
    if (auto object = watch_event_object(event)) last_object_ = std::move(*object);
    if (!acted_ && !gave_up_ && seen_ >= action_.after_events) return inject(event);
    return pass(event);
  }

 private:
  Step inject(std::string_view event) {
    Step step;
    if (!event.empty()) step.emit.emplace_back(event);
    auto synthetic = action_.render_event(last_object_);
    if (!synthetic) {
      spdlog::error("watch-inject: no object to inject (no template and no usable last object)");
      gave_up_ = true;
      return step;
    }
    acted_ = true;
    step.emit.push_back(std::move(*synthetic));
    return step;
  }

  faults::actions::WatchInject action_;
  std::uint64_t seen_ = 0;
  std::string last_object_;
  bool gave_up_ = false;
};

}  // namespace

Disposition watch_inject(const faults::actions::WatchInject& action) {
  Disposition d;
  d.watch_filter = std::make_unique<WatchInjectFilter>(action);
  d.json_upstream = true;
  return d;
}

}  // namespace faultline::proxy::actions
