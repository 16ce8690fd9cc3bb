#include "faultline/harness/declared_checks.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>

#include "faultline/faults/match.hpp"
#include "faultline/harness/limits.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

const json::value* step_into(const json::value* at, const std::variant<std::string, std::size_t>& step) {
  if (const auto* key = std::get_if<std::string>(&step)) {
    if (!at->is_object()) return nullptr;
    return at->get_object().if_contains(*key);
  }
  const std::size_t index = std::get<std::size_t>(step);
  if (!at->is_array() || index >= at->get_array().size()) return nullptr;
  return &at->get_array()[index];
}

std::string meta_string(const json::value& object, const char* key) {
  const json::value* meta = object.is_object() ? object.get_object().if_contains("metadata") : nullptr;
  const json::value* v = meta != nullptr && meta->is_object() ? meta->get_object().if_contains(key) : nullptr;
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

void add_evidence(CheckResult& r, std::string line) {
  if (r.evidence.size() < kMaxEvidence) r.evidence.push_back(std::move(line));
  else if (r.evidence.size() == kMaxEvidence)
    r.evidence.push_back("... (list capped at " + std::to_string(kMaxEvidence) + "; count is exact)");
}

CheckResult no_data(const std::string& name, const std::string& why) {
  CheckResult r;
  r.name = name;
  r.status = CheckStatus::no_data;
  r.summary = "no data: " + why;
  return r;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::optional<std::string> resolve_field(const json::value& object, const schema::FieldPath& path) {
  const json::value* at = &object;
  for (const auto& step : path.steps) {
    at = step_into(at, step);
    if (at == nullptr) return std::nullopt;
  }
  if (at->is_null()) return std::nullopt;
  if (at->is_string()) return std::string(at->get_string());
  if (at->is_double()) return fmt::format("{}", at->get_double());  // 1.5, not JSON's 1.5E0
  return json::serialize(*at);
}

DeclaredEvaluator::DeclaredEvaluator(schema::DeclaredCheck check, std::string workload_namespace,
                                     std::uint64_t max_objects)
    : check_(std::move(check)), max_objects_(max_objects) {
  const std::string& ns = check_.watch.namespace_;
  namespace_ = ns == "all" ? std::string() : ns.empty() ? std::move(workload_namespace) : ns;
  if (const auto* a = std::get_if<schema::AtMostPerGroup>(&check_.kind))
    path_resolved_.assign(a->group_by.size(), false);
  else if (std::holds_alternative<schema::Reaches>(check_.kind)) path_resolved_.assign(2, false);
}

std::string DeclaredEvaluator::collection_path() const {
  const auto& w = check_.watch;
  std::string path = w.group().empty() ? "/api/" + w.api_version : "/apis/" + w.api_version;
  if (!namespace_.empty()) path += "/namespaces/" + namespace_;
  return path + "/" + w.resource;
}

std::vector<std::string> DeclaredEvaluator::live_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, o] : objects_)
    if (o.live) ids.push_back(id);
  return ids;
}

void DeclaredEvaluator::ungroup(const std::string& id, Object& object) {
  if (!object.group) return;
  auto it = groups_.find(*object.group);
  if (it != groups_.end()) {
    it->second.erase(id);
    if (it->second.empty()) groups_.erase(it);
  }
  object.group.reset();
}

void DeclaredEvaluator::regroup(const std::string& id, Object& object, const json::value& json, WallTime at) {
  const auto& spec = std::get<schema::AtMostPerGroup>(check_.kind);
  std::string key;
  std::vector<std::string> values;
  bool complete = true;
  for (std::size_t i = 0; i < spec.group_by.size(); ++i) {
    auto v = resolve_field(json, spec.group_by[i]);
    if (!v) {
      complete = false;
      continue;
    }
    path_resolved_[i] = true;
    key += *v + '\x1f';
    values.push_back(spec.group_by[i].text + "=" + *v);
  }
  if (complete && object.group == key) return;
  ungroup(id, object);
  if (!complete) return;
  object.group = key;
  object.group_values = values;
  auto& members = groups_[key];
  members.insert(id);
  if (members.size() <= spec.max) return;
  auto [v, first] = violations_.try_emplace(key);
  if (first) {
    v->second.at = at;
    for (const auto& m : members) v->second.refs.push_back(objects_.at(m).ref);
    std::sort(v->second.refs.begin(), v->second.refs.end());  // by name, not by uid
    std::string joined;
    for (const auto& value : values) joined += (joined.empty() ? "" : ", ") + value;
    v->second.values = joined;
  }
  v->second.most = std::max(v->second.most, members.size());
}

