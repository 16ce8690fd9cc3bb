#include "faultline/harness/explore_plan.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "faultline/faults/match.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/yaml_load.hpp"
#include "faultline/harness/schema/scenario.hpp"

namespace faultline::harness::explore {
namespace {

using audit::Record;
using Clock = std::chrono::system_clock;

constexpr std::array<std::string_view, 4> write_verbs = {"create", "update", "patch", "delete"};
constexpr std::string_view outage_length = "10s";
constexpr std::string_view component_down_for = "10s";
constexpr std::string_view relist_window = "2m";
constexpr std::string_view gone_message = "too old resource version (apiserver restarted)";
// Bounds on what one plan's scenario holds, whatever the audit: a user agent glob, the user agents
// a match lists (beyond: the match names none, the proxy sees only the system under test), the
// watch-gone rules of an outage-relist (beyond: one rule for every watch).
constexpr std::size_t max_agent_glob_bytes = 512;
constexpr std::size_t max_match_agents = 64;
constexpr std::size_t max_relist_rules = 64;

bool is_write(std::string_view verb) {
  return std::find(write_verbs.begin(), write_verbs.end(), verb) != write_verbs.end();
}

bool is_2xx(int code) { return code >= 200 && code < 300; }

// Reached the apiserver and succeeded (the reference run injects nothing, so the client saw what
// the apiserver answered).
bool succeeded(const Record& r) { return r.upstream_status && is_2xx(*r.upstream_status) && is_2xx(r.status); }

// ---------------------------------------------------------------------------------------------
// YAML text of the plans' rules: every value either a fixed word or a JSON string (a valid YAML
// double-quoted scalar), so nothing the audit holds can break the document.

std::string yaml_quoted(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

std::string flow_list(const std::vector<std::string>& items, bool quote) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + (quote ? yaml_quoted(items[i]) : items[i]);
  return out + "]";
}

// A match block, rendered as YAML and built as faults::Match from the same values: the counts
// computed here are those the proxy (and the harness, for componentFaults) will count.
struct MatchSpec {
  std::vector<std::string> verbs;
  std::vector<std::string> resources;
  std::vector<std::string> namespaces;
  std::vector<std::string> names;
  std::vector<std::string> user_agents;

  std::string yaml() const {
    std::vector<std::string> parts;
    if (!verbs.empty()) parts.push_back("verbs: " + flow_list(verbs, false));
    if (!resources.empty()) parts.push_back("resources: " + flow_list(resources, true));
    if (!namespaces.empty()) parts.push_back("namespaces: " + flow_list(namespaces, true));
    if (!names.empty()) parts.push_back("names: " + flow_list(names, true));
    if (!user_agents.empty()) parts.push_back("userAgents: " + flow_list(user_agents, true));
    std::string out = "{";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    return out + "}";
  }
  faults::Match match() const {
    faults::Match m;
    m.verbs = verbs;
    m.resources = resources;
    m.namespaces = namespaces;
    m.names = names;
    m.user_agents = user_agents;
    return m;
  }
};

// A glob literal: `*` and `?` in the text become `?` (which matches them).
std::string glob_literal(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '*') c = '?';
  return out;
}

// The user agent as a glob that survives a version change: "kube-controller-manager/v1.36.3
// (linux/amd64) kubernetes/$Format/daemon-set-controller" -> "kube-controller-manager/*
// (linux/amd64) kubernetes/$Format/daemon-set-controller", "yunikorn/v1.9.0" -> "yunikorn/*".
std::string agent_glob(std::string_view ua) {
  const auto slash = ua.find('/');
  if (slash == std::string_view::npos) return glob_literal(ua);
  const auto space = ua.find(' ', slash);
  std::string glob = glob_literal(ua.substr(0, slash + 1)) + "*" +
                     (space == std::string_view::npos ? "" : glob_literal(ua.substr(space)));
  // Within the loader's bound on globs (faults::max_glob_pattern_bytes).
  if (glob.size() > max_agent_glob_bytes) glob = glob.substr(0, max_agent_glob_bytes - 1) + "*";
  return glob;
}

// A short name for ids: client-go's suffix ("daemon-set-controller", from ".../kubernetes/$Format/
// daemon-set-controller") or the product ("yunikorn").
std::string agent_short(std::string_view ua) {
  const auto last_space = ua.rfind(' ');
  std::string_view last = last_space == std::string_view::npos ? ua : ua.substr(last_space + 1);
  const auto first = last.find('/');
  const auto second = first == std::string_view::npos ? std::string_view::npos : last.find('/', first + 1);
  if (last_space != std::string_view::npos && second != std::string_view::npos && second + 1 < last.size())
    return std::string(last.substr(second + 1));
  return std::string(ua.substr(0, ua.find('/')));
}

// A short name for the id of a peer's plans: the first word of its user agent when that names the
// process ("airflow-scheduler-2" of "airflow-scheduler-2 OpenAPI-Generator/23.6.0/python"), else
// agent_short.
std::string peer_short(std::string_view ua) {
  const auto space = ua.find(' ');
  if (space != std::string_view::npos && space > 0 && ua.substr(0, space).find('/') == std::string_view::npos)
    return std::string(ua.substr(0, space));
  return agent_short(ua);
}

std::string slug(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok) out.push_back(c);
    else if (!out.empty() && out.back() != '-') out.push_back('-');
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// ---------------------------------------------------------------------------------------------
// The audit as the proxy counted it.

struct Entry {
  const Record* record = nullptr;
  faults::Request request;
  bool system = false;       // the system under test's (not an ignored user agent)
  std::string resource;      // "pods", "daemonsets.apps" (resource[.group]), as rules write it
  std::string resource_sub;  // resource[/subresource]
  std::string glob;          // agent_glob(user agent)
};

// A user agent of the system (by agent_glob) and its first record as the harness counts a
// component fault's trigger: in the order the records were written (seq), from arming on, only
// those written during the run.
struct AgentStart {
  std::string glob;
  const Record* first = nullptr;  // its first record counted; nullptr: none
  bool before_arm = false;        // it made a request before arming: there from the start
  bool kept_open = false;         // a record of it ended after the run (a watch kept open)
};

struct Audit {
  std::vector<Entry> entries;  // the records since arming, in the order the proxy saw them (ts, then seq)
  // Watches opened before arming (a system's informers start with it) that ran into the run: no
  // rule sees them, but the same watch opened again after a cut can be faulted.
  std::vector<Entry> watches_before_arm;
  std::uint64_t read = 0, beyond_bound = 0, before_arm = 0, ignored = 0;
  std::optional<Clock::time_point> armed;  // times in the plans' text count from here, else from the first request
  // The system's user agents (by agent_glob) in the order of their first record the harness counts.
  std::vector<AgentStart> agent_starts;
};

Audit read_audit(const std::vector<Record>& records, const GenerateOptions& options) {
  Audit a;
  const std::size_t n = std::min(records.size(), max_audit_records);
  a.read = n;
  a.armed = options.armed;
  a.beyond_bound = records.size() - n;
  std::vector<const Record*> order;
  order.reserve(n);
  std::map<std::string, AgentStart> starts;  // by glob
  for (std::size_t i = 0; i < n; ++i) {
    const Record& r = records[i];
    if (std::none_of(options.ignored_user_agents.begin(), options.ignored_user_agents.end(),
                     [&](const std::string& p) { return r.user_agent.starts_with(p); })) {
      AgentStart& start = starts[agent_glob(r.user_agent)];
      if (options.armed && r.ts < *options.armed) start.before_arm = true;
      else if (options.finished && r.ts + r.duration > *options.finished) start.kept_open = true;
      else if (start.first == nullptr || r.seq < start.first->seq) start.first = &r;
    }
  }
  for (auto& [glob, start] : starts) {
    start.glob = glob;
    a.agent_starts.push_back(std::move(start));
  }
  std::stable_sort(a.agent_starts.begin(), a.agent_starts.end(), [](const AgentStart& x, const AgentStart& y) {
    if ((x.first == nullptr) != (y.first == nullptr)) return y.first == nullptr;
    return x.first != nullptr && x.first->seq < y.first->seq;
  });
  for (std::size_t i = 0; i < n; ++i) {
    if (options.armed && records[i].ts < *options.armed) {
      ++a.before_arm;
      if (records[i].watch && succeeded(records[i])) {
        Entry e;
        e.record = &records[i];
        e.request = faults::make_request(records[i].method, records[i].path, {{"User-Agent", records[i].user_agent}});
        e.system = std::none_of(options.ignored_user_agents.begin(), options.ignored_user_agents.end(),
                                [&](const std::string& p) { return records[i].user_agent.starts_with(p); });
        const auto& info = e.request.info;
        if (e.system && info.verb == "watch" && info.is_resource_request && !info.resource.empty() &&
            info.subresource.empty()) {
          e.resource = info.resource + (info.api_group.empty() ? "" : "." + info.api_group);
          e.resource_sub = e.resource;
          e.glob = agent_glob(records[i].user_agent);
          a.watches_before_arm.push_back(std::move(e));
        }
      }
      continue;
    }
    order.push_back(&records[i]);
  }
  // The proxy counts a request when it arrives (ts); the log is in completion order (seq).
  std::stable_sort(order.begin(), order.end(),
                   [](const Record* x, const Record* y) { return std::tie(x->ts, x->seq) < std::tie(y->ts, y->seq); });
  a.entries.reserve(order.size());
  for (const Record* r : order) {
    Entry e;
    e.record = r;
    e.request = faults::make_request(r->method, r->path, {{"User-Agent", r->user_agent}});
    e.system = std::none_of(options.ignored_user_agents.begin(), options.ignored_user_agents.end(),
                            [&](const std::string& p) { return r->user_agent.starts_with(p); });
    if (!e.system) ++a.ignored;
    const auto& info = e.request.info;
    if (info.is_resource_request && !info.resource.empty()) {
      e.resource = info.resource + (info.api_group.empty() ? "" : "." + info.api_group);
      e.resource_sub = e.resource + (info.subresource.empty() ? "" : "/" + info.subresource);
    }
    e.glob = agent_glob(r->user_agent);
    a.entries.push_back(std::move(e));
  }
  return a;
}

// Positions (1-based, as afterMatches counts) of the entries `m` matches, among `candidates`.
std::map<std::size_t, std::uint64_t> positions(const Audit& a, const std::vector<std::size_t>& candidates,
                                               const faults::Match& m) {
  std::map<std::size_t, std::uint64_t> out;
  std::uint64_t n = 0;
  for (std::size_t i : candidates)
    if (m.matches(a.entries[i].request)) out[i] = ++n;
  return out;
}

// The middle of the densest one-second window of `times` (sorted): its index, the earliest
// window on a tie, and how many the window holds.
std::pair<std::size_t, std::size_t> densest_second(const std::vector<Clock::time_point>& times) {
  std::size_t best = 0, best_count = 0, j = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    if (j < i) j = i;
    while (j < times.size() && times[j] - times[i] < std::chrono::seconds(1)) ++j;
    if (j - i > best_count) {
      best_count = j - i;
      best = i;
    }
  }
  return {best + best_count / 2, best_count};
}

