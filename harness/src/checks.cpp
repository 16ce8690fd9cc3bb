#include "faultline/harness/checks.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "faultline/harness/schema/invariants.hpp"
#include "faultline/net/rfc3339.hpp"

namespace faultline::harness {
namespace {

constexpr const char* kYunikorn = "yunikorn";

std::string pod_ref(const PodState& p) { return p.ns + "/" + p.name; }

void add_evidence(CheckResult& r, std::string line) {
  if (r.evidence.size() < kMaxEvidence) {
    r.evidence.push_back(std::move(line));
  } else if (r.evidence.size() == kMaxEvidence) {
    r.evidence.push_back("... (list capped at " + std::to_string(kMaxEvidence) + "; count is exact)");
  }
}

CheckResult no_data(std::string name, std::string why) {
  CheckResult r;
  r.name = std::move(name);
  r.status = CheckStatus::no_data;
  r.summary = "no data: " + why;
  return r;
}

// no-data means a source could not be read (the pod watch never delivered its list, no YuniKorn
// snapshot, no node list). A source that was read and holds nothing to check is an empty subject:
// the check passes with count 0 and its summary says so.
bool pods_watched(const Observations& obs) { return obs.pods.watched; }

// The bind requests the proxy saw, by pod (namespace/name), in audit order: the first link of the
// YUNIKORN-3355 chain a reader wants beside a stranded pod or a phantom allocation.
class BindHistory {
 public:
  explicit BindHistory(const Observations& obs) : audited_(obs.audit.has_value()) {
    if (!audited_) return;
    for (const auto& rec : *obs.audit) {
      if (rec.resource == "pods" && rec.subresource == "binding")
        binds_[rec.namespace_ + "/" + rec.name].push_back(&rec);
    }
  }

  // "" without an audit; otherwise one clause such as
  // "binds seen by the proxy: 18:19:09.140Z no answer (connection cut)".
  std::string of(const PodState& pod) const {
    if (!audited_) return "";
    auto it = binds_.find(pod_ref(pod));
    if (it == binds_.end()) return "; no bind of it reached the proxy (refused or never sent)";
    std::string out = "; binds seen by the proxy:";
    for (const AuditRecord* rec : it->second) out += " " + time_of(rec->ts) + " " + outcome(*rec) + ",";
    out.pop_back();
    return out;
  }

 private:
  static std::string time_of(WallTime ts) {
    const std::string text = net::format_rfc3339(ts, 6);
    return text.substr(text.find('T') + 1);
  }
  static std::string outcome(const AuditRecord& rec) {
    std::string by_rule = rec.rule ? " by rule " + *rec.rule : "";
    if (rec.status == 0) return "no answer (connection cut" + by_rule + ")";
    return std::to_string(rec.status) + (rec.rule ? " (" + rec.action.value_or("") + by_rule + ")" : "");
  }

