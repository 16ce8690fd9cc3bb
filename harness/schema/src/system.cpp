#include "faultline/harness/schema/system.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <functional>
#include <set>

#include "faultline/faults/match.hpp"
#include "faultline/faults/yaml_load.hpp"
#include "faultline/harness/schema/invariants.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;
namespace detail = faults::detail;
namespace fs = std::filesystem;

bool known_placeholder(std::string_view name) {
  return std::find(std::begin(system_placeholders), std::end(system_placeholders), name) !=
         std::end(system_placeholders);
}

// Walks `text`: literal runs go to `literal`, each {name} to `placeholder`; "{{" is a literal "{".
void scan(std::string_view text, const std::function<void(std::string_view)>& literal,
          const std::function<void(std::string_view)>& placeholder) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      literal("{");
      i += 2;
      continue;
    }
    if (text[i] == '{') {
      std::size_t j = i + 1;
      while (j < text.size() && (std::islower(static_cast<unsigned char>(text[j])) != 0 || text[j] == '_')) ++j;
      if (j > i + 1 && j < text.size() && text[j] == '}') {
        placeholder(text.substr(i + 1, j - i - 1));
        i = j + 1;
        continue;
      }
    }
    literal(text.substr(i, 1));
    ++i;
  }
}

std::string placeholder_list() {
  std::string out;
  for (auto p : system_placeholders) out += (out.empty() ? "{" : ", {") + std::string(p) + "}";
  return out;
}

// The unknown placeholders of `text`, as one error message; empty when there are none.
std::string placeholder_problem(std::string_view text) {
  std::string unknown;
  scan(
      text, [](std::string_view) {},
      [&](std::string_view name) {
        if (!known_placeholder(name)) unknown += (unknown.empty() ? "{" : ", {") + std::string(name) + "}";
      });
  if (unknown.empty()) return {};
  return "unknown placeholder " + unknown + " (known: " + placeholder_list() + "; write {{ for a literal {)";
}

std::string fill(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  scan(
      text, [&](std::string_view s) { out += s; },
      [&](std::string_view name) {
        auto it = values.find(std::string(name));
        if (it != values.end()) out += it->second;
        else out += "{" + std::string(name) + "}";
      });
  return out;
}

class Loader {
 public:
  Loader(std::string_view text, std::string source, fs::path dir) : text_(text), errors_(source), dir_(std::move(dir)) {
    system_.source = std::move(source);
    system_.dir = dir_;
  }

  System load() {
    detail::read_document(text_, errors_, [this](const YAML::Node& document) { parse(document); });
    return std::move(system_);
  }

 private:
  // A string value with its placeholders checked.
  std::optional<std::string> text(detail::MapReader& reader, std::string_view key, bool required = false) {
    auto value = reader.string(key, required);
    if (value) {
      if (auto problem = placeholder_problem(*value); !problem.empty()) reader.error_at(key, problem);
    }
    return value;
  }

  // A list of strings, at most max_system_list, optionally with their placeholders checked.
  std::optional<std::vector<std::string>> list(detail::MapReader& reader, std::string_view key, bool placeholders,
                                               bool required = false) {
    if (required && !reader.has(key)) {
      if (reader.valid()) reader.missing(key);
      return std::nullopt;
    }
    const YAML::Node node = reader.node()[std::string(key)];
    auto value = reader.string_list(key);
    if (!value) return std::nullopt;
    if (value->size() > max_system_list) {
      reader.error_at(key,
                      std::to_string(value->size()) + " entries; the maximum is " + std::to_string(max_system_list));
      return std::nullopt;
    }
    if (placeholders && node.IsSequence()) {
      for (std::size_t i = 0; i < value->size(); ++i) {
        if (auto problem = placeholder_problem((*value)[i]); !problem.empty())
          errors_.add(node[i].Mark(), reader.path_of(key) + "[" + std::to_string(i) + "]", problem);
      }
    }
    return value;
  }

