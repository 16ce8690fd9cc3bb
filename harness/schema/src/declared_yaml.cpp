#include <algorithm>
#include <regex>

#include "faultline/faults/yaml_load.hpp"
#include "sections.hpp"

namespace faultline::harness::schema::detail {
namespace {

constexpr std::size_t max_selector_length = 1024;
constexpr std::size_t max_user_agents = 32;
constexpr std::size_t max_user_agent_length = 256;

// Each item of a list of field paths, reported at the item.
std::optional<FieldPath> path_at(const YAML::Node& node, const std::string& path, Errors& errors) {
  auto text = scalar_string(node, path, errors);
  if (!text) return std::nullopt;
  std::string problem;
  auto parsed = parse_field_path(*text, &problem);
  if (!parsed) errors.add(node.Mark(), path, problem);
  return parsed;
}

// A scalar as a field's value is compared: YAML 1.2's core schema types it (True is true, 03 is 3),
// then strings are their characters and numbers and booleans as JSON writes them. "" for null.
std::string scalar_text(const YAML::Node& node) {
  const boost::json::value v = to_json(node);
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_bool()) return v.get_bool() ? "true" : "false";
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_null()) return {};
  return node.Scalar();  // a decimal, as written
}

std::optional<FieldPath> field_path(MapReader& reader, std::string_view key, bool required) {
  YAML::Node node = reader.take(key);
  if (!node.IsDefined()) {
    if (required) reader.missing(key);
    return std::nullopt;
  }
  return path_at(node, reader.path_of(key), reader.errors());
}

WatchSpec parse_watch(MapReader& reader) {
  static const std::regex api_version(R"(^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?$)");
  static const std::regex resource(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
  static const std::regex ns(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
  WatchSpec watch;
  if (auto v = reader.string("apiVersion", true)) {
    if (v->size() > 253 || !std::regex_match(*v, api_version))
      reader.error_at("apiVersion", "invalid apiVersion \"" + *v + "\" (write v1 or group/version, e.g. apps/v1)");
    else watch.api_version = *v;
  }
  if (auto v = reader.string("resource", true)) {
    if (v->size() > 63 || !std::regex_match(*v, resource))
      reader.error_at("resource", "invalid resource \"" + *v +
                                      "\" (write the plural resource name in lower case, e.g. daemonsets or pods)");
    else watch.resource = *v;
  }
  if (auto v = reader.string("namespace")) {
    if (v->size() > 63 || !std::regex_match(*v, ns))
      reader.error_at("namespace", "invalid namespace \"" + *v + "\" (a namespace name, or all)");
    else watch.namespace_ = *v;
  }
  if (auto v = reader.string("labelSelector")) {
    if (v->size() > max_selector_length)
      reader.error_at("labelSelector", "longer than " + std::to_string(max_selector_length) + " characters");
    else watch.label_selector = *v;
  }
  return watch;
}

AtMostPerGroup parse_at_most(MapReader& reader) {
  AtMostPerGroup a;
  YAML::Node group_by = reader.take("groupBy");
  if (!group_by.IsDefined()) {
    reader.missing("groupBy");
  } else if (!group_by.IsSequence()) {
    reader.error_at("groupBy", "expected a list of field paths, got " + describe(group_by));
  } else if (group_by.size() == 0) {
    reader.error_at("groupBy", "an empty list puts every object in one group: list at least one field path");
  } else if (group_by.size() > max_group_by) {
    reader.error_at("groupBy",
                    "at most " + std::to_string(max_group_by) + " field paths, got " + std::to_string(group_by.size()));
  } else {
    for (std::size_t i = 0; i < group_by.size(); ++i)
      if (auto p = path_at(group_by[i], reader.path_of("groupBy") + "[" + std::to_string(i) + "]", reader.errors()))
        a.group_by.push_back(std::move(*p));
  }
  if (YAML::Node node = reader.take("max"); node.IsDefined()) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    std::int64_t value = 0;
    bool number = !text.empty();
    try {
      std::size_t used = 0;
      value = std::stoll(text, &used);
      number = number && used == text.size();
    } catch (const std::exception&) {
      number = false;
    }
    if (!number) reader.error_at("max", "expected a whole number of objects, got " + describe(node));
    else if (value < 1)
      reader.error_at("max", "must be at least 1, got " + text + " (a group of zero objects: nothing could ever pass)");
    else if (static_cast<std::uint64_t>(value) > max_group_size)
      reader.error_at("max", "must be at most " + std::to_string(max_group_size) + ", got " + text);
    else a.max = static_cast<std::uint64_t>(value);
  } else {
    reader.missing("max");
  }
  return a;
}

Reaches parse_reaches(MapReader& reader) {
  Reaches r;
  if (auto p = field_path(reader, "field", true)) r.field = std::move(*p);
  YAML::Node value = reader.take("value");
  if (value.IsDefined()) {
    if (!value.IsScalar())
      reader.error_at("value", "expected a scalar (a string, number or boolean), got " + describe(value));
    else r.value = scalar_text(value);
    if (r.value && r.value->empty() && value.Tag() != "!")
      reader.error_at("value", "null never matches: a field that is null counts as absent");
  }
  r.equals_field = field_path(reader, "equalsField", false);
  if (value.IsDefined() && reader.has("equalsField"))
    reader.error_at("equalsField", "give either value or equalsField, not both");
  if (!value.IsDefined() && !reader.has("equalsField"))
    reader.errors().add(reader.node().Mark(), reader.path(), "needs value or equalsField: what the field must reach");
  if (YAML::Node node = reader.take("within"); node.IsDefined()) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    auto d = parse_duration(text);
    if (!d) reader.error_at("within", duration_problem(text));
    else if (d->count() == 0)
      reader.error_at("within", "must be greater than 0 (a time of zero: nothing can reach a value in no time)");
    else if (*d > max_workload_duration)
      reader.error_at("within", "must be at most " + format_duration(max_workload_duration) + ", got " + text);
    else r.within = *d;
  } else {
    reader.missing("within");
  }
  if (auto after = reader.choice("after", {"workload", "lastFault"}))
    r.after = *after == "lastFault" ? Reaches::After::last_fault : Reaches::After::workload;
  return r;
}