  bool audited_;
  std::map<std::string, std::vector<const AuditRecord*>> binds_;
};

bool scheduled_by_yunikorn(const PodState& p) { return p.scheduler_name == kYunikorn; }

// Everything the queue-accounting check and the stats need, computed once.
struct Accounting {
  struct PerQueue {
    std::int64_t allocated_pods = 0;   // what YuniKorn books
    std::int64_t bound_live_pods = 0;  // what the apiserver says is really there
  };
  std::map<std::string, PerQueue> queues;
  std::vector<std::string> phantoms;  // allocations with no bound, live pod behind them
  std::vector<std::string> missing;   // bound, live pods with no allocation
  std::int64_t phantom_count = 0;
  std::int64_t missing_count = 0;
  std::int64_t allocated_total = 0;
};

Accounting analyse_accounting(const Observations& obs) {
  Accounting acc;
  const YunikornSnapshot& yk = *obs.yunikorn;
  std::map<std::string, const PodState*> pod_by_uid;
  for (const auto& [uid, pod] : obs.pods.pods) pod_by_uid[uid] = &pod;

  std::optional<BindHistory> binds;  // indexed on the first phantom: most runs have none
  std::map<std::string, std::string> queue_of_allocation;
  for (const auto& app : yk.applications) {
    for (const auto& alloc : app.allocations) {
      queue_of_allocation[alloc.allocation_key] = app.queue;
      auto it = pod_by_uid.find(alloc.allocation_key);
      const PodState* pod = it == pod_by_uid.end() ? nullptr : it->second;
      if (pod != nullptr && pod->live() && pod->is_bound()) continue;
      ++acc.phantom_count;
      if (!binds) binds.emplace(obs);
      std::string why = pod == nullptr ? "no such pod in the watched namespace"
                        : !pod->live() ? "pod was deleted"
                                       : "pod is " + (pod->phase.empty() ? std::string("?") : pod->phase) +
                                             " with empty spec.nodeName" + binds->of(*pod);
      std::string name = pod != nullptr ? pod_ref(*pod) : (alloc.pod_name.empty() ? "?" : alloc.pod_name);
      acc.phantoms.push_back("phantom allocation " + alloc.allocation_key + " (pod " + name + ", app " + app.id +
                             ", queue " + app.queue + ", node " + alloc.node_id + "): " + why);
    }
  }
  for (const auto& q : yk.queues) {
    if (!q.leaf) continue;
    auto pods = q.allocated.find("pods");
    std::int64_t allocated = 0;
    if (pods != q.allocated.end()) {
      allocated = pods->second;
    } else {
      for (const auto& [key, queue] : queue_of_allocation) allocated += queue == q.name ? 1 : 0;
    }
    acc.queues[q.name].allocated_pods = allocated;
    acc.allocated_total += allocated;
  }
  for (const auto& [uid, pod] : obs.pods.pods) {
    if (!scheduled_by_yunikorn(pod) || !pod.live() || !pod.is_bound()) continue;
    auto it = queue_of_allocation.find(uid);
    std::string queue = it != queue_of_allocation.end() ? it->second
                        : !pod.queue_label.empty()      ? pod.queue_label
                                                        : "(no queue)";
    acc.queues[queue].bound_live_pods++;
    if (it == queue_of_allocation.end()) {
      ++acc.missing_count;
      acc.missing.push_back("pod " + pod_ref(pod) + " bound to " + pod.node_name +
                            " but YuniKorn lists no allocation for it (uid " + uid + ")");
    }
  }
  return acc;
}

}  // namespace

std::string to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::passed:
      return "passed";
    case CheckStatus::violated:
      return "violated";
    case CheckStatus::no_data:
      return "no-data";
    case CheckStatus::skipped:
      return "skipped";
  }
  return "?";
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "pass";
    case Verdict::fail:
      return "fail";
    case Verdict::reproduced:
      return "reproduced";
    case Verdict::error:
      return "error";
  }
  return "?";
}

CheckResult check_pods_bound(const Observations& obs) {
  const std::string name = "pods-bound";
  if (!pods_watched(obs)) return no_data(name, "the pod watch did not deliver its initial list");
  CheckResult r;
  r.name = name;
  std::int64_t live = 0;
  std::int64_t unbound = 0;
  std::int64_t not_running = 0;
  BindHistory binds(obs);
  for (const auto& [uid, pod] : obs.pods.pods) {
    if (!pod.live()) continue;
    ++live;
    if (!pod.is_bound()) {
      ++unbound;
      add_evidence(r, "pod " + pod_ref(pod) + " is " + (pod.phase.empty() ? "Pending" : pod.phase) +
                          " with empty spec.nodeName (uid " + uid + ")" + binds.of(pod));
    } else if (pod.phase != "Running") {
      ++not_running;
      add_evidence(r, "pod " + pod_ref(pod) + " bound to " + pod.node_name + " but phase is " +
                          (pod.phase.empty() ? "unknown" : pod.phase));
    }
  }
  r.count = unbound + not_running;
  if (live == 0) {
    r.status = CheckStatus::passed;
    r.summary = "0 live pods to check (" + std::to_string(obs.pods.pods.size()) + " observed, all deleted)";
    return r;
  }
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary = std::to_string(live - r.count) + "/" + std::to_string(live) + " live pods bound and Running; " +
              std::to_string(unbound) + " unbound, " + std::to_string(not_running) + " bound but not Running";
  return r;
}

