// watch-coalesce: the events for one object (namespace/name, or uid) are held from the first of
// them until `window` later; each newer one replaces the held one, so only the last reaches the
// client. Events are released in the upstream's order (a replacing event takes its place at the end
// of the queue, keeping its object's due time), so the resourceVersions the client sees only grow;
// a BOOKMARK or an ERROR is not held for itself but waits behind everything held before it, so a
// bookmark never tells the client it has seen a resourceVersion whose event is still held.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "actions/held_events.hpp"
#include "actions/watch_filter.hpp"

namespace faultline::proxy::actions {
namespace {

// "namespace/name" (or the uid) of the event's object; "" for a BOOKMARK, an ERROR or an event
// without one (they are never coalesced).
std::string object_key(std::string_view event, faults::actions::WatchCoalesce::Key by) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(event, ec);
  if (ec || !value.is_object()) return {};
  const auto& e = value.get_object();
  const auto* type = e.if_contains("type");
  if (!type || !type->is_string()) return {};
  if (type->get_string() == "BOOKMARK" || type->get_string() == "ERROR") return {};
  const auto* object = e.if_contains("object");
  if (!object || !object->is_object()) return {};
  const auto* metadata = object->get_object().if_contains("metadata");
  if (!metadata || !metadata->is_object()) return {};
  const auto& m = metadata->get_object();
  auto text = [&m](std::string_view field) -> std::string {
    const auto* v = m.if_contains(field);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  if (by == faults::actions::WatchCoalesce::Key::uid) return text("uid");
  std::string name = text("name");
  if (name.empty()) return {};
  return text("namespace") + "/" + name;
}

class WatchCoalesceFilter final : public HoldingWatchFilter {
 public:
  explicit WatchCoalesceFilter(faults::actions::WatchCoalesce action) : action_(action) {}

  Step on_event(std::string_view event) override {
    const std::string key = object_key(event, action_.by);
    if (!held_.fits(event.size(), key)) return held_bound_reached(faults::actions::WatchCoalesce::type);
    if (key.empty()) {
      held_.push(event, now_);  // due at once, behind what is held before it
      return {};
    }
    acted_ = true;
    if (held_.push(event, now_ + action_.window, key)) ++counts_.withheld;
    else ++counts_.delayed;
    return {};
  }

 private:
  faults::actions::WatchCoalesce action_;
  // counts_ (HoldingWatchFilter): delayed, objects' first events held for a window; withheld,
  // events replaced.
};

}  // namespace

template <>
Effects effects_of(const faults::actions::WatchCoalesce& action, const faults::Plan&) {
  return filter_watch(std::make_unique<WatchCoalesceFilter>(action));
}

}  // namespace faultline::proxy::actions