// ---------------------------------------------------------------------------------------------
// Candidates

struct Candidate {
  Plan plan;
  std::string faults_yaml;     // "  - name: ...\n" items of `faults:`
  std::string component_yaml;  // items of `componentFaults:`
  int tier = 0;                // the bound keeps lower tiers first
};

std::string when_nth(std::uint64_t n, const MatchSpec& of, std::string_view extra) {
  // afterMatches: K opens the window once K `of` requests went by; the K-th is not faulted, so the
  // n-th is faulted with K = n - 1. afterMatches must be >= 1: the first one is `limit: 1` alone.
  if (n <= 1) return "{" + std::string(extra) + "}";
  return "{afterMatches: " + std::to_string(n - 1) + ", of: " + of.yaml() + ", " + std::string(extra) + "}";
}

std::string rule_yaml(std::string_view name, const MatchSpec& match, std::string_view when, std::string_view action) {
  return "  - name: " + std::string(name) + "\n    match: " + match.yaml() + "\n    when: " + std::string(when) +
         "\n    action: " + std::string(action) + "\n";
}

struct Occurrence {
  std::string label;  // first | densest | late
  std::size_t entry = 0;
  std::uint64_t position = 0;  // among every request the site's match counts
  std::string detail;          // "densest burst: 40 in one second"
};

// A write site: one (user agent glob, verb, resource, subresource).
struct Site {
  std::string glob, verb, resource_sub;
  std::string resource, subresource;  // as classified: its group in `groups`
  std::string agent;                  // agent_short of its first record
  MatchSpec spec;
  std::vector<std::size_t> effective;  // entries it matched that succeeded
  std::uint64_t total = 0;             // entries it matched
  std::map<std::size_t, std::uint64_t> pos;
};

std::vector<Occurrence> occurrences_of(const Audit& a, const Site& s) {
  std::vector<Occurrence> out;
  if (s.effective.empty()) return out;
  std::vector<Clock::time_point> times;
  for (std::size_t i : s.effective) times.push_back(a.entries[i].record->ts);
  const auto [mid, count] = densest_second(times);
  // Late, not last: a plan run does not make exactly the reference run's count of a site (client
  // retries after a 429 add requests the trigger counts), so a rule aimed at the very last
  // occurrence often never fires. A tenth of the occurrences (at least one) before the last one.
  const std::size_t n = s.effective.size();
  const std::size_t late = n - 1 - std::min(n - 1, (n + 9) / 10);
  const std::array<std::pair<std::string, std::size_t>, 3> picks = {
      std::pair<std::string, std::size_t>{"first", s.effective.front()},
      {"densest", s.effective[mid]},
      {"late", s.effective[late]}};
  std::set<std::size_t> seen;
  for (const auto& [label, entry] : picks) {
    if (!seen.insert(entry).second) continue;
    Occurrence o;
    o.label = label;
    o.entry = entry;
    o.position = s.pos.at(entry);
    o.detail = label == "densest" ? "densest burst, " + std::to_string(count) + " in one second"
               : label == "late"  ? "late, " + std::to_string(n - 1 - late) + " before the last"
                                  : label;
    out.push_back(o);
  }
  return out;
}

