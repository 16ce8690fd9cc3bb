#include "faultline/faults/actions/watch_inject.hpp"

#include <boost/json.hpp>

#include "actions/parse.hpp"
#include "faultline/faults/status.hpp"
#include "faultline/faults/yaml_load.hpp"

namespace faultline::faults::actions {
namespace {

std::optional<boost::json::object> parse_object(std::string_view json) {
  boost::system::error_code error;
  boost::json::value value = boost::json::parse(json, error);
  if (error || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

}  // namespace

std::optional<std::string> without_deletion_timestamp(std::string_view object_json) {
  auto object = parse_object(object_json);
  if (!object) return std::nullopt;
  if (auto* metadata = object->if_contains("metadata"); metadata && metadata->is_object()) {
    metadata->as_object().erase("deletionTimestamp");
    metadata->as_object().erase("deletionGracePeriodSeconds");
  }
  return boost::json::serialize(*object);
}

std::optional<std::string> WatchInject::render_event(std::string_view last_object_json) const {
  std::optional<std::string> object = object_json ? object_json : without_deletion_timestamp(last_object_json);
  if (!object) return std::nullopt;
  return R"({"type":)" + go_json_string(event) + R"(,"object":)" + *object + "}\n";
}

WatchInject WatchInject::parse(detail::MapReader& reader) {
  WatchInject inject;
  if (auto event = reader.choice("event", {"ADDED", "MODIFIED", "DELETED"})) inject.event = *event;
  if (auto after = reader.count("afterEvents", 0)) inject.after_events = *after;
  YAML::Node object = reader.take("object");
  if (object.IsDefined()) {
    if (object.IsMap()) inject.object_json = boost::json::serialize(detail::to_json(object));
    else reader.error_at("object", "expected a mapping, got " + detail::describe(object));
  }
  return inject;
}

}  // namespace faultline::faults::actions