CheckResult check_queue_accounting(const Observations& obs) {
  const std::string name = "queue-accounting";
  if (!obs.yunikorn) return no_data(name, "no YuniKorn REST snapshot was taken");
  if (!pods_watched(obs)) return no_data(name, "the pod watch did not deliver its initial list");
  Accounting acc = analyse_accounting(obs);
  CheckResult r;
  r.name = name;
  std::int64_t difference = 0;
  std::vector<std::string> per_queue;
  for (const auto& [queue, q] : acc.queues) {
    if (q.allocated_pods == 0 && q.bound_live_pods == 0) continue;
    difference += std::llabs(q.allocated_pods - q.bound_live_pods);
    per_queue.push_back("queue " + queue + ": allocatedResource.pods=" + std::to_string(q.allocated_pods) +
                        ", bound live pods=" + std::to_string(q.bound_live_pods));
  }
  for (auto& line : per_queue) add_evidence(r, line);
  for (auto& line : acc.phantoms) add_evidence(r, line);
  for (auto& line : acc.missing) add_evidence(r, line);
  r.count = std::max(acc.phantom_count + acc.missing_count, difference);
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  if (per_queue.empty() && r.count == 0) {
    r.summary = "0 allocations to check: no queue holds allocations and no yunikorn pod is bound";
    return r;
  }
  r.summary = std::to_string(acc.phantom_count) + " phantom allocations, " + std::to_string(acc.missing_count) +
              " bound pods without allocation, queue difference " + std::to_string(difference);
  return r;
}

CheckResult check_no_orphan_allocations(const Observations& obs) {
  const std::string name = "no-orphan-allocations";
  if (!obs.yunikorn) return no_data(name, "no YuniKorn REST snapshot was taken");
  const YunikornSnapshot& yk = *obs.yunikorn;
  std::map<std::string, std::set<std::string>> app_allocations;
  std::set<std::string> node_ids;
  for (const auto& node : yk.nodes) node_ids.insert(node.id);
  for (const auto& app : yk.applications) {
    auto& keys = app_allocations[app.id];
    for (const auto& alloc : app.allocations) keys.insert(alloc.allocation_key);
  }
  CheckResult r;
  r.name = name;
  std::int64_t on_nodes = 0;
  for (const auto& node : yk.nodes) {
    for (const auto& alloc : node.allocations) {
      ++on_nodes;
      auto app = app_allocations.find(alloc.application_id);
      if (app == app_allocations.end()) {
        ++r.count;
        add_evidence(r, "allocation " + alloc.allocation_key + " on node " + node.id +
                            " belongs to unknown application '" + alloc.application_id + "'");
      } else if (!app->second.contains(alloc.allocation_key)) {
        ++r.count;
        add_evidence(r, "allocation " + alloc.allocation_key + " on node " + node.id +
                            " is not listed by application " + alloc.application_id);
      }
    }
  }
  for (const auto& app : yk.applications) {
    for (const auto& alloc : app.allocations) {
      if (!node_ids.contains(alloc.node_id)) {
        ++r.count;
        add_evidence(r, "allocation " + alloc.allocation_key + " of application " + app.id + " is on node '" +
                            alloc.node_id + "' that YuniKorn does not know");
      }
    }
  }
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary = std::to_string(r.count) + " orphan allocations among " + std::to_string(on_nodes) + " allocations on " +
              std::to_string(yk.nodes.size()) + " nodes";
  return r;
}