struct Ctx {
  const Audit& a;
  std::vector<Candidate> candidates;
  std::map<std::string, GenerationRule> rules;  // by name
  std::vector<std::string> rule_order;

  GenerationRule& rule(const std::string& name) {
    if (!rules.count(name)) {
      rules[name].name = name;
      rule_order.push_back(name);
    }
    return rules[name];
  }
  void removed(const std::string& name, std::uint64_t n, const std::string& why) {
    GenerationRule& r = rule(name);
    if (n == 0) return;
    r.removed += n;
    r.why_removed += (r.why_removed.empty() ? "" : "; ") + why;
  }
  void add(Candidate c) {
    rule(c.plan.kind);
    candidates.push_back(std::move(c));
  }
};

// "2.9 s after arming", or "... after the first request" when the time of arming is not known.
std::string seconds_after(const Audit& a, Clock::time_point t) {
  const auto d = t - a.armed.value_or(a.entries.front().record->ts);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return std::string(buf) + (a.armed ? " after arming" : " after the first request");
}

std::string seconds_after(const Audit& a, std::size_t entry) { return seconds_after(a, a.entries[entry].record->ts); }

// A site's part of plan ids: "create-pods-binding", with "-<agent>" when several agents write it.
std::string site_key_id(const Site& s, const std::map<std::string, std::size_t>& agents_per_key) {
  return slug(s.verb + "-" + s.resource_sub) +
         (agents_per_key.at(s.verb + " " + s.resource_sub) > 1 ? "-" + slug(s.agent) : "");
}

std::string occurrence_text(const Site& s, const Occurrence& o) {
  return s.verb + " " + s.resource_sub + " by " + s.glob + " (occurrence " + std::to_string(o.position) + " of " +
         std::to_string(s.total) + ", " + o.detail + ")";
}

const std::map<std::string, int>& occurrence_tiers() {
  static const std::map<std::string, int> tiers = {{"first", 0}, {"densest", 1}, {"late", 2}};
  return tiers;
}

// Rainmaker (fault injection at the client's HTTP requests, "Rainmaker: Chaos testing for
// Kubernetes controllers via request-level fault injection"): every write of a controller may fail
// transiently (500, 503, 429), conflict (409), be applied with the answer lost, or be cut.
// CrashTuner (crash-recovery bugs at meta-info accesses): the process dies or stalls right after
// it wrote meta-information (bindings, node and lease updates, status): the stack's `scheduler`,
// unless the system declares its components (`default_components` false: component_plans).
void write_plans(Ctx& ctx, const std::vector<Site>& sites, const std::map<std::string, std::size_t>& agents_per_key,
                 bool default_components) {
  struct Variant {
    std::string kind, id, action;
  };
  const std::vector<Variant> variants = {
      {"write-fail", "500", "{type: respond, code: 500}"},
      {"write-fail", "503", "{type: respond, code: 503}"},
      {"write-fail", "429", "{type: respond, code: 429, retryAfter: 1s}"},
      {"write-fail", "409", "{type: respond, code: 409}"},
      {"write-drop-response", "drop-response", "{type: drop-response}"},
      {"write-cut", "cut", "{type: reset}"},
  };
  const auto& tier_of = occurrence_tiers();
  for (const Site& s : sites) {
    const auto occurrences = occurrences_of(ctx.a, s);
    const std::string key_id = site_key_id(s, agents_per_key);
    const bool meta =
        default_components && s.verb != "delete" &&
        (s.subresource == "binding" || s.subresource == "status" || s.resource == "nodes" || s.resource == "leases");
    for (const Occurrence& o : occurrences) {
      const std::string site_text = occurrence_text(s, o);
      for (const Variant& v : variants) {
        Candidate c;
        c.plan.kind = v.kind;
        c.plan.id = "write-" + v.id + "-" + key_id + "-" + o.label;
        c.plan.site = site_text;
        c.plan.source = "Rainmaker";
        const std::string name = "write-" + v.id;
        c.plan.faults = {name};
        c.faults_yaml = rule_yaml(name, s.spec, when_nth(o.position, s.spec, "limit: 1"), v.action);
        c.tier = tier_of.at(o.label);
        ctx.add(std::move(c));
      }
      if (!meta) continue;
      for (const std::string action : {"kill", "pause"}) {
        Candidate c;
        c.plan.kind = action;
        c.plan.id = action + "-after-" + key_id + "-" + o.label;
        c.plan.site = "right after " + site_text;
        c.plan.source = "CrashTuner";
        const std::string name = action + "-system";
        c.plan.faults = {name};
        // The harness starts a component fault once `afterMatches` requests are in the audit log:
        // right after the occurrence itself.
        c.component_yaml = "  - name: " + name + "\n    target: scheduler\n    action: " + action +
                           "\n    downFor: " + std::string(component_down_for) +
                           "\n    when: {afterMatches: " + std::to_string(o.position) + ", of: " + s.spec.yaml() +
                           "}\n";
        c.tier = tier_of.at(o.label);
        ctx.add(std::move(c));
      }
    }
  }
}

