#pragma once
// A system file (docs/systems.md): the program under test, described for scripts/stack (how to
// build, authorize, set up, start and probe it) and for faultline-harness (the schedulerName of the
// workload's pods, the checks that apply, the data sources they read). Loaded with the scenario
// readers' bounds and "file:line:column: key.path: what is wrong" errors, all at once.

#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/harness/schema/component_fault.hpp"

namespace faultline::harness::schema {

inline constexpr std::size_t max_system_list = 64;  // entries of any list (command, roles, ...)
inline constexpr std::size_t max_system_env = 64;   // variables in `env`
inline constexpr std::chrono::seconds max_system_ready_timeout{3600};
inline constexpr std::chrono::seconds max_system_hook_timeout{7200};  // hooks.timeout: each hook command
inline constexpr std::size_t max_explore_components = 8;              // explore.components
inline constexpr std::size_t max_explore_down_for = 4;                // explore.components[].downFor
inline constexpr std::chrono::minutes max_explore_down_for_length{10};

// The placeholders faultline fills in a system file's strings ({name}); "{{" is a literal "{".
inline constexpr std::string_view system_placeholders[] = {"kubeconfig", "workdir", "port",  "bin", "ca",
                                                           "system_dir", "run_dir", "nodes", "name"};

struct SystemBuild {
  std::string component;  // a binary of scripts/components (its bin dir)
  std::string path;       // a binary, absolute (relative paths are made so against the file's directory)
};

struct SystemIdentity {
  std::string user;  // the CN of the client certificate the stack issues
  std::vector<std::string> groups;
  std::vector<std::string> cluster_roles;
  std::vector<std::string> user_agents;  // glob patterns (`*`) of its requests' User-Agent
};

struct SystemReady {
  std::string http;                  // a URL answering 2xx when ready
  std::string https;                 // the same over TLS (certificate not verified: a self-signed serving cert)
  std::vector<std::string> command;  // exits 0 when ready
  std::vector<std::string> up;       // also awaited once after `up` (not after a restart)
  std::chrono::seconds timeout{60};
};

struct SystemMetrics {
  std::string url;
  std::vector<std::string> series;
};

// A ConfigMap the stack creates before the start, its keys read from files.
struct SystemConfigMap {
  std::string namespace_;
  std::string name;
  std::map<std::string, std::string> files;  // key -> file, absolute
};

// A command whose standard output the driver (scripts/chaos) saves in the report directory as `output`.
struct SystemHookOutput {
  std::vector<std::string> command;
  std::string output;  // a file name (letters, digits, '.', '_', '-'), not a path
};

// Commands scripts/chaos runs around a scenario run, for a system that is more than one process
// (or none the stack can start): `up` after the stack is up, `before` then, `start` right after
// (`when: up`) or once faultline-harness armed the proxy (`when: armed`), `after` once the harness
// ended, `collect` then (report file -> file), `down` before the stack goes down.
struct SystemHooks {
  std::vector<std::string> up;
  std::vector<SystemHookOutput> before;
  std::vector<std::string> start;
  std::string start_when = "armed";  // armed | up
  std::vector<SystemHookOutput> after;
  std::map<std::string, std::string> collect;
  std::vector<std::string> down;
  std::chrono::seconds timeout{1800};  // each command's bound
  bool empty() const {
    return up.empty() && before.empty() && start.empty() && after.empty() && collect.empty() && down.empty();
  }
};

// A choice among builds or configurations of the system, passed to its commands and hooks in the
// environment variable `env` (scripts/chaos --variant NAME=VALUE, else $env, else `default`).
struct SystemVariant {
  std::string env;
  std::string default_value;
  std::vector<std::string> values;
};

struct System {
  std::string source;         // the file
  std::filesystem::path dir;  // its directory (absolute)
  std::string name;           // metadata.name
  std::string description;
  SystemBuild build;
  SystemIdentity identity;
  std::vector<std::string> manifests;        // setup.manifests, absolute
  std::vector<SystemConfigMap> config_maps;  // setup.configMaps
  std::optional<std::uint16_t> exclusive_port;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  SystemReady ready;
  std::optional<SystemMetrics> metrics;
  std::string scheduler_name;  // scheduler.name: empty for a system that is not a scheduler
  std::optional<std::vector<std::string>> checks;
  std::string yunikorn_rest;           // yunikorn.rest: YuniKorn's REST API, read by the YuniKorn checks
  std::vector<std::string> needs;      // systems it runs beside (names), listed before it in the stack
  std::vector<std::string> scenarios;  // glob patterns of the scenario names it is added to
  std::optional<SystemVariant> variant;
  SystemHooks hooks;  // without `command`, the system is its hooks only (no process of the stack)
  // explore.components: what `faultline-harness explore` kills and pauses; empty: the stack's
  // `scheduler`, kill and pause for 10 s right after writes to meta-information.
  std::vector<ExploreComponent> explore_components;
};

// Throw faults::ScenarioError with every problem of the file. Only a regular file of at most
// max_scenario_bytes is read.
System load_system_file(const std::filesystem::path& path);
System load_system_text(std::string_view text, std::string_view source_name, const std::filesystem::path& dir);

// A name (harness/systems/<name>.yaml in `shipped`) or a path; throws faults::ScenarioError naming
// the shipped systems when it is neither.
std::filesystem::path resolve_system(const std::string& name_or_path, const std::filesystem::path& shipped);

// Every string of `system` with the placeholders of `values` replaced ("{{" becomes "{" then too);
// the others stay as written.
System fill_placeholders(const System& system, const std::map<std::string, std::string>& values);

// The system as JSON (the keys of the file; absent optional sections are null).
boost::json::value system_json(const System& system);

}  // namespace faultline::harness::schema