void DeclaredEvaluator::observe(std::string_view type, const json::value& object, WallTime at) {
  std::string ns = meta_string(object, "namespace");
  std::string name = meta_string(object, "name");
  std::string id = meta_string(object, "uid");
  if (id.empty()) id = ns + "/" + name;
  auto it = objects_.find(id);
  if (it == objects_.end()) {
    if (type == "DELETED") return;  // never seen alive: nothing to judge
    if (seen_ >= max_objects_)
      throw LimitError("declared check " + check_.name + ": more than " + std::to_string(max_objects_) +
                       " objects of " + check_.watch.resource + " match its watch");
    ++seen_;
    it = objects_.emplace(id, Object{}).first;
    it->second.ref = ns.empty() ? name : ns + "/" + name;
    it->second.first_seen = at;
  }
  Object& o = it->second;
  if (!o.live) return;  // a uid does not come back
  if (type == "DELETED" || !meta_string(object, "deletionTimestamp").empty()) {
    forget(id, at);
    return;
  }
  if (std::holds_alternative<schema::AtMostPerGroup>(check_.kind)) {
    regroup(id, o, object, at);
  } else if (const auto* r = std::get_if<schema::Reaches>(&check_.kind)) {
    auto value = resolve_field(object, r->field);
    if (value) path_resolved_[0] = true;
    std::optional<std::string> target = r->value;
    if (r->equals_field) {
      target = resolve_field(object, *r->equals_field);
      if (target) path_resolved_[1] = true;
    }
    o.last_value = value.value_or("");
    if (value && target && *value == *target && !o.reached) o.reached = at;
  }
}

void DeclaredEvaluator::forget(const std::string& id, WallTime) {
  auto it = objects_.find(id);
  if (it == objects_.end() || !it->second.live) return;
  ungroup(id, it->second);
  it->second.live = false;
}

std::string DeclaredEvaluator::since_start(const DeclaredContext& ctx, WallTime t) const {
  return fmt::format("+{:.1f}s", std::chrono::duration<double>(t - ctx.run_started).count());
}

CheckResult DeclaredEvaluator::result(const DeclaredContext& ctx) const {
  const std::string what = check_.watch.resource + " (" + collection_path() +
                           (check_.watch.label_selector.empty() ? "" : ", " + check_.watch.label_selector) + ")";
  if (!failure_.empty()) return no_data(check_.name, "the watch of " + what + " failed: " + failure_);
  if (!watched_) return no_data(check_.name, "the watch of " + what + " was never established");
  CheckResult r;
  if (std::holds_alternative<schema::AtMostPerGroup>(check_.kind)) r = at_most_result(ctx);
  else if (std::holds_alternative<schema::Reaches>(check_.kind)) r = reaches_result(ctx);
  else r = no_write_result(ctx);
  r.name = check_.name;
  return r;
}

CheckResult DeclaredEvaluator::at_most_result(const DeclaredContext& ctx) const {
  const auto& spec = std::get<schema::AtMostPerGroup>(check_.kind);
  CheckResult r;
  if (seen_ == 0) {
    r.status = CheckStatus::passed;
    r.summary = "0 objects of " + check_.watch.resource + " matched: no group to check";
    return r;
  }
  for (std::size_t i = 0; i < spec.group_by.size(); ++i)
    if (!path_resolved_[i])
      return no_data(check_.name, "field " + spec.group_by[i].text + " is absent on all " +
                                      plural(seen_, "object", "objects") + " of " + check_.watch.resource);
  std::size_t ungrouped = 0;
  std::size_t live = 0;
  for (const auto& [id, o] : objects_) {
    if (!o.live) continue;
    ++live;
    if (!o.group) ++ungrouped;
  }
  std::vector<std::pair<WallTime, const std::string*>> order;  // violations by time
  for (const auto& [key, v] : violations_) order.emplace_back(v.at, &key);
  std::sort(order.begin(), order.end());
  for (const auto& [at, key] : order) {
    const Violation& v = violations_.at(*key);
    auto now = groups_.find(*key);
    const std::size_t at_end = now == groups_.end() ? 0 : now->second.size();
    std::string refs;
    for (const auto& ref : v.refs) refs += (refs.empty() ? "" : ", ") + ref;
    add_evidence(r, "group " + v.values + ": " + std::to_string(v.refs.size()) + " objects at " +
                        since_start(ctx, v.at) + " (" + refs + "), at most " + std::to_string(v.most) + ", " +
                        std::to_string(at_end) + " at the end (max " + std::to_string(spec.max) + ")");
  }
  r.count = static_cast<std::int64_t>(violations_.size());
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary = std::to_string(r.count) + " groups went over " + std::to_string(spec.max) + " objects";
  if (!order.empty()) r.summary += ", the first at " + since_start(ctx, order.front().first);
  r.summary += "; " + plural(seen_, "object", "objects") + " seen, " + std::to_string(live) + " live at the end in " +
               plural(groups_.size(), "group", "groups");
  if (ungrouped > 0) r.summary += ", " + std::to_string(ungrouped) + " not grouped (a groupBy field is absent)";
  return r;
}