// CrashTuner for the components a system file declares (GenerateOptions::components): each one
// killed or paused, for each of its lengths, (a) right after each occurrence of each of its own
// write sites (any write: what a declared component writes is what it tells the others), and
// (b) right after the first request of each peer: a user agent of the system, not the component's
// own, whose first request came after arming (a replica or peer that started during the run, the
// moment a takeover begins). The harness counts a component fault's `afterMatches` over the audit
// records in the order they are written, from arming on: the peer's first request is its first
// record in that order, and a watch that ended after the run (kept open, added afterwards) is none.
void component_plans(Ctx& ctx, const std::vector<Site>& sites, const std::map<std::string, std::size_t>& agents_per_key,
                     const std::vector<schema::ExploreComponent>& components) {
  const Audit& a = ctx.a;
  const auto& tier_of = occurrence_tiers();
  ctx.rule("components");
  std::uint64_t made = 0, no_sites = 0, there_before = 0, kept_open_only = 0, unknown_arming = 0;
  for (const schema::ExploreComponent& component : components) {
    faults::Match own;
    own.user_agents = component.user_agents;
    const std::string target(schema::name_of(component.target));
    // Each action and length: (kind, id prefix, the componentFaults entry up to `when`).
    struct Variant {
      std::string kind, id, yaml;
    };
    std::vector<Variant> variants;
    for (const schema::ComponentAction action : component.actions) {
      for (const faults::Duration down : component.down_for) {
        const std::string kind(schema::name_of(action));
        const std::string length = faults::format_duration(down);
        Variant v;
        v.kind = kind;
        // The default length keeps the default plans' ids; another one names itself.
        v.id = kind + (length == component_down_for ? "" : "-" + length);
        v.yaml = "  - name: " + kind + "-" + target + "\n    target: " + target + "\n    action: " + kind +
                 "\n    downFor: " + length + "\n";
        variants.push_back(std::move(v));
      }
    }
    auto add = [&](const Variant& v, const std::string& id_tail, const std::string& site, const std::string& when,
                   int tier) {
      Candidate c;
      c.plan.kind = v.kind;
      c.plan.id = v.id + "-after-" + id_tail;
      c.plan.site = site;
      c.plan.source = "CrashTuner";
      c.plan.faults = {v.kind + "-" + target};
      c.component_yaml = v.yaml + "    when: " + when + "\n";
      c.tier = tier;
      ctx.add(std::move(c));
      ++made;
    };
    // (a) Its own writes.
    bool any_site = false;
    for (const Site& s : sites) {
      if (!own.matches(a.entries[s.effective.front()].request)) continue;
      any_site = true;
      const std::string key_id = site_key_id(s, agents_per_key);
      for (const Occurrence& o : occurrences_of(a, s)) {
        const std::string site = "right after " + occurrence_text(s, o) + ", its own write";
        // The harness starts a component fault once `afterMatches` requests are in the audit log:
        // right after the occurrence itself.
        const std::string when = "{afterMatches: " + std::to_string(o.position) + ", of: " + s.spec.yaml() + "}";
        for (const Variant& v : variants) add(v, key_id + "-" + o.label, site, when, tier_of.at(o.label));
      }
    }
    no_sites += !any_site;
    // (b) The first request of each peer that started during the run.
    for (const AgentStart& start : a.agent_starts) {
      const Record* first = start.first;
      const std::string& ua = first != nullptr ? first->user_agent : start.glob;
      if (own.matches(faults::make_request("GET", "/", {{"User-Agent", ua}}))) continue;
      if (!a.armed) {
        ++unknown_arming;
        continue;
      }
      if (start.before_arm) {
        ++there_before;
        continue;
      }
      if (first == nullptr) {
        kept_open_only += start.kept_open;
        continue;
      }
      const auto info = faults::make_request(first->method, first->path, {{"User-Agent", ua}}).info;
      const std::string request = info.verb + (info.resource.empty() ? " " + first->path : " " + info.resource) +
                                  (info.subresource.empty() ? "" : "/" + info.subresource);
      const std::string site = "right after the first request of " + start.glob + " (" + request + ", " +
                               seconds_after(a, first->ts) + "), a peer that started during the run";
      const MatchSpec of{{}, {}, {}, {}, {start.glob}};
      for (const Variant& v : variants)
        add(v, "first-request-" + peer_short(ua), site, "{afterMatches: 1, of: " + of.yaml() + "}", 0);
    }
  }
  ctx.rule("components").produced = made;
  ctx.removed("components", no_sites,
              std::to_string(no_sites) + " components none of whose own writes succeeded (no plan after its writes)");
  ctx.removed("components", unknown_arming,
              std::to_string(unknown_arming) +
                  " user agents not taken for peers: the reference run's time of arming is unknown (report.json)");
  ctx.removed("components", there_before,
              std::to_string(there_before) +
                  " user agents that made requests before arming: not peers that started during the run");
  ctx.removed("components", kept_open_only,
              std::to_string(kept_open_only) +
                  " user agents whose requests after arming all ended after the run (watches kept open): the "
                  "harness never counts them");
}

// A watched resource: (user agent glob, resource) of the system's watches.
struct WatchSite {
  std::string glob, resource, agent;
  MatchSpec spec;
  std::vector<std::size_t> entries;  // its watches (every status), in order
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// reference_scenario

namespace {

struct LineSpan {
  std::size_t first = 0, end = 0;  // lines [first, end)
};

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    const auto end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

bool blank_or_comment(std::string_view line, std::size_t column) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size() || line[i] == '\n' || line[i] == '\r') return true;
  return line[i] == '#' && i <= column;
}

// The lines of the entries of block mapping `node` whose keys are in `drop`: from the key's line to
// the next key's line (or `end_line`), less the blank and comment lines (at the key's column or
// left of it) just before the next key, which belong to what follows. nullopt when the mapping is
// not in block style with each key on a line of its own.
std::optional<std::vector<LineSpan>> spans_of(const YAML::Node& node, const std::set<std::string>& drop,
                                              std::size_t end_line, const std::vector<std::string_view>& lines) {
  if (node.Style() == YAML::EmitterStyle::Flow) return std::nullopt;
  std::vector<std::pair<std::size_t, std::string>> keys;  // line, key
  std::size_t column = 0;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Mark m = it->first.Mark();
    if (m.line < 0) return std::nullopt;
    keys.emplace_back(static_cast<std::size_t>(m.line), it->first.Scalar());
    column = static_cast<std::size_t>(m.column);
  }
  std::vector<LineSpan> out;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (k + 1 < keys.size() && keys[k + 1].first == keys[k].first) return std::nullopt;
    if (!drop.count(keys[k].second)) continue;
    std::size_t end = k + 1 < keys.size() ? keys[k + 1].first : end_line;
    while (end > keys[k].first + 1 && blank_or_comment(lines[end - 1], column)) --end;
    out.push_back({keys[k].first, end});
  }
  return out;
}

std::string without_lines(const std::vector<std::string_view>& lines, std::vector<LineSpan> spans) {
  std::string out;
  std::vector<bool> dropped(lines.size(), false);
  for (const auto& s : spans)
    for (std::size_t i = s.first; i < s.end && i < lines.size(); ++i) dropped[i] = true;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!dropped[i]) out += lines[i];
  return out;
}

std::optional<YAML::Node> child(const YAML::Node& node, const std::string& key) {
  for (auto entry : node)
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  return std::nullopt;
}

std::string reemitted(YAML::Node root) {
  YAML::Node out(YAML::NodeType::Map);
  for (auto entry : root) {
    const std::string key = entry.first.Scalar();
    if (key == "faults" || key == "componentFaults") continue;
    if (key == "checks" && entry.second.IsMap()) {
      YAML::Node checks(YAML::NodeType::Map);
      for (auto c : entry.second)
        if (c.first.Scalar() != "expect") checks[c.first] = c.second;
      out[entry.first] = checks;
      continue;
    }
    out[entry.first] = entry.second;
  }
  YAML::Emitter emitter;
  emitter << out;
  return std::string(emitter.c_str()) + "\n";
}

}  // namespace