NoWriteBy parse_no_write_by(MapReader& reader) {
  NoWriteBy n;
  const YAML::Node agents = reader.node()["userAgents"];
  if (auto list = reader.string_list("userAgents")) {
    if (list->empty()) reader.error_at("userAgents", "list at least one user agent (`*` matches any text)");
    else if (list->size() > max_user_agents)
      reader.error_at("userAgents", "at most " + std::to_string(max_user_agents) + " patterns");
    for (std::size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].empty() || (*list)[i].size() > max_user_agent_length)
        reader.errors().add(agents[i].Mark(), reader.path_of("userAgents") + "[" + std::to_string(i) + "]",
                            "a pattern of 1 to " + std::to_string(max_user_agent_length) + " characters");
    n.user_agents = *list;
  } else if (!reader.has("userAgents")) {
    reader.missing("userAgents");
  }
  const YAML::Node verbs = reader.node()["verbs"];
  if (auto list = reader.string_list("verbs")) {
    std::vector<std::string_view> known(std::begin(write_verbs), std::end(write_verbs));
    if (list->empty()) reader.error_at("verbs", "list at least one verb, or leave the key out for every write verb");
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (std::find(known.begin(), known.end(), (*list)[i]) == known.end())
        reader.errors().add(verbs[i].Mark(), reader.path_of("verbs") + "[" + std::to_string(i) + "]",
                            "unknown verb \"" + (*list)[i] + "\" (known: " + join(known) + ")");
    }
    n.verbs = *list;
  } else if (!reader.has("verbs")) {
    n.verbs.assign(std::begin(write_verbs), std::end(write_verbs));
  }
  return n;
}

template <typename T, typename Parse>
std::optional<T> section(MapReader& parent, const YAML::Node& node, std::string_view key, Parse parse) {
  MapReader reader(node, parent.path_of(key), parent.errors());
  if (!reader.valid()) return std::nullopt;
  T value = parse(reader);
  reader.finish();
  return value;
}

std::optional<DeclaredCheck> parse_declared_check(const YAML::Node& node, const std::string& path, Errors& errors) {
  MapReader reader(node, path, errors);
  if (!reader.valid()) return std::nullopt;
  DeclaredCheck check;
  if (auto name = reader.string("name", true)) {
    if (find_invariant(*name) != nullptr)
      reader.error_at("name", "\"" + *name + "\" is the name of a built-in invariant: choose another name");
    else if (name->empty() || name->size() > 63) reader.error_at("name", "a name of 1 to 63 characters");
    check.name = *name;
  }
  YAML::Node watch = reader.take("watch");
  if (!watch.IsDefined()) reader.missing("watch");
  else if (auto w = section<WatchSpec>(reader, watch, "watch", parse_watch)) check.watch = *w;
  const std::string_view kinds[] = {"atMostPerGroup", "reaches", "noWriteBy"};
  std::optional<std::string_view> chosen;
  for (std::string_view kind : kinds) {
    YAML::Node value = reader.take(kind);
    if (!value.IsDefined()) continue;
    if (chosen) {
      reader.error_at(kind, "a check has one kind and this one is " + std::string(*chosen) +
                                ": leave this key out or declare a check of its own");
      continue;
    }
    chosen = kind;
    if (kind == "atMostPerGroup") {
      if (auto v = section<AtMostPerGroup>(reader, value, kind, parse_at_most)) check.kind = *v;
    } else if (kind == "reaches") {
      if (auto v = section<Reaches>(reader, value, kind, parse_reaches)) check.kind = *v;
    } else if (auto v = section<NoWriteBy>(reader, value, kind, parse_no_write_by)) {
      check.kind = *v;
    }
  }
  if (!chosen)
    errors.add(node.Mark(), path,
               "needs one of atMostPerGroup, reaches, noWriteBy: what the check asks of the objects");
  reader.finish();
  return check;
}

}  // namespace

std::vector<DeclaredCheck> parse_declared(MapReader& checks) {
  YAML::Node node = checks.take("declared");
  if (!node.IsDefined()) return {};
  if (node.IsSequence() && node.size() > max_declared_checks) {
    checks.error_at("declared", "at most " + std::to_string(max_declared_checks) + " declared checks, got " +
                                    std::to_string(node.size()));
    return {};
  }
  return parse_named_list<DeclaredCheck>(node, checks.path_of("declared"), checks.errors(), "check name",
                                         parse_declared_check);
}

}  // namespace faultline::harness::schema::detail
