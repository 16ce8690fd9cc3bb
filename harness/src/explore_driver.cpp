// `faultline-harness explore reference|plan|found|minimize-step|report` (explore_driver.hpp).
#include "faultline/harness/explore_driver.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "faultline/faults/file.hpp"
#include "faultline/faults/scenario.hpp"
#include "faultline/harness/explore_minimize.hpp"
#include "faultline/harness/explore_plan.hpp"
#include "faultline/harness/explore_report.hpp"
#include "faultline/harness/report_read.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/schema/system.hpp"
#include "faultline/harness/schema/yaml_edit.hpp"
#include "faultline/net/certs.hpp"

namespace faultline::harness::explore {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr std::size_t kMaxPlanBytes = 16 * 1024 * 1024;
constexpr std::size_t kMaxStateBytes = 16 * 1024 * 1024;

std::string absolute_path(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(p, ec);
  return (ec ? p : a).string();
}

bool plain_id(std::string_view id) {
  if (id.empty() || id.size() > 200 || id.front() == '.' || id.front() == '-') return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// A cell of the sweep plan format (sweep.hpp's plan_json), to which the caller adds its own keys.
json::object cell_json(const std::string& id) {
  return json::object{
      {"id", id}, {"values", json::array{}}, {"cluster", ""}, {"stackArgs", json::array{}}, {"expected", "pass"}};
}

json::object plan_head(const std::string& name, const std::string& scenario, const std::string& system,
                       std::uint64_t runs) {
  return json::object{{"name", name},   {"scenario", scenario}, {"scheduler", system},
                      {"yunikorn", ""}, {"runs", runs},         {"axes", json::array{}}};
}

// Writes DIR/plan.json, refusing to replace a different plan (resuming never mixes two). The same
// plan is left as it is: the runs its cells were given since (re-runs of violating plans) stay.
void write_plan(const fs::path& dir, const json::object& plan, bool replace) {
  const std::string text = json::serialize(plan) + "\n";
  std::error_code ec;
  if (!replace && fs::exists(dir / "plan.json", ec)) {
    boost::system::error_code jec;
    json::value old = json::parse(faults::read_regular_file(dir / "plan.json", kMaxPlanBytes, "a plan"), jec);
    if (!jec && old.is_object() && old.as_object().contains("cells") && old.at("cells").is_array()) {
      for (auto& c : old.at("cells").as_array()) {
        if (!c.is_object()) continue;
        json::object kept;  // in order (object::erase moves the last key into the gap)
        for (const auto& kv : c.as_object())
          if (kv.key() != "runs") kept[kv.key()] = kv.value();
        c = std::move(kept);
      }
    }
    if (jec || json::serialize(old) + "\n" != text)
      throw std::runtime_error(
          (dir / "plan.json").string() +
          " is another plan (of another scenario, reference run, shard or version); use another --out");
    return;
  }
  fs::create_directories(dir);
  net::write_file(dir / "plan.json", text);
}

// "explore-<scenario>", without repeating a name that says it already.
std::string exploration_name(const std::string& scenario) {
  return scenario.starts_with("explore") ? scenario : "explore-" + scenario;
}

std::string scenario_name(const std::string& text, const std::string& file) {
  const auto sc = schema::load_scenario_text(text, file);
  return sc->metadata.name.empty() ? fs::path(file).stem().string() : sc->metadata.name;
}

void print_scenario_errors(const faults::ScenarioError& e, std::ostream& err) {
  for (const auto& line : e.errors()) err << line << "\n";
}

}  // namespace

int explore_reference(const std::string& scenario_file, const std::string& dir, const std::string& system,
                      const std::vector<std::string>& sets, std::ostream& out, std::ostream& err) {
  try {
    std::string text = faults::read_scenario_file(scenario_file);
    const std::string name = scenario_name(text, scenario_file);
    if (sets.size() > max_sets) throw std::runtime_error(fmt::format("more than {} --set", max_sets));
    std::string set_list;
    for (const auto& s : sets) {
      const auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw std::runtime_error("--set " + s + ": expected PATH=VALUE (workload.nodes.count=20)");
      try {
        text = schema::with_value_at(text, s.substr(0, eq), s.substr(eq + 1));
      } catch (const std::exception& e) {
        throw std::runtime_error("--set " + s + ": " + e.what());
      }
      set_list += (set_list.empty() ? "" : ", ") + s;
    }
    std::string reference = reference_scenario(text);
    schema::load_scenario_text(reference,
                               scenario_file + (sets.empty() ? "" : " with --set " + set_list) + " (reference)");
    if (!sets.empty())
      reference = "# " + fs::path(scenario_file).filename().string() + " with " + set_list + "\n" + reference;
    const fs::path ref = fs::path(dir) / "reference";
    json::object plan = plan_head(exploration_name(name) + "-reference", absolute_path(scenario_file), system, 1);
    json::object cell = cell_json("reference");
    cell["dir"] = ".";
    plan["cells"] = json::array{std::move(cell)};
    write_plan(ref, plan, false);
    std::error_code ec;
    if (fs::exists(ref / "scenario.yaml", ec) &&
        faults::read_regular_file(ref / "scenario.yaml", kMaxPlanBytes, "a reference scenario") != reference)
      throw std::runtime_error((ref / "scenario.yaml").string() +
                               " is another reference scenario (the scenario or a --set changed); use another --out");
    net::write_file(ref / "scenario.yaml", reference);
    out << scenario_file << ": reference scenario (faults, componentFaults and checks.expect removed) -> "
        << (ref / "scenario.yaml").string() << "\n";
    return 0;
  } catch (const faults::ScenarioError& e) {
    print_scenario_errors(e, err);
    return 2;
  } catch (const std::exception& e) {
    err << "faultline-harness explore reference: " << e.what() << "\n";
    return 2;
  }
}

int explore_plan(const PlanCommand& c, std::ostream& out, std::ostream& err) {
  try {
    if (c.shard_count == 0 || c.shard_index < 1 || c.shard_index > c.shard_count)
      throw std::runtime_error(fmt::format("--shard {}/{}: I must be 1..N", c.shard_index, c.shard_count));
    const std::string text = faults::read_scenario_file(c.scenario_file);
    const std::string name = scenario_name(text, c.scenario_file);
    const std::string reference = reference_scenario(text);
    const fs::path ref(c.reference_dir);
    const auto records = read_audit_file(ref / "logs" / "proxy-audit.jsonl", max_reference_records);
    GenerateOptions options;
    std::error_code ec;
    if (fs::exists(ref / "report.json", ec)) {
      const RunReport report =
          read_run_report(faults::read_regular_file(ref / "report.json", max_report_bytes, "a report"));
      if (!report.object) throw std::runtime_error((ref / "report.json").string() + ": " + report.malformed);
      options.armed = report.armed;
      options.finished = report.finished;
    }
    // The system's file says which components its kill and pause plans target.
    std::string components_said;
    if (!c.systems_dir.empty() || fs::is_regular_file(c.system, ec)) {
      const schema::System system = schema::load_system_file(schema::resolve_system(c.system, c.systems_dir));
      options.components = system.explore_components;
      std::string targets;
      for (const auto& component : options.components)
        targets += (targets.empty() ? "" : ", ") + std::string(schema::name_of(component.target));
      components_said = targets.empty() ? "the stack's scheduler (" + system.source + " declares no explore.components)"
                                        : targets + " (explore.components of " + system.source + ")";
    } else {
      components_said = "the stack's scheduler (system " + c.system + " not looked up: no --systems-dir)";
    }
    Plans generated = generate_plans(reference, records, options);
    if (c.max_plans != 0 && generated.plans.size() > c.max_plans) {
      const std::uint64_t removed = generated.plans.size() - c.max_plans;
      generated.plans.resize(c.max_plans);
      generated.rules.push_back({"max-plans", c.max_plans, removed, fmt::format("--max-plans {}", c.max_plans)});
    }
    if (generated.plans.size() > max_plans)
      throw std::runtime_error(fmt::format("{} plans; at most {}", generated.plans.size(), max_plans));
    std::set<std::string> ids;
    for (const auto& p : generated.plans) {
      if (!plain_id(p.id)) throw std::runtime_error("plan id '" + p.id + "' is not a plain file name");
      if (!ids.insert(p.id).second) throw std::runtime_error("plan id '" + p.id + "' twice");
    }
    std::map<std::string, std::uint64_t> index_of;
    for (std::size_t i = 0; i < generated.plans.size(); ++i) index_of[generated.plans[i].id] = i;
    const std::vector<Plan> mine = shard_of(generated.plans, c.shard_index, c.shard_count);

    const fs::path dir(c.out);
    json::object plan = plan_head(exploration_name(name), absolute_path(c.scenario_file), c.system, 1);
    plan["explore"] = json::object{{"shard", fmt::format("{}/{}", c.shard_index, c.shard_count)},
                                   {"plans", generated.plans.size()},
                                   {"reference", absolute_path(ref)}};
    json::array cells;
    for (const auto& p : mine) {
      // Every plan must be a scenario a user can run alone.
      schema::load_scenario_text(p.scenario_yaml, "plan " + p.id);
      json::object cell = cell_json(p.id);
      cell["index"] = index_of.at(p.id);
      cell["kind"] = p.kind;
      cell["site"] = p.site;
      cell["source"] = p.source;
      cell["faults"] = json::value_from(p.faults);
      cells.push_back(std::move(cell));
    }
    plan["cells"] = std::move(cells);
    write_plan(dir, plan, false);
    for (const auto& p : mine) {
      fs::create_directories(dir / "cells" / p.id);
      net::write_file(dir / "cells" / p.id / "scenario.yaml", p.scenario_yaml);
    }
    net::write_file(dir / "generation.tsv", generation_tsv(generated.rules));
    out << c.scenario_file << ": " << records.size() << " audit records of the reference run, "
        << generated.plans.size() << " plans; shard " << c.shard_index << "/" << c.shard_count << ": " << mine.size()
        << " -> " << (dir / "plan.json").string() << "\n"
        << "  kill and pause plans target " << components_said << "\n";
    for (const auto& r : generated.rules)
      out << fmt::format("  {:<24} produced {:>6}  removed {:>6}{}\n", r.name, r.produced, r.removed,
                         r.why_removed.empty() ? "" : "  (" + r.why_removed + ")");
    return 0;
  } catch (const faults::ScenarioError& e) {
    print_scenario_errors(e, err);
    return 2;
  } catch (const std::exception& e) {
    err << "faultline-harness explore plan: " << e.what() << "\n";
    return 2;
  }
}

int explore_minimize_step(const std::string& dir_arg, const std::string& id, unsigned repeats, std::ostream& out,
                          std::ostream& err) {
  try {
    if (!plain_id(id)) throw std::runtime_error("plan id '" + id + "' is not a plain name");
    if (repeats < 1 || repeats > max_candidate_repeats) throw std::runtime_error("--repeats must be 1..100");
    const fs::path dir(dir_arg);
    const json::object plan =
        json::parse(faults::read_regular_file(dir / "plan.json", kMaxPlanBytes, "an exploration plan")).as_object();
    const std::string exploration(plan.at("name").as_string());
    const std::string scheduler(plan.at("scheduler").as_string());
    const json::object* cell = nullptr;
    for (const auto& c : plan.at("cells").as_array())
      if (c.as_object().at("id").as_string() == id) cell = &c.as_object();
    if (cell == nullptr) throw std::runtime_error((dir / "plan.json").string() + " has no plan " + id);
    const fs::path mdir = dir / "minimize" / id;
    fs::create_directories(mdir);
    std::error_code ec;
    if (fs::exists(mdir / "minimized.yaml", ec)) {
      out << "minimized " << (mdir / "minimized.yaml").string() << "\n";
      return 0;
    }

    // The plan's runs: in how many it violated an invariant, and the invariants its first violating
    // run violated (what `explore found` groups it by), which every kept candidate must violate.
    std::set<std::string> targets;
    std::uint64_t found = 0, counted = 0;
    const std::uint64_t plan_runs =
        std::min<std::uint64_t>(cell->contains("runs") ? cell->at("runs").to_number<std::uint64_t>()
                                                       : plan.at("runs").to_number<std::uint64_t>(),
                                100);
    for (std::uint64_t r = 1; r <= plan_runs; ++r) {
      const fs::path report = dir / "cells" / id / fmt::format("run-{:02d}", r) / "report.json";
      if (!fs::exists(report, ec)) continue;
      const PlanRun run = classify_run(faults::read_regular_file(report, max_report_bytes, "a report"), r);
      if (run.outcome == "found" || run.outcome == "pass") ++counted;
      if (run.outcome == "found" && found++ == 0) targets.insert(run.violated.begin(), run.violated.end());
    }
    if (targets.empty())
      throw std::runtime_error("plan " + id + " violated no invariant in its runs: nothing to minimize");

    // The minimizer, from its state or new.
    std::optional<Minimizer> m;
    if (fs::exists(mdir / "state.json", ec)) {
      m = Minimizer::from_state_json(
          faults::read_regular_file(mdir / "state.json", kMaxStateBytes, "a minimizer state"));
    } else {
      m.emplace(faults::read_scenario_file(dir / "cells" / id / "scenario.yaml"),
                std::vector<std::string>(targets.begin(), targets.end()), repeats);
    }

    // The candidate written last: record its runs once they are all there.
    if (fs::exists(mdir / "pending.json", ec)) {
      const json::object pending =
          json::parse(faults::read_regular_file(mdir / "pending.json", kMaxStateBytes, "a pending candidate"))
              .as_object();
      const Candidate cand{std::string(pending.at("id").as_string()), std::string(pending.at("scenario").as_string()),
                           std::string(pending.at("what").as_string())};
      const unsigned want = pending.at("runs").to_number<unsigned>();
      std::vector<RunOutcome> outcomes;
      for (unsigned r = 1; r <= want; ++r) {
        const fs::path report = mdir / cand.id / fmt::format("run-{:02d}", r) / "report.json";
        if (!fs::exists(report, ec)) break;
        outcomes.push_back(outcome_of_report(faults::read_regular_file(report, max_report_bytes, "a report")));
      }
      if (outcomes.size() < want) {
        // Not run yet (or interrupted): the same candidate again.
        out << "candidate " << mdir.string() << "\n";
        return 0;
      }
      const std::size_t kept_before = m->kept();
      m->record(cand, outcomes);
      // A run reproduced when it ended fail or reproduced with the targets violated: a run that
      // ended `error` (a fault that never fired, say) may have checks violated by its cut-short
      // settle, which prove nothing.
      unsigned reproduced = 0;
      for (const auto& o : outcomes) {
        const std::set<std::string> v(o.violated.begin(), o.violated.end());
        if ((o.verdict == "fail" || o.verdict == "reproduced") &&
            std::includes(v.begin(), v.end(), targets.begin(), targets.end()))
          ++reproduced;
      }
      std::string history = fmt::format("{}\t{}/{}\t{}\t{}\n", cand.id, reproduced, outcomes.size(),
                                        m->kept() > kept_before ? "yes" : "no", cand.what);
      std::string old;
      if (fs::exists(mdir / "history.tsv", ec))
        old = faults::read_regular_file(mdir / "history.tsv", kMaxStateBytes, "a minimizer history");
      else old = "candidate\treproduced\tkept\twhat\n";
      net::write_file(mdir / "history.tsv", old + history);
      net::write_file(mdir / "state.json", m->state_json());
      fs::remove(mdir / "pending.json", ec);
    }

    std::optional<Candidate> next;
    if (!m->done()) next = m->next();
    if (!next) {
      std::string vlist;
      for (const auto& t : targets) vlist += (vlist.empty() ? "" : ", ") + t;
      // Paths relative to the exploration's directory: the file is meant to be copied elsewhere.
      const std::string header = fmt::format(
          "# Minimized by faultline-harness explore from plan {} of exploration {}\n"
          "# ({}: {}, from {}).\n"
          "# Violates: {}. The plan violated an invariant in {} of {} runs; {}.\n"
          "# In the exploration's directory: the plan in cells/{}/scenario.yaml, the minimization in minimize/{}/.\n"
          "# Run it: make chaos SCENARIO=<this file> SYSTEM={}\n",
          id, exploration, cell->contains("kind") ? std::string(cell->at("kind").as_string()) : "",
          cell->contains("site") ? std::string(cell->at("site").as_string()) : "",
          cell->contains("source") ? std::string(cell->at("source").as_string()) : "", vlist, found, counted,
          fs::exists(mdir / "history.tsv", ec)
              ? fmt::format("{} candidate(s) tried, {} kept (history.tsv: how often each reproduced)", m->proposed(),
                            m->kept())
              : std::string("no smaller candidate was left to try"),
          id, id, scheduler);
      net::write_file(mdir / "state.json", m->state_json());
      net::write_file(mdir / "minimized.yaml", m->minimized_yaml(header));
      out << "minimized " << (mdir / "minimized.yaml").string() << "\n";
      return 0;
    }
    if (!plain_id(next->id)) throw std::runtime_error("candidate id '" + next->id + "' is not a plain name");
    fs::create_directories(mdir / next->id);
    net::write_file(mdir / next->id / "scenario.yaml", next->scenario_yaml);
    json::object cplan = plan_head(exploration + "-minimize-" + id, absolute_path(dir / "cells" / id / "scenario.yaml"),
                                   scheduler, repeats);
    json::object ccell = cell_json(next->id);
    ccell["dir"] = next->id;
    ccell["what"] = next->what;
    cplan["cells"] = json::array{std::move(ccell)};
    write_plan(mdir, cplan, true);
    net::write_file(mdir / "state.json", m->state_json());
    net::write_file(mdir / "pending.json",
                    json::serialize(json::object{
                        {"id", next->id}, {"what", next->what}, {"runs", repeats}, {"scenario", next->scenario_yaml}}) +
                        "\n");
    out << "candidate " << mdir.string() << "\n";
    return 0;
  } catch (const faults::ScenarioError& e) {
    print_scenario_errors(e, err);
    return 2;
  } catch (const std::exception& e) {
    err << "faultline-harness explore minimize-step: " << e.what() << "\n";
    return 2;
  }
}

int explore_found(const std::string& dir, std::ostream& out, std::ostream& err) {
  try {
    for (const auto& f : findings(read_exploration({fs::path(dir)}))) {
      std::string violated;
      for (const auto& v : f.violated) violated += (violated.empty() ? "" : ",") + v;
      out << f.id << "\t" << (f.first ? "first" : "more") << "\t" << violated << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    err << "faultline-harness explore found: " << e.what() << "\n";
    return 2;
  }
}

int explore_report(const std::vector<std::string>& dirs, const std::string& out_dir, std::ostream& out,
                   std::ostream& err) {
  try {
    std::vector<fs::path> paths(dirs.begin(), dirs.end());
    const Exploration e = read_exploration(paths);
    const fs::path to = out_dir.empty() ? paths.front() : fs::path(out_dir);
    write_explore_reports(e, to);
    out << "plan\tkind\tfired\tverdict\trate\tviolated\n";
    for (const auto& p : e.plans) {
      std::string violated;
      for (const auto& v : p.violated) violated += (violated.empty() ? "" : ",") + v;
      out << p.id << "\t" << p.kind << "\t" << (p.fired ? "yes" : "no") << "\t" << p.verdict << "\t"
          << (p.rate ? fmt::format("{}/{}", p.found, p.counted) : "-") << "\t" << (violated.empty() ? "-" : violated)
          << "\n";
    }
    err << "explore: " << (to / "explore.json").string() << ", " << (to / "junit.xml").string() << ", "
        << (to / "explore.html").string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    err << "faultline-harness explore report: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace faultline::harness::explore