  // `key`'s mapping, read by `parse`, or nothing when the key is absent.
  void section(detail::MapReader& parent, std::string_view key, const std::function<void(detail::MapReader&)>& parse,
               bool required = false) {
    YAML::Node node = parent.take(key);
    if (!node.IsDefined()) {
      if (required && parent.valid()) parent.missing(key);
      return;
    }
    detail::MapReader reader(node, parent.path_of(key), errors_);
    if (!reader.valid()) return;
    parse(reader);
    reader.finish();
  }

  // A hook's command: a non-empty list, placeholders checked.
  std::optional<std::vector<std::string>> hook_command(detail::MapReader& reader, std::string_view key,
                                                       bool required = false) {
    auto v = list(reader, key, true, required);
    if (v && v->empty()) {
      reader.error_at(key, "expected the program and its arguments, got an empty list");
      return std::nullopt;
    }
    return v;
  }

  // The name of a file in the report directory: letters, digits, '.', '_', '-', not one of the
  // harness's own; empty when it is not one (the error reported at `mark`).
  std::string report_file(const std::string& name, const YAML::Mark& mark, const std::string& path) {
    const bool ok =
        !name.empty() && name.size() <= 128 && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
        });
    if (!ok) {
      errors_.add(mark, path,
                  "expected a file name in the report directory (letters, digits, '.', '_', '-', at most 128, "
                  "not starting with '.'), got \"" +
                      name + "\"");
      return {};
    }
    if (name == "report.json" || name == "report.html" || name == "junit.xml" || name == "logs") {
      errors_.add(mark, path, "\"" + name + "\" is written by faultline itself; name the file otherwise");
      return {};
    }
    if (!report_files_.insert(name).second) {
      errors_.add(mark, path, "the report file \"" + name + "\" is written by another hook already");
      return {};
    }
    return name;
  }

  // hooks.before / hooks.after: a list of {command, output}.
  std::vector<SystemHookOutput> hook_outputs(detail::MapReader& parent, std::string_view key) {
    std::vector<SystemHookOutput> out;
    const YAML::Node node = parent.take(key);
    if (!node.IsDefined() || node.IsNull()) return out;
    if (!node.IsSequence() || node.size() > max_system_list) {
      errors_.add(node.Mark(), parent.path_of(key),
                  "expected a list of at most " + std::to_string(max_system_list) + " {command, output} entries, got " +
                      detail::describe(node));
      return out;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      detail::MapReader m(node[i], parent.path_of(key) + "[" + std::to_string(i) + "]", errors_);
      if (!m.valid()) continue;
      SystemHookOutput hook;
      if (auto c = hook_command(m, "command", true)) hook.command = *c;
      if (auto o = m.string("output", true))
        hook.output = report_file(*o, node[i]["output"].Mark(), m.path_of("output"));
      m.finish();
      out.push_back(std::move(hook));
    }
    return out;
  }

  void parse_hooks(detail::MapReader& r) {
    SystemHooks& h = system_.hooks;
    if (auto v = hook_command(r, "up")) h.up = *v;
    h.before = hook_outputs(r, "before");
    section(r, "start", [&](detail::MapReader& s) {
      if (auto v = hook_command(s, "command", true)) h.start = *v;
      if (auto w = s.choice("when", {"armed", "up"})) h.start_when = *w;
    });
    h.after = hook_outputs(r, "after");
    if (r.has("collect")) {
      const YAML::Node node = r.node()["collect"];
      if (auto files = r.string_map("collect")) {
        if (files->size() > max_system_list)
          r.error_at("collect",
                     std::to_string(files->size()) + " files; the maximum is " + std::to_string(max_system_list));
        for (const auto& [name, file] : *files) {
          const std::string path = r.path_of("collect") + "." + name;
          if (auto problem = placeholder_problem(file); !problem.empty()) errors_.add(node[name].Mark(), path, problem);
          if (!report_file(name, node[name].Mark(), path).empty()) h.collect[name] = absolute(file);
        }
      }
    } else {
      r.take("collect");  // known, for the list of allowed keys
    }
    if (auto v = hook_command(r, "down")) h.down = *v;
    if (auto t = r.bounded_duration("timeout", max_system_hook_timeout))
      h.timeout = std::chrono::duration_cast<std::chrono::seconds>(*t);
    if (h.empty() && r.valid())
      errors_.add(r.node().Mark(), r.path(), "expected at least one of up, before, start, after, collect and down");
  }

  void parse_variant(detail::MapReader& r) {
    SystemVariant v;
    if (auto env = r.string("env", true)) {
      const bool ok = !env->empty() && env->size() <= 128 &&
                      std::isdigit(static_cast<unsigned char>(env->front())) == 0 &&
                      std::all_of(env->begin(), env->end(), [](char c) {
                        return std::isupper(static_cast<unsigned char>(c)) != 0 ||
                               std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '_';
                      });
      if (!ok) r.error_at("env", "expected an environment variable name (A-Z, 0-9, '_'), got \"" + *env + "\"");
      v.env = *env;
    }
    if (auto values = list(r, "values", false, true)) {
      if (values->empty()) r.error_at("values", "expected at least one value");
      for (std::size_t i = 0; i < values->size(); ++i) {
        const std::string& value = (*values)[i];
        const bool ok = !value.empty() && value.size() <= 63 && std::all_of(value.begin(), value.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
        });
        if (!ok)
          errors_.add(r.node()["values"][i].Mark(), r.path_of("values") + "[" + std::to_string(i) + "]",
                      "expected letters, digits, '.', '_' and '-' (at most 63: it names the report directory), got \"" +
                          value + "\"");
      }
      v.values = *values;
    }
    if (auto d = r.string("default", true)) {
      if (!v.values.empty() && std::find(v.values.begin(), v.values.end(), *d) == v.values.end())
        r.error_at("default", "\"" + *d + "\" is not one of values");
      v.default_value = *d;
    }
    system_.variant = std::move(v);
  }

  // explore.components[]: a componentFaults target, the user agents of its own requests, the
  // actions (those of kill and pause the target takes) and lengths its plans use.
  void parse_explore_component(const YAML::Node& node, const std::string& path) {
    detail::MapReader m(node, path, errors_);
    if (!m.valid()) return;
    ExploreComponent c;
    const std::vector<std::string_view> targets(component_names.begin(), component_names.end());
    auto target = m.choice("target", targets, true);
    if (target) c.target = static_cast<Component>(std::find(targets.begin(), targets.end(), *target) - targets.begin());
    if (auto agents = list(m, "userAgents", false, true)) {
      if (agents->empty()) m.error_at("userAgents", "expected at least one glob of the component's User-Agent");
      for (std::size_t i = 0; i < agents->size(); ++i) {
        const std::string& glob = (*agents)[i];
        const std::string at = m.path_of("userAgents") + "[" + std::to_string(i) + "]";
        if (glob.empty()) errors_.add(node["userAgents"][i].Mark(), at, "expected a glob, got an empty string");
        else if (glob.size() > faults::max_glob_pattern_bytes)
          errors_.add(node["userAgents"][i].Mark(), at, faults::glob_too_long(glob.size()));
      }
      c.user_agents = *agents;
    }
    if (m.has("actions")) {
      if (auto actions = list(m, "actions", false)) {
        if (actions->empty()) m.error_at("actions", "expected kill, pause or both");
        for (std::size_t i = 0; i < actions->size(); ++i) {
          const std::string& a = (*actions)[i];
          const std::string at = m.path_of("actions") + "[" + std::to_string(i) + "]";
          const YAML::Mark mark = node["actions"][i].Mark();
          if (a != "kill" && a != "pause") {
            errors_.add(mark, at, "must be one of kill, pause, got \"" + a + "\"");
            continue;
          }
          const ComponentAction action = a == "kill" ? ComponentAction::kill : ComponentAction::pause;
          if (std::find(c.actions.begin(), c.actions.end(), action) != c.actions.end()) {
            errors_.add(mark, at, "\"" + a + "\" is listed twice");
            continue;
          }
          if (target)
            if (auto problem = component_action_problem(c.target, action); !problem.empty()) {
              errors_.add(mark, at, problem);
              continue;
            }
          c.actions.push_back(action);
        }
      }
    } else {
      m.take("actions");  // known, for the list of allowed keys
      for (const ComponentAction action : {ComponentAction::kill, ComponentAction::pause})
        if (component_action_problem(c.target, action).empty()) c.actions.push_back(action);
    }
    if (m.has("downFor")) {
      if (auto lengths = list(m, "downFor", false)) {
        if (lengths->empty()) m.error_at("downFor", "expected at least one length");
        if (lengths->size() > max_explore_down_for)
          m.error_at("downFor", std::to_string(lengths->size()) + " lengths; the maximum is " +
                                    std::to_string(max_explore_down_for));
        for (std::size_t i = 0; i < lengths->size() && i < max_explore_down_for; ++i) {
          const std::string& text = (*lengths)[i];
          const std::string at = m.path_of("downFor") + "[" + std::to_string(i) + "]";
          const YAML::Mark mark = node["downFor"][i].Mark();
          const auto d = faults::parse_duration(text);
          if (!d) errors_.add(mark, at, faults::duration_problem(text));
          else if (d->count() <= 0) errors_.add(mark, at, "must be greater than 0");
          else if (*d > max_explore_down_for_length)
            errors_.add(mark, at,
                        "must be at most " + faults::format_duration(max_explore_down_for_length) + ", got " + text);
          else if (std::find(c.down_for.begin(), c.down_for.end(), *d) != c.down_for.end())
            errors_.add(mark, at, "\"" + text + "\" is listed twice");
          else c.down_for.push_back(*d);
        }
      }
    } else {
      m.take("downFor");  // known, for the list of allowed keys
      c.down_for.push_back(std::chrono::seconds(10));
    }
    m.finish();
    system_.explore_components.push_back(std::move(c));
  }

  void parse_explore(detail::MapReader& r) {
    const YAML::Node node = r.take("components");
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsSequence()) {
      errors_.add(node.Mark(), r.path_of("components"), "expected a list of components, got " + detail::describe(node));
      return;
    }
    if (node.size() > max_explore_components) {
      errors_.add(
          node.Mark(), r.path_of("components"),
          std::to_string(node.size()) + " components; the maximum is " + std::to_string(max_explore_components));
      return;
    }
    for (std::size_t i = 0; i < node.size(); ++i)
      parse_explore_component(node[i], r.path_of("components") + "[" + std::to_string(i) + "]");
  }

  std::string absolute(const std::string& path) const {
    fs::path p(path);
    if (path.starts_with("{") || p.is_absolute()) return path;  // a placeholder ({system_dir}/...) or absolute
    return (dir_ / p).lexically_normal().string();
  }

  void parse(const YAML::Node& document) {
    detail::MapReader root(document, "", errors_);
    if (!root.valid()) return;
    detail::check_header(root, "System");
    section(
        root, "metadata",
        [&](detail::MapReader& r) {
          if (auto name = r.string("name", true)) {
            const bool ok = !name->empty() && name->size() <= 63 &&
                            std::all_of(name->begin(), name->end(),
                                        [](char c) {
                                          return std::islower(static_cast<unsigned char>(c)) != 0 ||
                                                 std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
                                        }) &&
                            name->front() != '-' && name->back() != '-';
            if (!ok)
              r.error_at("name", "expected lower-case letters, digits and '-' (at most 63, a DNS label), got \"" +
                                     *name + "\"");
            else if (*name == "etcd" || *name == "kube-apiserver" || *name == "kwok" || *name == "faultline-proxy")
              r.error_at("name", "\"" + *name + "\" is a component of the stack itself; name the system otherwise");
            else system_.name = *name;
          }
          if (auto d = r.string("description")) system_.description = *d;
        },
        true);
    section(root, "build", [&](detail::MapReader& r) {
      auto component = r.string("component");
      auto path = r.string("path");
      if (component && path) r.error_at("path", "build takes one of component and path, not both");
      if (component) system_.build.component = *component;
      if (path) system_.build.path = absolute(*path);
    });
    section(
        root, "identity",
        [&](detail::MapReader& r) {
          if (auto user = r.string("user", true)) {
            if (user->empty() || user->size() > 128 || user->find_first_of("/,=+\"\\<>;") != std::string::npos)
              r.error_at("user", "expected a user name of 1 to 128 characters without / , = + \" \\ < > ;");
            else system_.identity.user = *user;
          }
          if (auto v = list(r, "groups", false)) system_.identity.groups = *v;
          if (auto v = list(r, "clusterRoles", false)) system_.identity.cluster_roles = *v;
          if (auto v = list(r, "userAgents", false)) system_.identity.user_agents = *v;
        },
        true);
    section(root, "setup", [&](detail::MapReader& r) {
      if (auto v = list(r, "manifests", true))
        for (const auto& m : *v) system_.manifests.push_back(absolute(m));
      const YAML::Node maps = r.take("configMaps");
      if (!maps.IsDefined() || maps.IsNull()) return;
      if (!maps.IsSequence() || maps.size() > max_system_list) {
        errors_.add(maps.Mark(), r.path_of("configMaps"),
                    "expected a list of at most " + std::to_string(max_system_list) + " ConfigMaps, got " +
                        detail::describe(maps));
        return;
      }
      for (std::size_t i = 0; i < maps.size(); ++i) {
        detail::MapReader m(maps[i], r.path_of("configMaps") + "[" + std::to_string(i) + "]", errors_);
        if (!m.valid()) continue;
        SystemConfigMap cm;
        if (auto v = m.string("namespace", true)) cm.namespace_ = *v;
        if (auto v = m.string("name", true)) cm.name = *v;
        if (!m.has("files")) m.missing("files");
        if (auto files = m.string_map("files"))
          for (const auto& [key, file] : *files) cm.files[key] = absolute(file);
        m.finish();
        system_.config_maps.push_back(std::move(cm));
      }
    });
    section(root, "exclusive", [&](detail::MapReader& r) {
      if (auto port = r.count("port", 1, true)) {
        if (*port > 65535) r.error_at("port", "expected a TCP port from 1 to 65535, got " + std::to_string(*port));
        else system_.exclusive_port = static_cast<std::uint16_t>(*port);
      }
    });
    // A system of hooks only (no process the stack starts) has neither command nor ready.
    const bool hooks_only = !root.has("command") && root.has("hooks");
    if (auto v = list(root, "command", true, !hooks_only)) {
      if (v->empty()) root.error_at("command", "expected the program and its arguments, got an empty list");
      system_.command = *v;
    }
    if (!root.has("env")) root.take("env");  // known, for the list of allowed keys
    if (root.has("env")) {
      const YAML::Node node = root.node()["env"];
      if (auto env = root.string_map("env")) {
        if (env->size() > max_system_env) {
          root.error_at("env",
                        std::to_string(env->size()) + " variables; the maximum is " + std::to_string(max_system_env));
        }
        for (const auto& [k, v] : *env) {
          if (auto problem = placeholder_problem(v); !problem.empty()) errors_.add(node[k].Mark(), "env." + k, problem);
        }
        system_.env = *env;
      }
    }
    section(
        root, "ready",
        [&](detail::MapReader& r) {
          auto http = text(r, "http");
          auto https = text(r, "https");
          auto command = list(r, "command", true);
          const int probes = int(http.has_value()) + int(https.has_value()) + int(command.has_value());
          if (probes != 1 && r.valid())
            errors_.add(r.node().Mark(), r.path(), "takes exactly one of http, https and command");
          if (http) system_.ready.http = *http;
          if (https) system_.ready.https = *https;
          if (command) system_.ready.command = *command;
          if (auto up = list(r, "up", true)) system_.ready.up = *up;
          if (auto t = r.bounded_duration("timeout", max_system_ready_timeout))
            system_.ready.timeout = std::chrono::duration_cast<std::chrono::seconds>(*t);
        },
        !hooks_only);
    section(root, "metrics", [&](detail::MapReader& r) {
      SystemMetrics m;
      if (auto url = text(r, "url", true)) m.url = *url;
      if (auto series = list(r, "series", false)) {
        // Metric names as the Prometheus text format writes them: [a-zA-Z_:][a-zA-Z0-9_:]*.
        const auto metric_name = [](const std::string& n) {
          const auto start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
          return !n.empty() && start(n[0]) && std::all_of(n.begin(), n.end(), [&](char c) {
            return start(c) || std::isdigit(static_cast<unsigned char>(c));
          });
        };
        for (std::size_t i = 0; i < series->size(); ++i)
          if (!metric_name((*series)[i]))
            errors_.add(r.node()["series"][i].Mark(), r.path_of("series") + "[" + std::to_string(i) + "]",
                        "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), got \"" + (*series)[i] + "\"");
        m.series = *series;
      }
      system_.metrics = m;
    });
    section(root, "scheduler", [&](detail::MapReader& r) {
      if (auto name = r.string("name", true)) system_.scheduler_name = *name;
    });
    if (root.has("checks")) {
      const YAML::Node node = root.node()["checks"];
      if (auto checks = list(root, "checks", false)) {
        for (std::size_t i = 0; i < checks->size(); ++i) {
          if (find_invariant((*checks)[i]) == nullptr) {
            std::string known;
            for (const auto& n : invariant_names()) known += (known.empty() ? "" : ", ") + n;
            errors_.add(node[i].Mark(), "checks[" + std::to_string(i) + "]",
                        "unknown check \"" + (*checks)[i] + "\" (known: " + known + ")");
          }
        }
        system_.checks = *checks;
      }
    }
    section(root, "yunikorn", [&](detail::MapReader& r) {
      if (auto rest = text(r, "rest", true)) system_.yunikorn_rest = *rest;
    });
    if (auto needs = list(root, "needs", false)) {
      for (std::size_t i = 0; i < needs->size(); ++i)
        if ((*needs)[i] == system_.name && !system_.name.empty())
          errors_.add(root.node()["needs"][i].Mark(), "needs[" + std::to_string(i) + "]",
                      "a system cannot need itself");
      system_.needs = *needs;
    }
    if (auto v = list(root, "scenarios", false)) system_.scenarios = *v;
    section(root, "variant", [&](detail::MapReader& r) { parse_variant(r); });
    section(root, "hooks", [&](detail::MapReader& r) { parse_hooks(r); });
    section(root, "explore", [&](detail::MapReader& r) { parse_explore(r); });
    root.finish();
  }

  std::string_view text_;
  detail::Errors errors_;
  fs::path dir_;
  System system_;
  std::set<std::string> report_files_;  // the hooks' report files, each written once
};