CheckResult DeclaredEvaluator::reaches_result(const DeclaredContext& ctx) const {
  const auto& spec = std::get<schema::Reaches>(check_.kind);
  const std::string target = spec.value ? "\"" + *spec.value + "\"" : "its " + spec.equals_field->text;
  std::optional<WallTime> from =
      spec.after == schema::Reaches::After::last_fault && ctx.faults_ended ? ctx.faults_ended : ctx.workload_created;
  if (!from) return no_data(check_.name, "the workload did not finish creating: no time to measure from");
  std::size_t live = 0;
  for (const auto& [id, o] : objects_) live += o.live ? 1 : 0;
  if (live == 0)
    return no_data(check_.name, seen_ == 0 ? "no object of " + check_.watch.resource + " matched"
                                           : "no object of " + check_.watch.resource + " was left at the end (" +
                                                 plural(seen_, "object", "objects") + " seen, all deleted)");
  if (!path_resolved_[0])
    return no_data(check_.name, "field " + spec.field.text + " is absent on all " + plural(seen_, "object", "objects") +
                                    " of " + check_.watch.resource);
  if (spec.equals_field && !path_resolved_[1])
    return no_data(check_.name, "field " + spec.equals_field->text + " is absent on all " +
                                    plural(seen_, "object", "objects") + " of " + check_.watch.resource);
  CheckResult r;
  std::size_t undecided = 0;
  for (const auto& [id, o] : objects_) {
    if (!o.live) continue;
    const WallTime deadline =
        std::max(*from, o.first_seen) + std::chrono::duration_cast<WallClock::duration>(spec.within);
    if (o.reached && *o.reached <= deadline) continue;
    if (o.reached) {
      ++r.count;
      add_evidence(r, o.ref + ": " + spec.field.text + " reached " + target + " at " + since_start(ctx, *o.reached) +
                          ", after its deadline " + since_start(ctx, deadline));
    } else if (ctx.ended >= deadline) {
      ++r.count;
      add_evidence(r, o.ref + ": " + spec.field.text + " is " +
                          (o.last_value.empty() ? std::string("absent") : "\"" + o.last_value + "\"") +
                          " at the end and never was " + target + " (deadline " + since_start(ctx, deadline) + ")");
    } else {
      ++undecided;
      add_evidence(r, o.ref + ": not yet " + target + " when the run ended at " + since_start(ctx, ctx.ended) +
                          ", before its deadline " + since_start(ctx, deadline));
    }
  }
  const std::string base = spec.field.text + " = " + target + " within " + faults::format_duration(spec.within) +
                           " after " +
                           (spec.after == schema::Reaches::After::workload ? "the workload"
                            : ctx.faults_ended                             ? "the last fault"
                                                                           : "the workload (no fault was seen)");
  if (r.count == 0 && undecided > 0) {
    r.status = CheckStatus::no_data;
    r.summary = "no data: " + std::to_string(undecided) + " of " + std::to_string(live) +
                " objects had not reached it when the run ended, before their deadline (" + base + ")";
    return r;
  }
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary = std::to_string(live - r.count - undecided) + "/" + std::to_string(live) + " live objects reached " + base;
  return r;
}

CheckResult DeclaredEvaluator::no_write_result(const DeclaredContext& ctx) const {
  const auto& spec = std::get<schema::NoWriteBy>(check_.kind);
  if (ctx.audit == nullptr) return no_data(check_.name, "no proxy audit: the requests were not recorded");
  if (seen_ == 0) return no_data(check_.name, "no object of " + check_.watch.resource + " matched");
  std::set<std::string> refs;
  for (const auto& [id, o] : objects_) refs.insert(o.ref);
  const std::string resource = check_.watch.audit_resource();
  CheckResult r;
  std::int64_t looked = 0;
  for (const auto& rec : *ctx.audit) {
    if (rec.resource != resource || !rec.subresource.empty()) continue;
    if (!namespace_.empty() && rec.namespace_ != namespace_) continue;
    if (std::find(spec.verbs.begin(), spec.verbs.end(), rec.verb) == spec.verbs.end()) continue;
    ++looked;
    const std::string ref = rec.namespace_.empty() ? rec.name : rec.namespace_ + "/" + rec.name;
    // A request on one object names it; one on the collection (create, deletecollection) does not.
    if (!rec.name.empty() && !refs.contains(ref)) continue;
    if (rec.name.empty() && !check_.watch.label_selector.empty()) continue;
    const bool by = std::any_of(spec.user_agents.begin(), spec.user_agents.end(),
                                [&](const std::string& p) { return faults::glob_match(p, rec.user_agent); });
    if (!by) continue;
    ++r.count;
    add_evidence(r, "audit #" + std::to_string(rec.seq) + " at " + since_start(ctx, rec.ts) + ": " + rec.verb + " of " +
                        (rec.name.empty() ? rec.namespace_ + "/* (the collection)" : ref) + " by '" + rec.user_agent +
                        "' -> " + std::to_string(rec.status));
  }
  r.status = r.count == 0 ? CheckStatus::passed : CheckStatus::violated;
  r.summary = std::to_string(r.count) + " writes by the listed clients among " + std::to_string(looked) + " " +
              [&] {
                std::string v;
                for (const auto& verb : spec.verbs) v += (v.empty() ? "" : "/") + verb;
                return v;
              }() +
              " requests on " + resource + " (" + plural(seen_, "object", "objects") + " watched, " +
              std::to_string(ctx.audit->size()) + " audit records)";
  return r;
}

}  // namespace faultline::harness
