#include "faultline/faults/actions/watch_inject.hpp"

#include <boost/json.hpp>

#include "faultline/faults/status.hpp"

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
  std::optional<std::string> object =
      object_json ? object_json : without_deletion_timestamp(last_object_json);
  if (!object) return std::nullopt;
  return R"({"type":)" + go_json_string(event) + R"(,"object":)" + *object + "}\n";
}

}  // namespace faultline::faults::actions

#include <charconv>

#include "actions/parse.hpp"

namespace faultline::faults::detail {
namespace {

// A plain (unquoted) YAML scalar keeps its YAML 1.2 core-schema type; quoted ones stay strings.
boost::json::value scalar_to_json(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") return boost::json::string(text);
  if (text == "true" || text == "false") return text == "true";
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  std::int64_t integer = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
  if (ec == std::errc() && end == text.data() + text.size()) return integer;
  double real = 0;
  auto [end2, ec2] = std::from_chars(text.data(), text.data() + text.size(), real);
  if (ec2 == std::errc() && end2 == text.data() + text.size()) return real;
  return boost::json::string(text);
}

boost::json::value yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    boost::json::object object;
    for (auto entry : node) object[entry.first.Scalar()] = yaml_to_json(entry.second);
    return object;
  }
  if (node.IsSequence()) {
    boost::json::array array;
    for (auto item : node) array.push_back(yaml_to_json(item));
    return array;
  }
  if (node.IsScalar()) return scalar_to_json(node);
  return nullptr;
}

}  // namespace

actions::WatchInject parse_watch_inject(MapReader& reader) {
  actions::WatchInject inject;
  if (auto event = reader.choice("event", {"ADDED", "MODIFIED", "DELETED"})) inject.event = *event;
  if (auto after = reader.count("afterEvents", 0)) inject.after_events = *after;
  YAML::Node object = reader.take("object");
  if (object.IsDefined()) {
    if (object.IsMap()) inject.object_json = boost::json::serialize(yaml_to_json(object));
    else reader.error_at("object", "expected a mapping, got " + describe(object));
  }
  return inject;
}

}  // namespace faultline::faults::detail