std::string reference_scenario(std::string_view scenario_text) {
  const std::string text(scenario_text);
  faults::detail::Errors errors{"scenario"};
  YAML::Node root = faults::detail::load_yaml(text, errors);
  if (!errors.empty()) throw std::runtime_error("the scenario is not valid YAML: " + errors.report().front());
  if (!root.IsMap()) throw std::runtime_error("the scenario is not a YAML mapping");
  const auto lines = split_lines(text);
  auto top = spans_of(root, {"faults", "componentFaults"}, lines.size(), lines);
  if (!top) return reemitted(root);
  auto spans = *top;
  if (auto checks = child(root, "checks"); checks && checks->IsMap() && child(*checks, "expect")) {
    // The checks entry ends where the next top-level key starts.
    std::size_t end = lines.size();
    const auto checks_line = static_cast<std::size_t>(checks->Mark().line);
    for (auto entry : root) {
      const auto line = static_cast<std::size_t>(entry.first.Mark().line);
      if (line > checks_line && line < end) end = line;
    }
    auto inner = spans_of(*checks, {"expect"}, end, lines);
    if (!inner) return reemitted(root);
    spans.insert(spans.end(), inner->begin(), inner->end());
  }
  std::string out = without_lines(lines, spans);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

// ---------------------------------------------------------------------------------------------
// generate_plans

Plans generate_plans(std::string_view reference_scenario_text, const std::vector<audit::Record>& reference_audit) {
  return generate_plans(reference_scenario_text, reference_audit, GenerateOptions{});
}

namespace {

// What the plans are made from, collected once from the audit.
struct Facts {
  // Requests by (verb, resource without its group, subresource), in order: a site's match (a verb,
  // a resource, a user agent) can only select requests of its own group.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::size_t>> groups;
  std::vector<std::size_t> writes_all;  // every write the proxy sees (for the outages' count)
  std::vector<Site> reached;            // the write sites with a write that succeeded
  std::vector<std::string> system_globs;
  std::map<std::pair<std::string, std::string>, WatchSite> watch_sites;  // the system's watches by (glob, resource)
  // (glob, resource) watched since before arming, with the most bytes one such watch relayed.
  std::map<std::pair<std::string, std::string>, std::pair<const Entry*, std::uint64_t>> watched_before_arm;
  std::map<std::string, std::set<std::string>> watchers_of;  // resource -> globs
  // resource -> globs, of the watches that relayed more than bookmarks (an object event)
  std::map<std::string, std::set<std::string>> event_watchers_of;
  std::vector<std::size_t> effective_writes;          // entries, in order
  std::map<std::string, std::size_t> agents_per_key;  // "verb resource/sub" -> user agent globs writing it
};

Facts collect(Ctx& ctx) {
  const Audit& a = ctx.a;
  Facts f;
  // -- the system's writes, by site ------------------------------------------------------------
  std::uint64_t writes = 0, noop = 0;
  std::map<int, std::uint64_t> noop_codes;
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> site_index;  // glob, verb, res/sub
  std::vector<Site> sites;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const Entry& e = a.entries[i];
    const auto& info = e.request.info;
    if (e.resource.empty()) continue;
    f.groups[{info.verb, info.resource, info.subresource}].push_back(i);
    if (!is_write(info.verb)) continue;
    f.writes_all.push_back(i);
    if (!e.system) continue;
    ++writes;
    if (!succeeded(*e.record)) {
      ++noop;
      ++noop_codes[e.record->status];
    }
    auto key = std::make_tuple(e.glob, info.verb, e.resource_sub);
    if (!site_index.count(key)) {
      site_index[key] = sites.size();
      Site s;
      s.glob = e.glob;
      s.verb = info.verb;
      s.resource_sub = e.resource_sub;
      s.resource = info.resource;
      s.subresource = info.subresource;
      s.agent = agent_short(e.record->user_agent);
      s.spec = MatchSpec{{info.verb}, {e.resource_sub}, {}, {}, {e.glob}};
      sites.push_back(std::move(s));
    }
  }
  {
    GenerationRule& r = ctx.rule("effective-writes");
    r.produced = writes - noop;
    std::string codes;
    for (const auto& [code, n] : noop_codes)
      codes += (codes.empty() ? "" : ", ") + std::to_string(n) + " x " + (code ? std::to_string(code) : "cut");
    ctx.removed("effective-writes", noop, "not effective: the apiserver did not answer 2xx (" + codes + ")");
  }
  // Each site counts what its match selects among every request (as the proxy counts), in its
  // (verb, resource, subresource) group only: no other request can match it.
  std::map<std::string, std::set<std::string>> agents_by_key;
  std::uint64_t unreached = 0;
  for (Site& s : sites) {
    const faults::Match m = s.spec.match();
    s.pos = positions(a, f.groups.at({s.verb, s.resource, s.subresource}), m);
    s.total = s.pos.size();
    for (const auto& [entry, n] : s.pos)
      if (a.entries[entry].system && succeeded(*a.entries[entry].record)) s.effective.push_back(entry);
    if (s.effective.empty()) {
      ++unreached;
      continue;
    }
    agents_by_key[s.verb + " " + s.resource_sub].insert(s.glob);
    f.reached.push_back(std::move(s));
  }
  {
    GenerationRule& r = ctx.rule("write-sites");
    r.produced = f.reached.size();
    ctx.removed("write-sites", unreached, "not reached: no write of the site succeeded in the reference run");
  }
  for (const auto& [k, v] : agents_by_key) f.agents_per_key[k] = v.size();

  {
    std::set<std::string> g;
    for (const Site& s : f.reached) g.insert(s.glob);
    f.system_globs.assign(g.begin(), g.end());
  }
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const Entry& e = a.entries[i];
    if (!e.system || e.resource.empty() || e.request.info.verb != "watch" || !e.request.info.subresource.empty())
      continue;
    WatchSite& w = f.watch_sites[{e.glob, e.resource}];
    if (w.entries.empty()) {
      w.glob = e.glob;
      w.resource = e.resource;
      w.agent = agent_short(e.record->user_agent);
      w.spec = MatchSpec{{"watch"}, {e.resource}, {}, {}, {e.glob}};
    }
    w.entries.push_back(i);
    f.watchers_of[e.resource].insert(e.glob);
    if (succeeded(*e.record) && e.record->bytes_out > min_watch_event_bytes)
      f.event_watchers_of[e.resource].insert(e.glob);
  }
  for (const Entry& e : a.watches_before_arm) {
    auto& [first, bytes] = f.watched_before_arm[{e.glob, e.resource}];
    if (!first) first = &e;
    bytes = std::max<std::uint64_t>(bytes, e.record->bytes_out);
    f.watchers_of[e.resource].insert(e.glob);
    if (e.record->bytes_out > min_watch_event_bytes) f.event_watchers_of[e.resource].insert(e.glob);
  }

  for (const Site& s : f.reached)
    f.effective_writes.insert(f.effective_writes.end(), s.effective.begin(), s.effective.end());
  // One request can be in two sites when one site's user agent glob also matches the other's agent.
  std::sort(f.effective_writes.begin(), f.effective_writes.end());
  f.effective_writes.erase(std::unique(f.effective_writes.begin(), f.effective_writes.end()), f.effective_writes.end());
  return f;
}