CheckResult check_no_unexpected_deletes(const Observations& obs) {
  const std::string name = "no-unexpected-deletes";
  if (!pods_watched(obs)) return no_data(name, "the pod watch did not deliver its initial list");
  CheckResult r;
  r.name = name;
  std::set<std::string> offending;                 // ns/name, counted once whichever source saw it
  std::map<std::string, std::string> audit_agent;  // ns/name -> user agent of a DELETE seen by the proxy
  if (obs.audit) {
    for (const auto& rec : *obs.audit) {
      bool pod_delete =
          (rec.verb == "delete" || rec.verb == "deletecollection") && rec.resource == "pods" && rec.subresource.empty();
      if (!pod_delete) continue;
      if (!obs.harness_user_agent.empty() && rec.user_agent.starts_with(obs.harness_user_agent)) continue;
      std::string ref = rec.namespace_ + "/" + (rec.name.empty() ? "*" : rec.name);
      audit_agent[ref] = rec.user_agent;
      offending.insert(ref);
      // Whether the pod still existed: 200, the apiserver deleted it; 404, it was already gone.
      const std::string outcome = rec.status >= 200 && rec.status < 300 ? ", the pod existed"
                                  : rec.status == 404                   ? ", already gone"
                                                                        : "";
      add_evidence(r, "audit #" + std::to_string(rec.seq) + " " + net::format_rfc3339(rec.ts, 6) + ": " + rec.method +
                          " of pod " + ref + " by '" + rec.user_agent + "' -> " + std::to_string(rec.status) + outcome +
                          " (" + rec.path + ")");
    }
  }
  for (const auto& [uid, pod] : obs.pods.pods) {
    if (pod.live() || obs.pods.deleted_by_harness.contains(uid)) continue;
    std::string ref = pod_ref(pod);
    offending.insert(ref);
    auto agent = audit_agent.find(ref);
    add_evidence(r, "pod " + ref + " deleted at " + net::format_rfc3339(*pod.deleted, 3) + " (seen by the pod watch; " +
                        (agent != audit_agent.end() ? "deleted by '" + agent->second + "'"
                                                    : std::string("deleter did not pass through the proxy")) +
                        ")");
  }
  r.count = static_cast<std::int64_t>(offending.size());
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary =
      std::to_string(r.count) + " pods deleted by someone other than the harness (" +
      (obs.audit ? std::to_string(obs.audit->size()) + " proxy audit records and " : std::string("no proxy audit; ")) +
      "the pod watch of " + std::to_string(obs.pods.pods.size()) + " pods)";
  return r;
}

CheckResult check_bound_to_live_node(const Observations& obs) {
  const std::string name = "bound-to-live-node";
  if (!pods_watched(obs)) return no_data(name, "the pod watch did not deliver its initial list");
  if (!obs.live_nodes) return no_data(name, "the nodes could not be listed from the apiserver");
  std::set<std::string> nodes(obs.live_nodes->begin(), obs.live_nodes->end());
  CheckResult r;
  r.name = name;
  std::int64_t bound = 0;
  for (const auto& [uid, pod] : obs.pods.pods) {
    if (!pod.live() || !pod.is_bound()) continue;
    ++bound;
    if (!nodes.contains(pod.node_name)) {
      ++r.count;
      add_evidence(r, "pod " + pod_ref(pod) + " is bound to node " + pod.node_name + " which does not exist");
    }
  }
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  if (bound == 0) {
    r.summary =
        "0 bound pods to check (no live pod is bound to any node; " + std::to_string(nodes.size()) + " live nodes)";
    return r;
  }
  r.summary = std::to_string(bound - r.count) + "/" + std::to_string(bound) + " bound pods are on one of " +
              std::to_string(nodes.size()) + " live nodes";
  return r;
}

