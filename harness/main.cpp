// faultline-harness: runs a scenario against a cluster and reports whether it came back consistent.
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/file.hpp"
#include "faultline/faults/printable.hpp"
#include "faultline/harness/async.hpp"
#include "faultline/harness/explore_driver.hpp"
#include "faultline/harness/run.hpp"
#include "faultline/harness/scenario_seed.hpp"
#include "faultline/harness/schema/matrix.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/schema/system.hpp"
#include "faultline/harness/sweep.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/rfc3339.hpp"
#include "faultline/version.hpp"

namespace fh = faultline::harness;
namespace ff = faultline::faults;
namespace hs = faultline::harness::schema;

namespace {

// KEY=VALUE lines as scripts/stack writes them (DIR/env), from a regular file of at most 1 MiB.
std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::istringstream in(ff::read_regular_file(path, 1024 * 1024, "an --env file"));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// A flag wins over the env file, which wins over the process environment.
void default_from(std::string& value, const std::map<std::string, std::string>& file, const char* key) {
  if (!value.empty()) return;
  if (auto it = file.find(key); it != file.end() && !it->second.empty()) {
    value = it->second;
  } else if (const char* v = std::getenv(key); v != nullptr) {
    value = v;
  }
}

// scripts/components' yunikorn-build.json (which YuniKorn build runs), checked to be a JSON object
// of at most 64 KiB; report.json carries it as cluster.yunikornBuild.
std::string read_yunikorn_build(const std::string& path) {
  const std::string text = ff::read_regular_file(path, 64 * 1024, "the YuniKorn build info");
  boost::system::error_code ec;
  auto doc = boost::json::parse(text, ec);
  if (ec || !doc.is_object()) throw std::runtime_error("YuniKorn build info " + path + " is not a JSON object");
  return boost::json::serialize(doc);
}

// A live status line on a terminal; plain lines (final ones, and one every 5 s) otherwise.
class ConsoleProgress {
 public:
  ConsoleProgress() : tty_(isatty(fileno(stderr)) != 0) {}
  // Progress lines carry names from the scenario and errors from servers: escaped, each stays one
  // line and drives no terminal.
  void operator()(const std::string& text, bool final) {
    const std::string line = ff::printable(text);
    std::lock_guard lock(mutex_);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    } else {
      auto now = std::chrono::steady_clock::now();
      if (!final && now - last_ < std::chrono::seconds(5)) return;
      last_ = now;
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool tty_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
};

// .run/reports/<scenario>-<time>: the scenario's name with every byte but [A-Za-z0-9._-] made '_'
// and no leading dot, so a name ("../../x", "a/b", "\n") cannot put the reports anywhere else.
std::string default_out_dir(const std::string& scenario) {
  std::string stamp = faultline::net::format_rfc3339(fh::WallClock::now(), 0).substr(0, 19);
  for (auto& c : stamp)
    if (c == ':') c = '-';
  std::string name = scenario.substr(0, 100);
  for (auto& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (!name.empty() && name.front() == '.') name.front() = '_';
  return ".run/reports/" + name + "-" + stamp;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A scenario file read once (within the scenario file bounds: a regular file, at most 1 MiB) and
// loaded; nullopt after printing its errors.
struct LoadedScenario {
  std::string text;
  std::shared_ptr<const hs::Scenario> scenario;
};

std::optional<LoadedScenario> load_or_print(const std::string& file) {
  try {
    LoadedScenario loaded;
    loaded.text = ff::read_scenario_file(file);
    loaded.scenario = hs::load_scenario_text(loaded.text, file);
    return loaded;
  } catch (const ff::ScenarioError& e) {
    for (const auto& err : e.errors()) std::cerr << err << "\n";
    return std::nullopt;
  }
}

// Creation throughput of the harness's own create path against a real apiserver: one paced
// phase, nothing else running in the harness. The pods are deleted afterwards.
int run_bench(const std::string& env_file, std::string kubeconfig, const std::string& ns, std::uint64_t pods,
              double rate, std::uint64_t concurrency, const fh::ReadLimits& limits) {
  try {
    auto env = read_env_file(env_file);
    default_from(kubeconfig, env, "FAULTLINE_ADMIN_KUBECONFIG");
    fh::KubeClientOptions options;
    options.cluster = faultline::net::load_kubeconfig(kubeconfig);
    options.limits = limits;
    boost::asio::io_context ioc;
    fh::KubeClient client(ioc.get_executor(), options);
    hs::Workload spec;
    spec.namespace_ = ns;
    hs::Phase phase;
    phase.name = "bench";
    phase.pods = pods;
    phase.concurrency = concurrency;
    if (rate > 0) phase.rate = rate;
    phase.pod_template.scheduler_name = "faultline-bench-nobody";  // no scheduler picks these up
    phase.pod_template.requests = {{"cpu", "10m"}, {"memory", "16Mi"}};
    ConsoleProgress progress;
    fh::Workload workload(client, spec, "kube-scheduler",
                          [&progress](const std::string& line, bool final) { progress(line, final); });
    fh::run_blocking(ioc, workload.ensure_namespace());
    fh::run_blocking(ioc, workload.delete_leftover_pods(std::chrono::seconds(300)));
    auto nothing_to_arm = []() -> boost::asio::awaitable<void> { co_return; };
    auto no_status = [] { return std::string("no scheduler"); };
    fh::PhaseResult r = fh::run_blocking(ioc, workload.run_phase(phase, nothing_to_arm, no_status));
    std::printf("bench: %llu/%llu pods created in %.3f s = %.1f pods/s (target %s, concurrency %llu, %llu failed)\n",
                static_cast<unsigned long long>(r.created), static_cast<unsigned long long>(pods), r.seconds, r.rate(),
                rate > 0 ? std::to_string(static_cast<long long>(rate)).c_str() : "unpaced",
                static_cast<unsigned long long>(concurrency), static_cast<unsigned long long>(r.failed));
    // The harness's own CPU time per pod shows whether the harness or the apiserver limits the rate.
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    std::printf("bench: harness CPU %.2f s in total, %.3f ms per pod created (includes setup and leftover cleanup)\n",
                cpu, r.created > 0 ? cpu * 1000 / static_cast<double>(r.created) : 0.0);
    for (const auto& [kind, n] : client.retries())
      std::printf("bench: retried %s: %lld\n", kind.c_str(), static_cast<long long>(n));
    for (const auto& e : r.errors) std::printf("bench: error: %s\n", e.c_str());
    fh::run_blocking(ioc, workload.delete_leftover_pods(std::chrono::seconds(300)));
    return r.failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "faultline-harness bench: " << e.what() << "\n";
    return 2;
  }
}

// `matrix expand`: the matrix's cells into DIR (plan.json, cells/<id>/scenario.yaml). A DIR that
// holds another matrix's plan is refused, so resuming never mixes two sweeps.
int matrix_expand(const std::string& file, const std::string& out, const std::string& shipped) {
  std::optional<hs::Matrix> m;
  try {
    m = hs::load_matrix_file(file, shipped);
  } catch (const ff::ScenarioError& e) {
    for (const auto& err : e.errors()) std::cerr << err << "\n";
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    const std::string plan = fh::plan_json(fh::plan_of(*m));
    const fs::path dir(out);
    std::error_code ec;
    if (fs::exists(dir / "plan.json", ec)) {
      if (ff::read_regular_file(dir / "plan.json", 16 * 1024 * 1024, "a sweep plan") != plan) {
        std::cerr << "faultline-harness matrix expand: " << (dir / "plan.json").string()
                  << " is the plan of another matrix (or of this one before it changed); use another --out\n";
        return 2;
      }
    }
    for (const auto& cell : m->cells) {
      fs::create_directories(dir / "cells" / cell.id);
      faultline::net::write_file(dir / "cells" / cell.id / "scenario.yaml", cell.scenario_text);
    }
    faultline::net::write_file(dir / "plan.json", plan);
    std::cout << file << ": " << m->cells.size() << " cells x " << m->runs << " runs -> "
              << (dir / "plan.json").string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "faultline-harness matrix expand: " << e.what() << "\n";
    return 2;
  }
}

// `matrix report`: soak.json, soak.tsv, junit.xml and soak.html from what DIR holds so far. Exit 0
// when every cell ran every run with the expected verdict, 1 otherwise.
int matrix_report(const std::string& dir) {
  try {
    const fh::SweepPlan plan = fh::read_sweep(dir);
    const fh::SweepSummary summary = fh::summarize(plan);
    fh::write_sweep_reports(summary, dir);
    std::cout << fh::render_sweep_tsv(summary);
    bool ok = true;
    for (const auto& c : summary.cells) ok = ok && c.as_expected;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "faultline-harness matrix report: " << e.what() << "\n";
    return 2;
  }
}

// A system named or given as a file (docs/systems.md); nullopt after printing its errors.
std::optional<hs::System> load_system_or_print(const std::string& name_or_path, const std::string& shipped) {
  try {
    return hs::load_system_file(hs::resolve_system(name_or_path, shipped));
  } catch (const ff::ScenarioError& e) {
    for (const auto& err : e.errors()) std::cerr << err << "\n";
    return std::nullopt;
  }
}

// `system FILE`: the validated file as JSON, with the placeholders of --set NAME=VALUE filled.
int print_system(const std::string& name_or_path, const std::string& shipped, const std::vector<std::string>& sets) {
  auto system = load_system_or_print(name_or_path, shipped);
  if (!system) return 2;
  std::map<std::string, std::string> values;
  for (const auto& set : sets) {
    auto eq = set.find('=');
    const std::string name = set.substr(0, eq);
    if (eq == std::string::npos || std::find(std::begin(hs::system_placeholders), std::end(hs::system_placeholders),
                                             name) == std::end(hs::system_placeholders)) {
      std::cerr << "faultline-harness system: --set " << set << ": expected PLACEHOLDER=VALUE with a placeholder of "
                << "docs/systems.md (kubeconfig, port, ...)\n";
      return 2;
    }
    values[name] = set.substr(eq + 1);
  }
  std::cout << boost::json::serialize(hs::system_json(hs::fill_placeholders(*system, values))) << "\n";
  return 0;
}

// Whether a file to validate is a system file (kind: System) rather than a scenario.
bool is_system_file(const std::string& path) {
  try {
    static const std::regex kind(R"((^|\n)kind:[ \t]*["']?System["']?[ \t]*(#[^\n]*)?(\r?\n|$))");
    return std::regex_search(ff::read_scenario_file(path), kind);
  } catch (const std::exception&) {
    return false;  // the scenario loader reports why it cannot be read
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"faultline-harness: drive a scenario's workload and faults, then check the end state"};
  app.require_subcommand(1);
  app.set_version_flag("--version", faultline::version_line("faultline-harness"));

  std::string scenario_file, env_file, kubeconfig, context, scheduler, yunikorn_url, proxy_url, out_dir, expect;
  std::string settle, churn_for, yunikorn_build, stack_run_dir, stack_script, system_arg, systems_dir;
  std::string system_metrics_url;
  std::uint64_t nodes = 0;
  std::uint64_t pods = 0;
  std::uint64_t seed = 0;
  double rate = 0;
  bool no_expect = false;
  unsigned node_concurrency = 16;
  fh::ReadLimits limits;
  std::uint64_t max_response_mib = limits.max_body_bytes >> 20;
  const std::string max_response_help =
      "the largest answer read from the apiserver (a list's pages together), the proxy or YuniKorn, in MiB";

  auto* run = app.add_subcommand("run", "run a scenario and write report.json, junit.xml and report.html");
  run->add_option("scenario", scenario_file, "scenario YAML file")->required()->check(CLI::ExistingFile);
  run->add_option("--env", env_file, "stack env file (scripts/stack up writes RUN_DIR/env) for the defaults below");
  run->add_option("--kubeconfig", kubeconfig,
                  "admin kubeconfig (default $FAULTLINE_ADMIN_KUBECONFIG, then $KUBECONFIG)");
  run->add_option("--context", context, "kubeconfig context (default: current)");
  run->add_option("--system", system_arg,
                  "the system under test: a system file or a shipped system's name (default $FAULTLINE_SYSTEM_FILE)");
  run->add_option("--systems-dir", systems_dir,
                  "the shipped systems, for a name (default $FAULTLINE_SYSTEMS_DIR: harness/systems)");
  run->add_option("--scheduler", scheduler,
                  "a shipped system's name (yunikorn, kube-scheduler); without a system file: yunikorn | "
                  "kube-scheduler (default $FAULTLINE_SCHEDULER, else yunikorn)");
  run->add_option("--yunikorn-url", yunikorn_url, "YuniKorn REST API (default $FAULTLINE_YUNIKORN_URL)");
  run->add_option(
      "--yunikorn-build", yunikorn_build,
      "the YuniKorn build's yunikorn-build.json, recorded in report.json (default $FAULTLINE_YUNIKORN_BUILD)");
  run->add_option("--proxy-admin-url", proxy_url, "faultline-proxy admin API (default $FAULTLINE_PROXY_ADMIN_URL)");
  run->add_option("--stack-run-dir", stack_run_dir,
                  "the local stack's run dir, for component faults (default $FAULTLINE_RUN_DIR)");
  run->add_option("--stack", stack_script,
                  "scripts/stack, which starts a component again after a kill (default $FAULTLINE_STACK)");
  run->add_option("--out", out_dir, "report directory (default .run/reports/<scenario>-<time>)");
  run->add_option("--nodes", nodes, "override the number of KWOK nodes")
      ->check(CLI::Range(std::uint64_t{1}, hs::max_workload_nodes));
  run->add_option("--pods", pods, "override the first phase's pod count")
      ->check(CLI::Range(std::uint64_t{1}, hs::max_workload_pods));
  run->add_option("--rate", rate, "override the first phase's creation rate (pods/s)")
      ->check(CLI::Range(0.0, hs::max_pod_rate));
  auto* seed_option = run->add_option("--seed", seed, "override the scenario's seed (the proxy's fault decisions)");
  run->add_option("--settle", settle, "override checks.settle (e.g. 30s)");
  run->add_option("--churn-for", churn_for, "override the `for` of every churn step (e.g. 20m)");
  run->add_option("--expect", expect, "override checks.expect (comma-separated check names)");
  run->add_flag("--no-expect", no_expect, "expect no violation (a control run)");
  run->add_option("--node-concurrency", node_concurrency, "parallel node creations")->check(CLI::Range(1u, 256u));
  run->add_option(fh::kMaxResponseFlag, max_response_mib, max_response_help)
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64} * 1024));
  run->add_option(fh::kMaxAuditRecordsFlag, limits.max_audit_records,
                  "the most proxy audit records kept for the checks over a run")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));