void outage_plans(Ctx& ctx, const Facts& f) {
  const Audit& a = ctx.a;
  // -- outages (the apiserver down for a moment, as YUNIKORN-3355's) --------------------------
  if (!f.effective_writes.empty()) {
    const MatchSpec writes_spec{
        {"create", "update", "patch", "delete"},
        {},
        {},
        {},
        f.system_globs.size() <= max_match_agents ? f.system_globs : std::vector<std::string>{}};
    const auto pos = positions(a, f.writes_all, writes_spec.match());
    const std::uint64_t total = pos.size();
    std::vector<Clock::time_point> times;
    for (std::size_t i : f.effective_writes) times.push_back(a.entries[i].record->ts);
    const auto [mid, count] = densest_second(times);
    const std::vector<std::tuple<std::string, std::size_t, std::string>> moments = {
        {"densest", f.effective_writes[mid], "in the densest second of writes (" + std::to_string(count) + ")"},
        {"first", f.effective_writes.front(), "after the first write"},
        {"middle", f.effective_writes[f.effective_writes.size() / 2], "in the middle of the writes"},
    };
    std::set<std::uint64_t> seen;
    std::uint64_t no_relist = 0, no_relist_events = 0, relist_blackhole = 0;
    // A relist of a resource whose watches relayed bookmarks only reads what the client has: the
    // relist rules are for the resources whose watches carried object events (as the watch plans).
    const auto& relisted = f.event_watchers_of;
    const std::size_t quiet = f.watchers_of.size() - relisted.size();
    int tier = 0;
    for (const auto& [label, entry, what] : moments) {
      const std::uint64_t k = pos.at(entry);
      if (!seen.insert(k).second) {
        ++tier;
        continue;
      }
      const std::string when = "{afterMatches: " + std::to_string(k) + ", of: " + writes_spec.yaml() +
                               ", for: " + std::string(outage_length) + ", limit: 1}";
      for (const std::string mode : {"reset", "blackhole"}) {
        for (const bool relist : {false, true}) {
          if (relist && f.watchers_of.empty()) {
            ++no_relist;
            continue;
          }
          if (relist && relisted.empty()) {
            ++no_relist_events;
            continue;
          }
          // A blackhole leaves the system's watches open (nothing ends them): no relist follows.
          if (relist && mode == "blackhole") {
            ++relist_blackhole;
            continue;
          }
          Candidate c;
          c.plan.kind = relist ? "outage-relist" : "outage";
          c.plan.id = std::string(relist ? "outage-relist-" : "outage-") + mode + "-" + label;
          c.plan.site = "apiserver " + mode + " outage of " + std::string(outage_length) + " " + what +
                        ": after write " + std::to_string(k) + " of " + std::to_string(total) + " (" +
                        seconds_after(a, entry) + ")" +
                        (!relist ? ""
                         : quiet ? ", then the watches of the " + std::to_string(relisted.size()) +
                                       " resources that carried events relist (" + std::to_string(quiet) +
                                       " with bookmarks only left out)"
                                 : ", then every watch relists");
          c.plan.source = "outage";
          c.plan.faults = {"outage"};
          c.faults_yaml = rule_yaml("outage", MatchSpec{}, when, "{type: outage, mode: " + mode + "}");
          if (relist) {
            // As a restarted apiserver's empty watch cache: the first watch of each resource after
            // the outage gets 410 Expired and the client relists.
            const std::string relist_when = "{afterMatches: " + std::to_string(k) + ", of: " + writes_spec.yaml() +
                                            ", for: " + std::string(relist_window) + ", limit: ";
            const std::string gone = "{type: watch-gone, message: " + yaml_quoted(gone_message) + "}";
            if (relisted.size() > max_relist_rules) {
              std::set<std::string> globs;
              for (const auto& [resource, g] : relisted) globs.insert(g.begin(), g.end());
              const MatchSpec every_watch{{"watch"},
                                          {},
                                          {},
                                          {},
                                          globs.size() <= max_match_agents
                                              ? std::vector<std::string>(globs.begin(), globs.end())
                                              : std::vector<std::string>{}};
              c.plan.faults.push_back("relist");
              c.faults_yaml +=
                  rule_yaml("relist", every_watch, relist_when + std::to_string(relisted.size()) + "}", gone);
            } else {
              std::set<std::string> names;
              for (const auto& [resource, globs] : relisted) {
                std::string name = "relist-" + slug(resource);
                for (unsigned n = 2; !names.insert(name).second; ++n)
                  name = "relist-" + slug(resource) + "-" + std::to_string(n);
                c.plan.faults.push_back(name);
                const MatchSpec watch{{"watch"},
                                      {resource},
                                      {},
                                      {},
                                      globs.size() <= max_match_agents
                                          ? std::vector<std::string>(globs.begin(), globs.end())
                                          : std::vector<std::string>{}};
                c.faults_yaml += rule_yaml(name, watch, relist_when + "1}", gone);
              }
            }
          }
          c.tier = tier;
          ctx.add(std::move(c));
        }
      }
      ++tier;
    }
    ctx.rule("outage");
    ctx.removed("outage-relist", no_relist, "the system watches nothing: no relist to cause");
    ctx.removed("outage-relist", no_relist_events,
                "no watch of the system relayed an event: no relist changes its view");
    ctx.removed("outage-relist", relist_blackhole,
                std::to_string(relist_blackhole) + " after a blackhole, which ends no watch (no relist follows it)");
  }
}

// The four watch plans of one watched resource: `cut_watches` (the YAML of a rule named cut-watches
// that comes first, or empty), then the watch fault on `watch` when `when` says.
void add_watch_plans(Ctx& ctx, const std::string& id_tail, const std::string& site, const std::string& cut_watches,
                     const MatchSpec& watch, const std::string& when) {
  const std::vector<std::pair<std::string, std::string>> actions = {
      {"watch-reset", "{type: watch-reset, afterEvents: 1}"},
      {"watch-gone", "{type: watch-gone, afterEvents: 1}"},
      {"watch-drop", "{type: watch-drop, afterEvents: 1, count: 1}"},
      {"watch-delay", "{type: watch-delay, duration: 5s}"},
  };
  for (const auto& [kind, action] : actions) {
    Candidate c;
    c.plan.kind = kind;
    c.plan.id = kind + "-" + id_tail;
    c.plan.site = site;
    c.plan.source = "Sieve";
    if (!cut_watches.empty()) c.plan.faults.push_back("cut-watches");
    c.plan.faults.push_back(kind);
    c.faults_yaml = cut_watches + rule_yaml(kind, watch, when, action);
    c.tier = 0;
    ctx.add(std::move(c));
  }
}