boost::json::array json_list(const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

}  // namespace

System load_system_text(std::string_view text, std::string_view source_name, const fs::path& dir) {
  return Loader(text, std::string(source_name), dir).load();
}

System load_system_file(const fs::path& path) {
  std::string text = read_scenario_file(path);
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  return load_system_text(text, path.string(), dir);
}

fs::path resolve_system(const std::string& name_or_path, const fs::path& shipped) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  if (!shipped.empty() && !name_or_path.empty() && name_or_path.find('/') == std::string::npos) {
    fs::path candidate = shipped / (name_or_path + ".yaml");
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(shipped, ec), end; !shipped.empty() && !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw ScenarioError({"no system \"" + name_or_path + "\": not a file" +
                       (shipped.empty() ? std::string() : ", and not a shipped system (" + list + ")")});
}

System fill_placeholders(const System& s, const std::map<std::string, std::string>& values) {
  System out = s;
  auto f = [&](std::string& text) { text = fill(text, values); };
  auto fl = [&](std::vector<std::string>& v) { std::for_each(v.begin(), v.end(), f); };
  f(out.build.path);
  fl(out.manifests);
  fl(out.command);
  for (auto& [k, v] : out.env) f(v);
  f(out.ready.http);
  f(out.ready.https);
  fl(out.ready.command);
  fl(out.ready.up);
  if (out.metrics) f(out.metrics->url);
  f(out.yunikorn_rest);
  fl(out.hooks.up);
  for (auto& h : out.hooks.before) fl(h.command);
  fl(out.hooks.start);
  for (auto& h : out.hooks.after) fl(h.command);
  for (auto& [k, v] : out.hooks.collect) f(v);
  fl(out.hooks.down);
  return out;
}