namespace {

using CheckFn = CheckResult (*)(const Observations&);

struct CheckEntry {
  schema::Invariant invariant;
  CheckFn check;
};

// One check per invariant of faults' table. Sized by that table, so an invariant added there
// without an entry here leaves a hole that the static_assert below rejects.
constexpr std::array<CheckEntry, schema::invariant_specs.size()> check_table{{
    {schema::Invariant::pods_bound, &check_pods_bound},
    {schema::Invariant::queue_accounting, &check_queue_accounting},
    {schema::Invariant::no_orphan_allocations, &check_no_orphan_allocations},
    {schema::Invariant::no_unexpected_deletes, &check_no_unexpected_deletes},
    {schema::Invariant::bound_to_live_node, &check_bound_to_live_node},
}};

consteval bool every_invariant_has_one_check() {
  for (const auto& spec : schema::invariant_specs) {
    int found = 0;
    for (const auto& entry : check_table) found += entry.invariant == spec.id && entry.check != nullptr ? 1 : 0;
    if (found != 1) return false;
  }
  return true;
}
static_assert(every_invariant_has_one_check(), "every invariant in schema::invariant_specs needs exactly one check");

CheckFn check_of(schema::Invariant invariant) {
  for (const auto& entry : check_table)
    if (entry.invariant == invariant) return entry.check;
  return nullptr;  // unreachable: the static_assert covers every invariant
}

}  // namespace

std::vector<CheckResult> run_checks(const std::vector<std::string>& names, const std::vector<std::string>& expect,
                                    const Observations& obs) {
  for (const auto& e : expect) {
    if (std::find(names.begin(), names.end(), e) == names.end())
      throw std::invalid_argument("expect lists '" + e + "' which is not among the invariants to check");
  }
  std::vector<const schema::InvariantSpec*> specs;
  for (const auto& name : names) {
    const schema::InvariantSpec* spec = schema::find_invariant(name);
    if (spec == nullptr) throw std::invalid_argument("unknown check '" + name + "'");
    specs.push_back(spec);
  }
  std::vector<CheckResult> results;
  for (const schema::InvariantSpec* spec : specs) {
    CheckResult r;
    if (spec->needs_yunikorn && obs.scheduler != kYunikorn) {
      r.name = std::string(spec->name);
      r.status = CheckStatus::skipped;
      r.summary = "skipped: needs YuniKorn's REST API, scheduler is " + obs.scheduler;
    } else {
      r = check_of(spec->id)(obs);
    }
    r.expected_violated = std::find(expect.begin(), expect.end(), spec->name) != expect.end();
    results.push_back(std::move(r));
  }
  return results;
}

Verdict decide_verdict(const std::vector<CheckResult>& results) {
  bool any_expected = false;
  bool exactly_expected = true;
  bool any_failed = false;
  for (const auto& r : results) {
    any_expected = any_expected || r.expected_violated;
    any_failed = any_failed || r.failed();
    if (r.status == CheckStatus::no_data) exactly_expected = false;  // missing data never reproduces
    if (r.expected_violated != (r.status == CheckStatus::violated)) exactly_expected = false;
  }
  if (!any_expected) return any_failed ? Verdict::fail : Verdict::pass;
  return exactly_expected ? Verdict::reproduced : Verdict::fail;
}

RunStats compute_stats(const Observations& obs) {
  RunStats s;
  for (const auto& [uid, pod] : obs.pods.pods) {
    ++s.pods;
    if (!pod.live()) {
      ++s.deleted_pods;
      continue;
    }
    if (pod.is_bound()) ++s.bound_pods;
    else ++s.stranded_pods;
    if (pod.phase == "Running") ++s.running_pods;
  }
  if (obs.yunikorn && obs.scheduler == kYunikorn) {
    Accounting acc = analyse_accounting(obs);
    s.queue_allocated_pods = acc.allocated_total;
    s.phantom_allocations = acc.phantom_count;
  }
  if (obs.audit) {
    s.binds_succeeded = 0;
    s.binds_failed = 0;
    for (const auto& rec : *obs.audit) {
      if (rec.resource != "pods" || rec.subresource != "binding") continue;
      ++*(rec.status >= 200 && rec.status < 300 ? s.binds_succeeded : s.binds_failed);
    }
  }
  return s;
}

}  // namespace faultline::harness