void watch_plans(Ctx& ctx, const Facts& f) {
  const Audit& a = ctx.a;
  // -- watches (Sieve: a watch event the controller acted on, made lost, late, or cut) ----------
  // The audit has one record per watch request and no events; the record is written when the
  // watch ends, with its start (ts) and the bytes relayed (bytesOut). Approximations: a watch
  // carried events when it relayed more than min_watch_event_bytes (less is a bookmark or an
  // empty list's end: no object event to lose, delay or cut after); its events "preceded a write"
  // when a write of the system that succeeded started after the watch opened. The first such watch
  // of each (user agent, resource) is faulted.
  std::map<std::string, std::size_t> glob_count;
  for (const auto& [key, w] : f.watch_sites) ++glob_count[w.resource];
  std::uint64_t watch_unreached = 0, watch_no_events = 0, watch_no_write = 0;
  for (const auto& [key, w] : f.watch_sites) {
    std::optional<std::size_t> chosen;
    bool any_ok = false, any_events = false;
    for (std::size_t i : w.entries) {
      if (!succeeded(*a.entries[i].record)) continue;
      any_ok = true;
      if (a.entries[i].record->bytes_out <= min_watch_event_bytes) continue;
      any_events = true;
      if (!f.effective_writes.empty() && f.effective_writes.back() > i) {
        chosen = i;
        break;
      }
    }
    if (!any_ok) {
      ++watch_unreached;
      continue;
    }
    if (!any_events) {
      ++watch_no_events;
      continue;
    }
    if (!chosen) {
      ++watch_no_write;
      continue;
    }
    const auto pos = positions(a, f.groups.at({"watch", a.entries[*chosen].request.info.resource, ""}), w.spec.match());
    const std::uint64_t n = pos.at(*chosen);
    std::uint64_t followed = 0;
    for (std::size_t wi : f.effective_writes) followed += wi > *chosen;
    const std::string id_tail = slug(w.resource) + (glob_count[w.resource] > 1 ? "-" + slug(w.agent) : "");
    const std::string site = "watch " + w.resource + " by " + w.glob + " (watch " + std::to_string(n) + " of " +
                             std::to_string(pos.size()) + ", opened " + seconds_after(a, *chosen) + "; " +
                             std::to_string(followed) + " writes after it)";
    add_watch_plans(ctx, id_tail, site, "", w.spec, when_nth(n, w.spec, "limit: 1"));
  }
  // Watches opened before arming (an informer's first watch, open for the whole run) are seen by
  // no rule: the plan first cuts the system's connections (a 1 s outage at its first request after
  // arming), so that its informers watch again, and faults the first new watch of the resource.
  // Their record is written when they end, after the run, so `bytesOut` covers the whole run.
  // The cut comes at the first request after arming of any of the system's agents: the one that
  // watches may make none (an informer opened at start and never again, as kube-scheduler's
  // configmaps informer for its authentication config).
  std::set<std::string> agents(f.system_globs.begin(), f.system_globs.end());
  for (const auto& [resource, globs] : f.watchers_of) agents.insert(globs.begin(), globs.end());
  const std::vector<std::string> every_agent(agents.begin(), agents.end());
  for (const auto& [key, first_bytes] : f.watched_before_arm) {
    const auto& [first, bytes] = first_bytes;
    if (f.watch_sites.count(key)) continue;  // watched again during the run: planned above
    if (bytes <= min_watch_event_bytes) {
      ++watch_no_events;
      continue;
    }
    if (f.effective_writes.empty()) {
      ++watch_no_write;
      continue;
    }
    const auto& [glob, resource] = key;
    const std::string agent = agent_short(first->record->user_agent);
    const std::string id_tail = slug(resource) + (f.watchers_of.at(resource).size() > 1 ? "-" + slug(agent) : "");
    const MatchSpec watch{{"watch"}, {resource}, {}, {}, {glob}};
    const MatchSpec system{{}, {}, {}, {}, every_agent.size() <= max_match_agents ? every_agent : std::vector{glob}};
    const std::string site = "watch " + resource + " by " + glob + " (opened before arming, " + std::to_string(bytes) +
                             " bytes relayed; watched again after the cut)";
    add_watch_plans(ctx, id_tail, site,
                    rule_yaml("cut-watches", system, "{limit: 1}", "{type: outage, mode: reset, duration: 1s}"), watch,
                    "{limit: 1}");
  }
  for (const std::string kind : {"watch-reset", "watch-gone", "watch-drop", "watch-delay"}) {
    ctx.removed(kind, watch_unreached,
                std::to_string(watch_unreached) + " watched resources never answered 200 (not reached)");
    ctx.removed(kind, watch_no_events,
                std::to_string(watch_no_events) + " watched resources whose watches relayed no event (at most " +
                    std::to_string(min_watch_event_bytes) + " bytes: bookmarks only)");
    ctx.removed(
        kind, watch_no_write,
        std::to_string(watch_no_write) + " watched resources with no write of the system after the watch opened");
  }
}

void stale_read_plans(Ctx& ctx, const Facts& f) {
  const Audit& a = ctx.a;
  // -- stale reads (Sieve: a relist served from before a delete whose object came back) --------
  // The audit has no bodies, so a create to a collection has no name: an object is "back" when a
  // later request naming it (create of a subresource such as a binding, update, patch) succeeded.
  {
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::size_t>> named;  // res, ns, name
    for (std::size_t i = 0; i < a.entries.size(); ++i) {
      const Entry& e = a.entries[i];
      if (!e.resource.empty() && !e.request.info.name.empty())
        named[{e.resource, e.request.info.namespace_, e.request.info.name}].push_back(i);
    }
    std::set<std::string> done;  // resources with a plan
    std::uint64_t no_watch = 0, not_back = 0;
    for (std::size_t i = 0; i < a.entries.size(); ++i) {
      const Entry& d = a.entries[i];
      const auto& info = d.request.info;
      if (!d.system || info.verb != "delete" || !info.subresource.empty() || info.name.empty() ||
          !succeeded(*d.record) || done.count(d.resource))
        continue;
      const auto& same = named.at({d.resource, info.namespace_, info.name});
      std::optional<std::size_t> back, anchor;
      for (std::size_t j : same) {
        const Entry& e = a.entries[j];
        const std::string& v = e.request.info.verb;
        if (!succeeded(*e.record)) continue;
        if (j < i) anchor = j;
        if (j > i && (v == "create" || v == "update" || v == "patch")) {
          back = j;
          break;
        }
      }
      if (!back) {
        ++not_back;
        continue;
      }
      if (!f.watchers_of.count(d.resource)) {
        ++no_watch;
        continue;
      }
      done.insert(d.resource);
      const auto& watchers = f.watchers_of.at(d.resource);
      const std::vector<std::string> globs(watchers.begin(), watchers.end());
      const std::vector<std::string> ns{glob_literal(info.namespace_)}, name{glob_literal(info.name)};
      const Entry& b = a.entries[*back];
      const MatchSpec back_spec{{b.request.info.verb}, {b.resource_sub}, ns, name, {}};
      const std::uint64_t c_back = positions(a, same, back_spec.match()).at(*back);
      // The resourceVersion is recorded when the stale-read rule's window opens: right after the
      // last request naming the object before its delete (it existed then), else at arming.
      std::string when_list = "{limit: 1}";
      if (anchor) {
        const Entry& e = a.entries[*anchor];
        const MatchSpec anchor_spec{{e.request.info.verb}, {e.resource_sub}, ns, name, {}};
        const std::uint64_t k = positions(a, same, anchor_spec.match()).at(*anchor);
        when_list = "{afterMatches: " + std::to_string(k) + ", of: " + anchor_spec.yaml() + ", limit: 1}";
      }
      const std::string after_back =
          "{afterMatches: " + std::to_string(c_back) + ", of: " + back_spec.yaml() + ", limit: ";
      Candidate c;
      c.plan.kind = "stale-read";
      c.plan.id = "stale-read-" + slug(d.resource);
      c.plan.site = "delete " + d.resource + " " + info.namespace_ + "/" + info.name + " by " + d.glob + " (" +
                    seconds_after(a, i) + "), back at " + b.request.info.verb + " " + b.resource_sub + " (" +
                    seconds_after(a, *back) + "): the next relist served as before the delete";
      c.plan.source = "Sieve";
      c.plan.faults = {"stale-list", "fail-watches", "cut-watches"};
      // The relist client-go v0.36 makes after a failed watch is a LIST (a 500 on the watch-list
      // makes it fall back): cut every watch once the object is back, fail the next two watches
      // of the resource, and serve the LIST that follows as it was before the delete.
      c.faults_yaml =
          rule_yaml("stale-list", MatchSpec{{"list"}, {d.resource}, {}, {}, globs}, when_list, "{type: stale-read}") +
          rule_yaml("fail-watches", MatchSpec{{"watch"}, {d.resource}, {}, {}, globs}, after_back + "2}",
                    "{type: respond, code: 500}") +
          rule_yaml("cut-watches", MatchSpec{}, after_back + "1}", "{type: outage, mode: reset, duration: 1s}");
      c.tier = 0;
      ctx.add(std::move(c));
    }
    ctx.rule("stale-read");
    ctx.removed("stale-read", not_back, std::to_string(not_back) + " deletes whose object did not come back");
    ctx.removed("stale-read", no_watch, std::to_string(no_watch) + " deletes of a resource the system does not watch");
  }
}

