#include <algorithm>
#include <set>

#include "sections.hpp"

namespace faultline::harness::schema::detail {
namespace {

template <std::size_t N>
std::optional<std::size_t> choose(MapReader& reader, std::string_view key,
                                  const std::array<std::string_view, N>& names) {
  auto text = reader.choice(key, std::vector<std::string_view>(names.begin(), names.end()), true);
  if (!text) return std::nullopt;
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), *text) - names.begin());
}

void parse_when(MapReader& parent, ComponentFault& fault) {
  YAML::Node node = parent.take("when");
  if (!node.IsDefined() || node.IsNull()) return;
  MapReader reader(node, parent.path_of("when"), parent.errors());
  if (!reader.valid()) return;
  if (auto at = reader.duration("at")) fault.at = *at;
  auto after = reader.count("afterMatches", 1);
  YAML::Node of = reader.take("of");
  if (after && !of.IsDefined()) reader.missing("of");
  if (!reader.has("afterMatches") && of.IsDefined()) reader.error_at("of", "only meaningful with afterMatches");
  if (after && of.IsDefined()) {
    MapReader of_reader(of, reader.path_of("of"), reader.errors());
    if (of_reader.valid()) {
      Trigger trigger{*after, parse_match(of_reader)};
      // The harness counts requests in the proxy's audit log, which records no headers.
      if (!trigger.of.headers.empty())
        of_reader.error_at("headers", "cannot be counted: the proxy's audit log records no headers");
      fault.trigger = std::move(trigger);
    }
  }
  reader.finish();
}

std::optional<ComponentFault> parse_fault(const YAML::Node& node, const std::string& path, Errors& errors) {
  MapReader reader(node, path, errors);
  if (!reader.valid()) return std::nullopt;
  ComponentFault fault;
  if (auto name = reader.string("name", true)) fault.name = *name;
  auto target = choose(reader, "target", component_names);
  if (target) fault.target = static_cast<Component>(*target);
  auto action = choose(reader, "action", component_action_names);
  if (action) fault.action = static_cast<ComponentAction>(*action);
  if (auto down = reader.duration("downFor")) {
    if (down->count() <= 0) reader.error_at("downFor", "must be greater than 0");
    else fault.down_for = *down;
  }
  parse_when(reader, fault);
  if (action) {
    bool takes_down_for = fault.action == ComponentAction::kill || fault.action == ComponentAction::pause;
    if (fault.action == ComponentAction::kill && !reader.has("downFor"))
      reader.error_at("downFor", "kill needs downFor: how long the component stays down before it is started again");
    if (!takes_down_for && reader.has("downFor"))
      reader.error_at("downFor", "only kill and pause take downFor, not " + std::string(name_of(fault.action)));
    if (target)
      if (auto problem = component_action_problem(fault.target, fault.action); !problem.empty())
        reader.error_at("action", problem);
  }
  reader.finish();
  if (!target || !action) return std::nullopt;
  return fault;
}

}  // namespace

std::vector<ComponentFault> parse_component_faults(const YAML::Node& node, const std::string& path, Errors& errors) {
  std::vector<std::size_t> item;  // the list index of each fault kept
  std::vector<ComponentFault> faults = parse_named_list<ComponentFault>(node, path, errors, "name", parse_fault, &item);
  // A pause without downFor lasts until a resume: without one the component would stay stopped.
  for (std::size_t i = 0; i < faults.size(); ++i) {
    const ComponentFault& f = faults[i];
    if (f.action != ComponentAction::pause || f.down_for) continue;
    bool resumed = std::any_of(faults.begin(), faults.end(), [&](const ComponentFault& other) {
      return other.action == ComponentAction::resume && other.target == f.target;
    });
    if (!resumed)
      errors.add(node[item[i]]["action"].Mark(), path + "[" + std::to_string(item[i]) + "].action",
                 "a pause without downFor needs a resume of " + std::string(name_of(f.target)) + " in " + path);
  }
  return faults;
}

}  // namespace faultline::harness::schema::detail
