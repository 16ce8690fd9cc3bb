#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cmath>
#include <regex>

#include "faultline/faults/yaml_load.hpp"
#include "sections.hpp"

namespace faultline::harness::schema::detail {
namespace {

template <typename T, typename Parse>
std::optional<T> parse_section(MapReader& parent, std::string_view key, Parse parse, bool required = false) {
  YAML::Node node = parent.take(key);
  if (!node.IsDefined()) {
    if (required && parent.valid()) parent.missing(key);
    return std::nullopt;
  }
  MapReader reader(node, parent.path_of(key), parent.errors());
  if (!reader.valid()) return std::nullopt;
  T value = parse(reader);
  reader.finish();
  return value;
}

NodePool parse_nodes(MapReader& reader) {
  NodePool pool;
  if (auto count = reader.bounded_count("count", 1, max_workload_nodes, "nodes", true)) pool.count = *count;
  if (auto capacity = reader.string_map("capacity")) pool.capacity = *capacity;
  return pool;
}

PodTemplate parse_template(MapReader& reader) {
  PodTemplate t;
  if (auto v = reader.string("schedulerName")) t.scheduler_name = *v;
  if (auto v = reader.string_map("labels")) t.labels = *v;
  if (auto v = reader.string_map("annotations")) t.annotations = *v;
  if (auto v = reader.string_map("requests")) t.requests = *v;
  if (auto v = reader.string_map("limits")) t.limits = *v;
  if (auto v = reader.string_map("nodeSelector")) t.node_selector = *v;
  if (auto v = reader.string("priorityClassName")) t.priority_class_name = *v;
  return t;
}

PhaseStart parse_start(MapReader& reader) {
  auto text = reader.string("start");
  if (!text) return {};
  if (*text == "settled") return {PhaseStart::Kind::settled, Duration{0}};
  if (auto offset = parse_duration(*text)) {
    if (*offset > max_workload_duration) {
      reader.error_at("start", "must be at most " + format_duration(max_workload_duration) + ", got " + *text);
      return {};
    }
    return {PhaseStart::Kind::offset, *offset};
  }
  std::string problem = duration_problem(*text);
  // A well-formed duration that is too long gets the limit's own message.
  if (!problem.starts_with("invalid")) reader.error_at("start", problem);
  else reader.error_at("start", "expected a duration (e.g. 30s) or \"settled\", got \"" + *text + "\"");
  return {};
}

NodeFlap parse_node_flap(MapReader& reader) {
  NodeFlap flap;
  if (auto nodes = reader.bounded_count("nodes", 1, max_workload_nodes, "nodes", true)) flap.nodes = *nodes;
  if (auto down = reader.bounded_duration("downFor", max_workload_duration, true)) flap.down_for = *down;
  return flap;
}

// A node flap step has a name, a start and its nodeFlap; the keys of a pod phase are refused.
Phase parse_flap_step(MapReader& reader, Phase phase) {
  for (std::string_view key : {"pods", "rate", "concurrency", "template"})
    if (reader.has(key)) reader.error_at(key, "a nodeFlap step creates no pods: leave this key out");
  phase.start = parse_start(reader);
  phase.node_flap = parse_section<NodeFlap>(reader, "nodeFlap", parse_node_flap);
  if (!phase.node_flap) phase.node_flap = NodeFlap{};  // reported already; keeps the step a flap
  return phase;
}

std::string whole(double v) { return std::to_string(static_cast<std::uint64_t>(std::ceil(v))); }

// `rate: 5` or `rate: 5/s`, pods per second.
std::optional<double> churn_rate(MapReader& reader) {
  YAML::Node node = reader.take("rate");
  if (!node.IsDefined()) {
    reader.missing("rate");
    return std::nullopt;
  }
  std::string text = node.IsScalar() ? node.Scalar() : std::string();
  if (text.ends_with("/s")) text.resize(text.size() - 2);
  double rate = 0;
  try {
    std::size_t used = 0;
    rate = std::stod(text, &used);
    if (used != text.size()) rate = -1;
  } catch (const std::exception&) {
    rate = -1;
  }
  if (!(rate > 0) || !std::isfinite(rate)) {
    reader.error_at("rate", "expected pods per second greater than 0 (5 or 5/s), got " + describe(node));
    return std::nullopt;
  }
  if (rate > max_pod_rate) {
    reader.error_at("rate", "must be at most " + whole(max_pod_rate) + " pods per second, got " + describe(node));
    return std::nullopt;
  }
  return rate;
}

Churn parse_churn(MapReader& reader) {
  Churn churn;
  auto rate = churn_rate(reader);
  auto lifetime = reader.bounded_duration("lifetime", max_workload_duration, true);
  auto length = positive_duration(reader, "for", true);
  if (rate) churn.rate = *rate;
  if (lifetime) churn.lifetime = *lifetime;
  if (length) churn.for_ = *length;
  if (length && *length > max_churn_for)
    reader.error_at("for", "at most " + format_duration(max_churn_for) + " (a longer soak is several runs)");
  if (!rate || !lifetime || !length) return churn;
  const double seconds = std::chrono::duration<double>(*length).count();
  const double alive = *rate * std::chrono::duration<double>(*lifetime).count();
  if (*rate * seconds > static_cast<double>(max_churn_pods))
    reader.error_at("rate", "rate * for is " + whole(*rate * seconds) + " pods, more than the limit of " +
                                std::to_string(max_churn_pods));
  if (alive > static_cast<double>(max_churn_alive))
    reader.error_at("lifetime", "rate * lifetime is " + whole(alive) + " pods alive at once, more than the limit of " +
                                    std::to_string(max_churn_alive));
  return churn;
}

// A churn step has a name, a start, a concurrency, a template and its churn; pods and rate come
// from the churn.
Phase parse_churn_step(MapReader& reader, Phase phase) {
  for (std::string_view key : {"pods", "rate", "nodeFlap"})
    if (reader.has(key)) reader.error_at(key, "a churn step takes its pods and rate from churn: leave this key out");
  phase.start = parse_start(reader);
  if (auto concurrency = reader.bounded_count("concurrency", 1, max_pod_concurrency, ""))
    phase.concurrency = *concurrency;
  if (auto t = parse_section<PodTemplate>(reader, "template", parse_template)) phase.pod_template = *t;
  phase.churn = parse_section<Churn>(reader, "churn", parse_churn);
  if (!phase.churn) phase.churn = Churn{};  // reported already; keeps the step a churn
  if (phase.churn->rate > 0 && phase.churn->for_.count() > 0) {
    phase.rate = phase.churn->rate;
    const double pods = std::ceil(phase.churn->rate * std::chrono::duration<double>(phase.churn->for_).count());
    // Over the limit is reported already (parse_churn); 0 keeps it out of the workload's total.
    phase.pods = pods > static_cast<double>(max_churn_pods) ? 0 : static_cast<std::uint64_t>(pods);
  }
  return phase;
}

std::string template_string(const YAML::Node& node, std::string_view key) {
  const YAML::Node value = node[std::string(key)];
  return value.IsDefined() && value.IsScalar() ? value.Scalar() : std::string();
}

// objects.template: a whole object; its apiVersion, kind and a name (metadata.name or generateName).
void parse_object_template(MapReader& reader, ObjectStep& step) {
  YAML::Node node = reader.take("template");
  const std::string path = reader.path_of("template");
  if (!node.IsDefined()) {
    reader.missing("template");
    return;
  }
  if (!node.IsMap()) {
    reader.error_at("template",
                    "expected a mapping (a whole object: apiVersion, kind, metadata), got " + describe(node));
    return;
  }
  for (std::string_view key : {"apiVersion", "kind"})
    if (template_string(node, key).empty())
      reader.errors().add(node.Mark(), path, "needs " + std::string(key) + ": the object's " + std::string(key));
  const YAML::Node meta = node["metadata"];
  if (!meta.IsDefined() || !meta.IsMap() ||
      (template_string(meta, "name").empty() && template_string(meta, "generateName").empty()))
    reader.errors().add(node.Mark(), path,
                        "needs metadata.name (\"{i}\" in it becomes 1, 2, ...) or metadata.generateName");
  else if (!template_string(meta, "name").empty() && template_string(meta, "name").find("{i}") == std::string::npos &&
           step.count > 1)
    reader.errors().add(
        meta["name"].Mark(), path + ".metadata.name",
        "the same name for " + std::to_string(step.count) + " objects: put {i} in it or use metadata.generateName");
  try {
    step.template_json = boost::json::serialize(to_json(node));
  } catch (const YAML::Exception& e) {
    reader.errors().add(e.mark, path, e.msg);
    return;
  }
  if (step.template_json.size() > max_object_template_bytes)
    reader.error_at("template", "longer than " + std::to_string(max_object_template_bytes) + " bytes as JSON");
  step.api_version = template_string(node, "apiVersion");
}

ObjectStep parse_objects(MapReader& reader) {
  ObjectStep step;
  if (auto count = reader.bounded_count("count", 1, max_step_objects, "objects", true)) step.count = *count;
  if (auto v = reader.string("resource", true)) {
    static const std::regex resource(R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?$)");
    if (v->size() > 63 || !std::regex_match(*v, resource))
      reader.error_at("resource", "invalid resource \"" + *v +
                                      "\" (write the plural resource name in lower case, e.g. daemonsets)");
    else step.resource = *v;
  }
  parse_object_template(reader, step);
  return step;
}

// An objects step has a name, a start, a rate, a concurrency and its objects.
Phase parse_objects_step(MapReader& reader, Phase phase) {
  for (std::string_view key : {"pods", "template", "churn", "nodeFlap"})
    if (reader.has(key)) reader.error_at(key, "an objects step creates what objects.template says: leave this key out");
  phase.start = parse_start(reader);
  if (auto rate = reader.number("rate")) {
    if (*rate <= 0 || *rate > max_pod_rate)
      reader.error_at("rate", "objects per second, greater than 0 and at most " + whole(max_pod_rate));
    else phase.rate = *rate;
  }
  if (auto concurrency = reader.bounded_count("concurrency", 1, max_pod_concurrency, ""))
    phase.concurrency = *concurrency;
  phase.objects = parse_section<ObjectStep>(reader, "objects", parse_objects);
  if (!phase.objects) phase.objects = ObjectStep{};  // reported already; keeps the step an objects step
  return phase;
}

Phase parse_phase(MapReader& reader) {
  Phase phase;
  if (auto name = reader.string("name", true)) phase.name = *name;
  if (reader.has("objects")) return parse_objects_step(reader, std::move(phase));
  if (reader.has("churn")) return parse_churn_step(reader, std::move(phase));
  if (reader.has("nodeFlap")) return parse_flap_step(reader, std::move(phase));
  if (auto pods = reader.bounded_count("pods", 1, max_workload_pods, "pods", true)) phase.pods = *pods;
  if (auto rate = reader.number("rate")) {
    if (*rate <= 0) reader.error_at("rate", "must be greater than 0, got " + reader.take("rate").Scalar());
    else if (*rate > max_pod_rate)
      reader.error_at(
          "rate", "must be at most " + whole(max_pod_rate) + " pods per second, got " + reader.take("rate").Scalar());
    else phase.rate = *rate;
  }
  if (auto concurrency = reader.bounded_count("concurrency", 1, max_pod_concurrency, ""))
    phase.concurrency = *concurrency;
  phase.start = parse_start(reader);
  if (auto t = parse_section<PodTemplate>(reader, "template", parse_template)) phase.pod_template = *t;
  return phase;
}

std::vector<Phase> parse_phases(MapReader& parent) {
  YAML::Node node = parent.take("phases");
  if (!node.IsDefined()) {
    if (parent.valid()) parent.missing("phases");
    return {};
  }
  if (!node.IsSequence()) {
    parent.error_at("phases", "expected a list, got " + describe(node));
    return {};
  }
  if (node.size() == 0) {
    parent.error_at("phases", "must list at least one phase");
    return {};
  }
  std::vector<Phase> phases;
  for (std::size_t i = 0; i < node.size(); ++i) {
    MapReader reader(node[i], parent.path_of("phases") + "[" + std::to_string(i) + "]", parent.errors());
    if (!reader.valid()) continue;
    phases.push_back(parse_phase(reader));
    reader.finish();
  }
  return phases;
}

// Every entry must be a known invariant (invariants) or also appear in `allowed` (expect: the
// invariants checked and the declared checks' names, `declared`).
void check_names(MapReader& reader, std::string_view key, const std::vector<std::string>& names,
                 const std::vector<std::string>* allowed, const std::vector<DeclaredCheck>& declared = {}) {
  std::vector<std::string_view> known;
  for (const auto& spec : invariant_specs) known.push_back(spec.name);
  std::string known_text = join(known);
  if (!declared.empty()) {
    std::vector<std::string_view> names_declared;
    for (const auto& d : declared) names_declared.push_back(d.name);
    known_text += "; declared: " + join(names_declared);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string path = reader.path_of(key) + "[" + std::to_string(i) + "]";
    YAML::Mark mark = reader.take(key)[i].Mark();
    const bool is_declared =
        std::any_of(declared.begin(), declared.end(), [&](const auto& d) { return d.name == names[i]; });
    if (find_invariant(names[i]) == nullptr && !is_declared)
      reader.errors().add(mark, path, "unknown invariant \"" + names[i] + "\" (known: " + known_text + ")");
    else if (allowed && std::find(allowed->begin(), allowed->end(), names[i]) == allowed->end())
      reader.errors().add(mark, path, "\"" + names[i] + "\" is not listed in " + reader.path_of("invariants"));
  }
}

}  // namespace

Workload parse_workload(MapReader& reader) {
  Workload workload;
  if (auto ns = reader.string("namespace")) workload.namespace_ = *ns;
  if (auto nodes = parse_section<NodePool>(reader, "nodes", parse_nodes, true)) workload.nodes = *nodes;
  workload.phases = parse_phases(reader);
  bool pods = false;
  for (std::size_t i = 0; i < workload.phases.size(); ++i) {
    const Phase& phase = workload.phases[i];
    pods = pods || !phase.node_flap;  // pods, a churn, or objects
    if (!phase.node_flap || workload.nodes.count == 0 || phase.node_flap->nodes <= workload.nodes.count) continue;
    reader.errors().add(reader.take("phases")[i]["nodeFlap"]["nodes"].Mark(),
                        reader.path_of("phases") + "[" + std::to_string(i) + "].nodeFlap.nodes",
                        "more than the workload's " + std::to_string(workload.nodes.count) + " nodes");
  }
  if (!workload.phases.empty() && !pods) reader.error_at("phases", "needs at least one phase of pods or objects");
  std::uint64_t total = 0;  // each phase's pods are at most max_workload_pods: no overflow
  for (const Phase& phase : workload.phases) total += phase.pods;
  if (total > max_workload_pods)
    reader.error_at("phases", "the phases create " + std::to_string(total) + " pods together, more than the limit of " +
                                  std::to_string(max_workload_pods));
  return workload;
}

namespace {

ResourceChecks parse_resources(MapReader& reader) {
  ResourceChecks r;
  if (auto every = positive_duration(reader, "every")) {
    if (*every < std::chrono::seconds(1))
      reader.error_at("every", "at least 1s (each sample reads /proc of every component)");
    else r.every = *every;
  }
  for (auto [key, field] : {std::pair{"rssKiBPerMinute", &ResourceChecks::rss_kib_per_minute},
                            std::pair{"fdsPerMinute", &ResourceChecks::fds_per_minute}}) {
    if (auto v = reader.number(key)) {
      if (!(*v >= 0) || !std::isfinite(*v)) reader.error_at(key, "must be a number >= 0");
      else r.*field = *v;
    }
  }
  return r;
}

}  // namespace

Checks parse_checks(MapReader& reader) {
  Checks checks;
  checks.quiet_after = reader.bounded_duration("quietAfter", max_workload_duration);
  checks.resources = parse_section<ResourceChecks>(reader, "resources", parse_resources);
  if (auto settle = reader.bounded_duration("settle", max_workload_duration)) checks.settle = *settle;
  // Absent and empty differ: absent checks the default set, `invariants: []` checks nothing.
  if (auto invariants = reader.string_list("invariants")) {
    check_names(reader, "invariants", *invariants, nullptr);
    checks.invariants = *invariants;
  }
  checks.declared = parse_declared(reader);
  if (auto expect = reader.string_list("expect")) {
    std::vector<std::string> checked = checks.invariants_to_check();
    for (const auto& d : checks.declared) checked.push_back(d.name);
    check_names(reader, "expect", *expect, &checked, checks.declared);
    checks.expect = *expect;
  }
  return checks;
}

}  // namespace faultline::harness::schema::detail