Plans finish(Ctx& ctx, const std::string& base) {
  // -- ids: unique, deterministic ------------------------------------------------------------
  {
    std::set<std::string> used;
    for (Candidate& c : ctx.candidates) {
      std::string id = slug(c.plan.id);
      if (id.size() > max_plan_id_bytes) id = slug(id.substr(0, max_plan_id_bytes));
      std::string unique = id;
      for (unsigned n = 2; used.count(unique); ++n) unique = id + "-" + std::to_string(n);
      used.insert(unique);
      c.plan.id = unique;
    }
  }

  // -- the bound: lower tiers first (first occurrences of every site before densest/late) -------
  std::vector<std::size_t> keep(ctx.candidates.size());
  std::iota(keep.begin(), keep.end(), std::size_t{0});
  std::map<std::string, std::uint64_t> dropped_by_bound;  // kind -> plans
  if (keep.size() > max_plans) {
    std::stable_sort(keep.begin(), keep.end(),
                     [&](std::size_t x, std::size_t y) { return ctx.candidates[x].tier < ctx.candidates[y].tier; });
    for (std::size_t k = max_plans; k < keep.size(); ++k) ++dropped_by_bound[ctx.candidates[keep[k]].plan.kind];
    keep.resize(max_plans);
    std::sort(keep.begin(), keep.end());
  }

  Plans out;
  std::uint64_t invalid = 0;
  std::string first_invalid;
  std::map<std::string, std::uint64_t> invalid_by_kind;
  for (std::size_t i : keep) {
    Candidate& c = ctx.candidates[i];
    std::string yaml = "# faultline explore plan " + c.plan.id + " (" + c.plan.source + "): " + one_line(c.plan.site) +
                       "\n# The reference scenario follows without its own faults, componentFaults and checks.expect\n"
                       "# (its comments may still describe them); the plan's faults are at the end.\n" +
                       base;
    if (!c.faults_yaml.empty()) yaml += "faults:\n" + c.faults_yaml;
    if (!c.component_yaml.empty()) yaml += "componentFaults:\n" + c.component_yaml;
    try {
      (void)schema::load_scenario_text(yaml, c.plan.id + "/scenario.yaml");
    } catch (const std::exception& e) {
      ++invalid;
      ++invalid_by_kind[c.plan.kind];
      if (first_invalid.empty()) first_invalid = c.plan.id + ": " + one_line(e.what());
      continue;
    }
    c.plan.scenario_yaml = std::move(yaml);
    ++ctx.rules[c.plan.kind].produced;
    out.plans.push_back(std::move(c.plan));
  }
  for (const auto& [kind, n] : invalid_by_kind)
    ctx.removed(kind, n, std::to_string(n) + " whose scenario does not load (rule invalid)");
  std::uint64_t dropped = 0;
  for (const auto& [kind, n] : dropped_by_bound) {
    ctx.removed(kind, n, std::to_string(n) + " beyond the bound of " + std::to_string(max_plans) + " plans");
    dropped += n;
  }
  {
    GenerationRule& r = ctx.rule("bound");
    r.produced = keep.size();
    if (dropped)
      ctx.removed("bound", dropped,
                  "at most " + std::to_string(max_plans) +
                      " plans: the first occurrence of every site and the first outage moment are kept first");
  }
  ctx.rule("invalid").produced = out.plans.size();
  ctx.removed("invalid", invalid, "the plan's scenario does not load: " + first_invalid);
  for (const auto& name : ctx.rule_order) out.rules.push_back(ctx.rules[name]);
  return out;
}

}  // namespace

Plans generate_plans(std::string_view reference_scenario_text, const std::vector<audit::Record>& reference_audit,
                     const GenerateOptions& options) {
  const std::string base = reference_scenario(reference_scenario_text);
  try {
    (void)schema::load_scenario_text(base, "reference scenario");
  } catch (const std::exception& e) {
    throw std::runtime_error("the reference scenario does not load: " + std::string(e.what()));
  }
  const Audit a = read_audit(reference_audit, options);
  Ctx ctx{a, {}, {}, {}};

  {
    GenerationRule& r = ctx.rule("audit-records");
    r.produced = a.read - a.before_arm - a.ignored;
    ctx.removed("audit-records", a.beyond_bound,
                "more than " + std::to_string(max_audit_records) + " records: the rest was not read");
    ctx.removed("audit-records", a.before_arm, "before the proxy was armed: its triggers do not count them");
    ctx.removed("audit-records", a.ignored, "not the system under test's (the harness's own user agent)");
  }

  const Facts f = collect(ctx);
  write_plans(ctx, f.reached, f.agents_per_key, options.components.empty());
  if (!options.components.empty()) component_plans(ctx, f.reached, f.agents_per_key, options.components);
  outage_plans(ctx, f);
  watch_plans(ctx, f);
  stale_read_plans(ctx, f);
  return finish(ctx, base);
}

std::vector<Plan> shard_of(const std::vector<Plan>& all, unsigned index, unsigned count) {
  if (count == 0) throw std::invalid_argument("shard count must be at least 1 (--shard I/N with N >= 1)");
  if (index < 1 || index > count)
    throw std::invalid_argument("shard index " + std::to_string(index) + " is outside 1.." + std::to_string(count) +
                                " (--shard I/N: I is 1-based)");
  std::vector<Plan> out;
  for (std::size_t i = index - 1; i < all.size(); i += count) out.push_back(all[i]);
  return out;
}

std::string generation_tsv(const std::vector<GenerationRule>& rules) {
  std::string out = "rule\tproduced\tremoved\twhy\n";
  auto clean = [](std::string s) {
    for (char& c : s)
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
  };
  for (const auto& r : rules)
    out += clean(r.name) + "\t" + std::to_string(r.produced) + "\t" + std::to_string(r.removed) + "\t" +
           clean(r.why_removed) + "\n";
  return out;
}

}  // namespace faultline::harness::explore
