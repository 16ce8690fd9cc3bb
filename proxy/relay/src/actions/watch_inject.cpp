// watch-inject: after N relayed events, insert a synthetic event (by default the last object
// again, as DELETED, without a deletionTimestamp). The stream goes on afterwards.
#include <spdlog/spdlog.h>

#include "actions/watch_filter.hpp"
#include "faultline/proxy/watch_stream.hpp"

namespace faultline::proxy::actions {
namespace {

class WatchInjectFilter final : public ActAfterEvents<faults::actions::WatchInject> {
 public:
  using ActAfterEvents::ActAfterEvents;

 private:
  void observe(std::string_view event) override {
    if (auto object = watch_event_object(event)) last_object_ = std::move(*object);
  }
  void act(Step& step) override {
    auto synthetic = action_.render_event(last_object_);
    if (!synthetic) {
      spdlog::error("watch-inject: no object to inject (no template and no usable last object)");
      return;
    }
    acted_ = true;
    step.emit.push_back(std::move(*synthetic));
  }

  std::string last_object_;
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchInject& action, const faults::Plan&) {
  return filter_watch(std::make_unique<WatchInjectFilter>(action));
}

}  // namespace faultline::proxy::actions