boost::json::value system_json(const System& s) {
  namespace json = boost::json;
  json::object env;
  for (const auto& [k, v] : s.env) env[k] = v;
  json::array config_maps;
  for (const auto& cm : s.config_maps) {
    json::object files;
    for (const auto& [k, v] : cm.files) files[k] = v;
    config_maps.push_back(json::object{{"namespace", cm.namespace_}, {"name", cm.name}, {"files", std::move(files)}});
  }
  json::object build;
  if (!s.build.component.empty()) build["component"] = s.build.component;
  if (!s.build.path.empty()) build["path"] = s.build.path;
  json::object ready{{"timeoutSeconds", s.ready.timeout.count()}};
  if (!s.ready.http.empty()) ready["http"] = s.ready.http;
  if (!s.ready.https.empty()) ready["https"] = s.ready.https;
  if (!s.ready.command.empty()) ready["command"] = json_list(s.ready.command);
  ready["up"] = json_list(s.ready.up);
  json::value metrics = nullptr;
  if (s.metrics) metrics = json::object{{"url", s.metrics->url}, {"series", json_list(s.metrics->series)}};
  auto outputs = [](const std::vector<SystemHookOutput>& v) {
    json::array a;
    for (const auto& h : v) a.push_back(json::object{{"command", json_list(h.command)}, {"output", h.output}});
    return a;
  };
  json::object collect;
  for (const auto& [k, v] : s.hooks.collect) collect[k] = v;
  json::value start = nullptr;
  if (!s.hooks.start.empty()) start = json::object{{"command", json_list(s.hooks.start)}, {"when", s.hooks.start_when}};
  json::value variant = nullptr;
  if (s.variant)
    variant = json::object{
        {"env", s.variant->env}, {"default", s.variant->default_value}, {"values", json_list(s.variant->values)}};
  json::value checks = nullptr;
  if (s.checks) checks = json_list(*s.checks);
  json::array explore_components;
  for (const auto& c : s.explore_components) {
    json::array actions, down_for;
    for (const auto a : c.actions) actions.emplace_back(name_of(a));
    for (const auto d : c.down_for) down_for.emplace_back(faults::format_duration(d));
    explore_components.push_back(json::object{{"target", name_of(c.target)},
                                              {"userAgents", json_list(c.user_agents)},
                                              {"actions", std::move(actions)},
                                              {"downFor", std::move(down_for)}});
  }
  return json::object{
      {"file", s.source},
      {"dir", s.dir.string()},
      {"name", s.name},
      {"description", s.description},
      {"build", std::move(build)},
      {"identity", json::object{{"user", s.identity.user},
                                {"groups", json_list(s.identity.groups)},
                                {"clusterRoles", json_list(s.identity.cluster_roles)},
                                {"userAgents", json_list(s.identity.user_agents)}}},
      {"setup", json::object{{"manifests", json_list(s.manifests)}, {"configMaps", std::move(config_maps)}}},
      {"exclusive", s.exclusive_port ? json::value(json::object{{"port", *s.exclusive_port}}) : json::value(nullptr)},
      {"command", json_list(s.command)},
      {"env", std::move(env)},
      {"ready", std::move(ready)},
      {"metrics", std::move(metrics)},
      {"scheduler",
       s.scheduler_name.empty() ? json::value(nullptr) : json::value(json::object{{"name", s.scheduler_name}})},
      {"checks", std::move(checks)},
      {"yunikorn",
       s.yunikorn_rest.empty() ? json::value(nullptr) : json::value(json::object{{"rest", s.yunikorn_rest}})},
      {"needs", json_list(s.needs)},
      {"scenarios", json_list(s.scenarios)},
      {"variant", std::move(variant)},
      {"hooks", json::object{{"up", json_list(s.hooks.up)},
                             {"before", outputs(s.hooks.before)},
                             {"start", std::move(start)},
                             {"after", outputs(s.hooks.after)},
                             {"collect", std::move(collect)},
                             {"down", json_list(s.hooks.down)},
                             {"timeoutSeconds", s.hooks.timeout.count()}}},
      {"explore", json::object{{"components", std::move(explore_components)}}},
  };
}

}  // namespace faultline::harness::schema
