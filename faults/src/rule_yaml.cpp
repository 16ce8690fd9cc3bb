#include <algorithm>

#include "actions/parse.hpp"
#include "scenario_parse.hpp"

namespace faultline::faults::detail {
namespace {

Match parse_match_at(MapReader& parent, std::string_view key) {
  YAML::Node node = parent.take(key);
  if (!node.IsDefined() || node.IsNull()) return {};
  MapReader reader(node, parent.path_of(key), parent.errors());
  return reader.valid() ? parse_match(reader) : Match{};
}

void parse_trigger(MapReader& reader, When& when, const Match& rule_match) {
  auto after = reader.count("afterMatches", 1);
  bool has_of = reader.has("of");
  Match of = parse_match_at(reader, "of");
  if (after) when.trigger = Trigger{*after, has_of ? of : rule_match};
  else if (has_of && !reader.has("afterMatches")) reader.error_at("of", "only meaningful with afterMatches");
}

When parse_when(MapReader& parent, const Match& rule_match) {
  When when;
  YAML::Node node = parent.take("when");
  if (!node.IsDefined() || node.IsNull()) return when;
  MapReader reader(node, parent.path_of("when"), parent.errors());
  if (!reader.valid()) return when;
  if (auto at = reader.duration("at")) when.at = *at;
  when.for_ = positive_duration(reader, "for");
  parse_trigger(reader, when, rule_match);
  if (auto p = reader.number("probability")) {
    if (*p < 0 || *p > 1)
      reader.error_at("probability", "must be between 0 and 1, got " + reader.take("probability").Scalar());
    else when.probability = *p;
  }
  when.limit = reader.count("limit", 1);
  when.every = reader.count("every", 1);
  when.repeat = positive_duration(reader, "repeat");
  if (when.repeat && !when.for_ && !reader.has("for"))
    reader.error_at("repeat", "needs when.for, the length of each window (shorter than repeat)");
  else if (when.repeat && when.for_ && *when.for_ >= *when.repeat)
    reader.error_at("for", "must be shorter than when.repeat (" + format_duration(*when.repeat) +
                               "): a window closes before the next one opens");
  reader.finish();
  return when;
}

// Checks that need both the action and the rest of the rule.
void check_action_fits_rule(MapReader& rule, const Rule& parsed, bool action_ok) {
  if (!action_ok) return;
  std::string type(action_type(parsed.action));
  if (auto* outage = std::get_if<actions::Outage>(&parsed.action); outage && !outage->duration && !parsed.when.for_)
    rule.error_at("action", "outage needs a duration (action.duration or when.for)");
  if (auto* outage = std::get_if<actions::Outage>(&parsed.action);
      outage && outage->duration && parsed.when.repeat && *outage->duration >= *parsed.when.repeat)
    rule.error_at("action", "outage duration must be shorter than when.repeat (" +
                                format_duration(*parsed.when.repeat) + "): one outage ends before the next window");
  // An action that acts on one verb's requests only, in a rule whose match.verbs leaves that verb out.
  const auto& verbs = parsed.match.verbs;
  const auto refuse_without = [&](std::string_view verb, const std::string& what) {
    if (verbs.empty() || std::find(verbs.begin(), verbs.end(), verb) != verbs.end() ||
        std::find(verbs.begin(), verbs.end(), "*") != verbs.end())
      return;
    rule.errors().add(rule.take("match")["verbs"].Mark(), rule.path_of("match.verbs"),
                      what + ", but verbs does not include " + std::string(verb));
  };
  if (is_watch_action(parsed.action)) refuse_without("watch", type + " acts on watch streams");
  if (std::holds_alternative<actions::StaleRead>(parsed.action))
    refuse_without("list", "stale-read acts on LIST requests");
}

std::optional<Rule> parse_rule(const YAML::Node& node, const std::string& path, Errors& errors) {
  MapReader reader(node, path, errors);
  if (!reader.valid()) return std::nullopt;
  Rule rule;
  if (auto name = reader.string("name", true)) rule.name = *name;
  rule.match = parse_match_at(reader, "match");
  rule.when = parse_when(reader, rule.match);
  std::optional<Action> action;
  YAML::Node action_node = reader.take("action");
  if (!action_node.IsDefined()) {
    reader.missing("action");
  } else {
    MapReader action_reader(action_node, reader.path_of("action"), errors);
    action = parse_action(action_reader);
    action_reader.finish();
  }
  if (action) rule.action = *action;
  check_action_fits_rule(reader, rule, action.has_value());
  reader.finish();
  return rule;
}

}  // namespace

std::vector<Rule> parse_faults(const YAML::Node& node, const std::string& path, Errors& errors) {
  return parse_named_list<Rule>(node, path, errors, "rule name", parse_rule);
}

}  // namespace faultline::faults::detail