  auto* bench =
      app.add_subcommand("bench", "measure the pod creation rate the harness achieves (creates, then deletes pods)");
  std::uint64_t bench_pods = 3000;
  double bench_rate = 0;
  std::uint64_t bench_concurrency = 16;
  std::string bench_ns = "faultline-bench";
  bench->add_option("--env", env_file, "stack env file for the kubeconfig");
  bench->add_option("--kubeconfig", kubeconfig,
                    "admin kubeconfig (default $FAULTLINE_ADMIN_KUBECONFIG, then $KUBECONFIG)");
  bench->add_option("--pods", bench_pods, "pods to create")->check(CLI::Range(std::uint64_t{1}, hs::max_workload_pods));
  bench->add_option("--rate", bench_rate, "target rate in pods/s (0: as fast as the connections go)")
      ->check(CLI::Range(0.0, hs::max_pod_rate));
  bench->add_option("--concurrency", bench_concurrency, "parallel connections")
      ->check(CLI::Range(std::uint64_t{1}, hs::max_pod_concurrency));
  bench->add_option("--namespace", bench_ns, "namespace for the benchmark's pods");
  bench->add_option(fh::kMaxResponseFlag, max_response_mib, max_response_help)
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{64} * 1024));

  auto* validate = app.add_subcommand("validate", "load and validate a scenario file, print its errors");
  std::string validate_file;
  validate->add_option("scenario", validate_file, "scenario YAML file")->required();

  auto* system_cmd = app.add_subcommand(
      "system", "load and validate a system file (docs/systems.md), print it as JSON with placeholders filled");
  std::string system_file;
  std::vector<std::string> system_sets;
  system_cmd->add_option("system", system_file, "system file, or a shipped system's name with --systems-dir")
      ->required();
  system_cmd->add_option("--systems-dir", systems_dir, "the shipped systems (harness/systems), for a name");
  system_cmd->add_option("--set", system_sets, "PLACEHOLDER=VALUE: fill {PLACEHOLDER} (repeatable)");

  auto* matrix =
      app.add_subcommand("matrix", "matrix sweeps (scripts/soak --matrix): expand a matrix, report on a sweep");
  matrix->require_subcommand(1);
  auto* matrix_expand_cmd =
      matrix->add_subcommand("expand", "check a matrix file and write its plan and one scenario per cell");
  std::string matrix_file, matrix_out, matrix_scenarios;
  matrix_expand_cmd->add_option("matrix", matrix_file, "matrix YAML file")->required();
  matrix_expand_cmd->add_option("--out", matrix_out, "the sweep directory (plan.json, cells/<id>/scenario.yaml)")
      ->required();
  matrix_expand_cmd->add_option("--scenarios", matrix_scenarios,
                                "the shipped scenarios (harness/scenarios), for `scenario: NAME`");
  auto* matrix_report_cmd =
      matrix->add_subcommand("report", "write soak.json, soak.tsv, junit.xml and soak.html of a sweep directory");
  std::string matrix_dir;
  matrix_report_cmd->add_option("dir", matrix_dir, "the sweep directory")->required();

  namespace fe = faultline::harness::explore;
  auto* explore = app.add_subcommand(
      "explore",
      "derive fault plans from a reference run, minimize and report them (scripts/explore, docs/explore.md)");
  explore->require_subcommand(1);
  std::string explore_scenario, explore_out, explore_system = "yunikorn";
  auto* explore_reference_cmd = explore->add_subcommand(
      "reference", "write DIR/reference/scenario.yaml (the scenario without its faults) and its one-cell plan");
  explore_reference_cmd->add_option("scenario", explore_scenario, "the scenario to explore")->required();
  explore_reference_cmd->add_option("--out", explore_out, "the exploration directory")->required();
  explore_reference_cmd->add_option("--system", explore_system, "the system under test's name (default yunikorn)");
  std::vector<std::string> explore_sets;
  explore_reference_cmd->add_option(
      "--set", explore_sets, "PATH=VALUE: a value of the scenario to change (workload.nodes.count=20; repeatable)");
  fe::PlanCommand plan_command;
  std::string shard = "1/1";
  auto* explore_plan_cmd = explore->add_subcommand(
      "plan", "derive the fault plans from a reference run's audit log: DIR/plan.json, cells/<id>/scenario.yaml");
  explore_plan_cmd->add_option("scenario", plan_command.scenario_file, "the scenario to explore")->required();
  explore_plan_cmd
      ->add_option("--reference", plan_command.reference_dir,
                   "the reference run's directory (report.json, logs/proxy-audit.jsonl)")
      ->required();
  explore_plan_cmd->add_option("--out", plan_command.out, "the exploration directory")->required();
  explore_plan_cmd->add_option("--system", plan_command.system,
                               "the system under test: a shipped system's name or a system file (default yunikorn)");
  explore_plan_cmd->add_option("--systems-dir", plan_command.systems_dir,
                               "the shipped systems, for a name (default $FAULTLINE_SYSTEMS_DIR: harness/systems); "
                               "the system's explore.components are what kill and pause plans target");
  explore_plan_cmd->add_option("--shard", shard, "I/N: only the plans of shard I of N (default 1/1)");
  explore_plan_cmd->add_option("--max-plans", plan_command.max_plans, "keep the first N plans (default: all)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}));
  std::string minimize_dir, minimize_id;
  unsigned minimize_repeats = 3;
  auto* explore_minimize_cmd = explore->add_subcommand(
      "minimize-step",
      "record the last candidate's runs of a plan's minimization, write the next candidate or the result");
  explore_minimize_cmd->add_option("dir", minimize_dir, "the exploration directory")->required();
  explore_minimize_cmd->add_option("id", minimize_id, "the plan")->required();
  explore_minimize_cmd->add_option("--repeats", minimize_repeats, "runs per candidate (default 3)")
      ->check(CLI::Range(1u, fe::max_candidate_repeats));
  std::string found_dir;
  auto* explore_found_cmd = explore->add_subcommand(
      "found", "list the plans that violated an invariant, in the order they are re-run and minimized");
  explore_found_cmd->add_option("dir", found_dir, "the exploration directory")->required();
  std::vector<std::string> report_dirs;
  std::string report_out;
  auto* explore_report_cmd = explore->add_subcommand(
      "report", "merge exploration directories (shards) into explore.json, junit.xml and explore.html");
  explore_report_cmd->add_option("dirs", report_dirs, "exploration directories")->required();
  explore_report_cmd->add_option("--out", report_out, "where the reports go (default: the first directory)");

  CLI11_PARSE(app, argc, argv);
  if (*explore_reference_cmd)
    return fe::explore_reference(explore_scenario, explore_out, explore_system, explore_sets, std::cout, std::cerr);
  if (*explore_plan_cmd) {
    const std::regex shard_re("([1-9][0-9]{0,3})/([1-9][0-9]{0,3})");
    std::smatch sm;
    if (!std::regex_match(shard, sm, shard_re) || std::stoul(sm[1].str()) > std::stoul(sm[2].str())) {
      std::cerr << "faultline-harness explore plan: --shard " << shard << ": expected I/N with 1 <= I <= N <= 9999\n";
      return 2;
    }
    plan_command.shard_index = static_cast<unsigned>(std::stoul(sm[1].str()));
    plan_command.shard_count = static_cast<unsigned>(std::stoul(sm[2].str()));
    default_from(plan_command.systems_dir, {}, "FAULTLINE_SYSTEMS_DIR");
    return fe::explore_plan(plan_command, std::cout, std::cerr);
  }
  if (*explore_minimize_cmd)
    return fe::explore_minimize_step(minimize_dir, minimize_id, minimize_repeats, std::cout, std::cerr);
  if (*explore_found_cmd) return fe::explore_found(found_dir, std::cout, std::cerr);
  if (*explore_report_cmd) return fe::explore_report(report_dirs, report_out, std::cout, std::cerr);
  if (*matrix_expand_cmd) return matrix_expand(matrix_file, matrix_out, matrix_scenarios);
  if (*matrix_report_cmd) return matrix_report(matrix_dir);
  limits.max_body_bytes = max_response_mib << 20;

  if (*system_cmd) return print_system(system_file, systems_dir, system_sets);

  if (*validate) {
    if (is_system_file(validate_file)) {
      auto system = load_system_or_print(validate_file, "");
      if (!system) return 2;
      std::cout << validate_file << ": ok (system " << system->name << ", user " << system->identity.user << ")\n";
      return 0;
    }
    auto loaded = load_or_print(validate_file);
    if (!loaded) return 2;
    const auto& sc = loaded->scenario;
    std::cout << validate_file << ": ok (" << sc->faults.size() << " fault rules, " << sc->component_faults.size()
              << " component faults, " << (sc->workload ? sc->workload->phases.size() : 0) << " phases)\n";
    return 0;
  }

  if (*bench) return run_bench(env_file, kubeconfig, bench_ns, bench_pods, bench_rate, bench_concurrency, limits);

  fh::RunOptions o;
  try {
    auto env = read_env_file(env_file);
    default_from(kubeconfig, env, "FAULTLINE_ADMIN_KUBECONFIG");
    if (system_arg.empty() && scheduler.empty()) default_from(system_arg, env, "FAULTLINE_SYSTEM_FILE");
    default_from(systems_dir, env, "FAULTLINE_SYSTEMS_DIR");
    default_from(system_metrics_url, env, "FAULTLINE_SYSTEM_METRICS_URL");
    if (system_arg.empty() && !scheduler.empty() && !systems_dir.empty()) system_arg = scheduler;
    default_from(scheduler, env, "FAULTLINE_SCHEDULER");
    default_from(yunikorn_url, env, "FAULTLINE_YUNIKORN_URL");
    default_from(proxy_url, env, "FAULTLINE_PROXY_ADMIN_URL");
    default_from(o.proxy_admin_token, env, "FAULTLINE_PROXY_ADMIN_TOKEN");
    default_from(yunikorn_build, env, "FAULTLINE_YUNIKORN_BUILD");
    default_from(stack_run_dir, env, "FAULTLINE_RUN_DIR");
    default_from(stack_script, env, "FAULTLINE_STACK");
    if (!yunikorn_build.empty()) yunikorn_build = read_yunikorn_build(yunikorn_build);
  } catch (const std::exception& e) {
    std::cerr << "faultline-harness: " << e.what() << "\n";
    return 2;
  }
  auto loaded = load_or_print(scenario_file);
  if (!loaded) return 2;
  auto sc = loaded->scenario;
  std::string text = std::move(loaded->text);
  if (seed_option->count() > 0) {
    text = fh::scenario_with_seed(text, seed);
    try {
      sc = hs::load_scenario_text(text, scenario_file);
    } catch (const ff::ScenarioError& e) {
      for (const auto& err : e.errors()) std::cerr << err << "\n";
      return 2;
    }
  }

  o.kubeconfig = kubeconfig;
  o.context = context;
  if (!system_arg.empty()) {
    // The system file names the scheduler, the checks that apply and the YuniKorn data source.
    auto system = load_system_or_print(system_arg, systems_dir);
    if (!system) return 2;
    o.scheduler = system->name;
    o.scheduler_name = system->scheduler_name.empty() ? "default-scheduler" : system->scheduler_name;
    if (!system->yunikorn_rest.empty()) o.yunikorn_url = yunikorn_url.empty() ? system->yunikorn_rest : yunikorn_url;
    o.default_checks = system->checks;
    o.system = fh::SystemRecord{system->name, system->source, system->identity.user, system->identity.user_agents,
                                system->metrics ? system_metrics_url : std::string()};
    if (system->metrics) o.system->metrics_series = system->metrics->series;
  } else {
    o.scheduler = scheduler.empty() ? "yunikorn" : scheduler;
    o.yunikorn_url = o.scheduler == "yunikorn" ? yunikorn_url : std::string();
  }
  o.proxy_admin_url = proxy_url;
  o.stack_run_dir = stack_run_dir;
  o.stack_script = stack_script;
  o.out_dir = out_dir.empty() ? default_out_dir(sc->metadata.name.empty() ? "scenario" : sc->metadata.name) : out_dir;
  if (nodes > 0) o.nodes = nodes;
  if (pods > 0) o.pods = pods;
  if (rate > 0) o.rate = rate;
  if (!settle.empty()) {
    auto d = ff::parse_duration(settle);
    if (!d || d->count() <= 0 || *d > hs::max_workload_duration) {
      std::cerr << "faultline-harness: --settle: "
                << (!d                ? ff::duration_problem(settle)
                    : d->count() <= 0 ? std::string("must be greater than 0")
                                      : "must be at most " + ff::format_duration(hs::max_workload_duration))
                << "\n";
      return 2;
    }
    o.settle = *d;
  }
  if (!churn_for.empty()) {
    auto d = ff::parse_duration(churn_for);
    if (!d || d->count() <= 0) {
      std::cerr << "faultline-harness: --churn-for: "
                << (d ? "must be greater than 0" : ff::duration_problem(churn_for)) << "\n";
      return 2;
    }
    o.churn_for = *d;
  }
  if (no_expect) o.expect = std::vector<std::string>{};
  else if (!expect.empty()) o.expect = split_list(expect);
  o.node_concurrency = node_concurrency;
  o.limits = limits;

  ConsoleProgress progress;
  fh::ProgressFn progress_fn = [&progress](const std::string& line, bool final) { progress(line, final); };
  fh::Report report = fh::run_scenario(o, *sc, text, progress_fn);
  if (!o.yunikorn_url.empty()) report.yunikorn_build = yunikorn_build;
  try {
    fh::write_reports(report, o.out_dir);
  } catch (const std::exception& e) {
    std::cerr << "faultline-harness: writing reports: " << e.what() << "\n";
    report.verdict = fh::Verdict::error;
  }
  fh::print_summary(report, std::cout);
  std::cout << "reports: " << o.out_dir.string() << "/{report.json,junit.xml,report.html}\n";
  return fh::exit_code(report.verdict);
}
