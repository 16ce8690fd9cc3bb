// Derived report data: fault windows from the audit log, the pod timeline, exit codes.
#include <algorithm>

#include "faultline/harness/report.hpp"

namespace faultline::harness {

int exit_code(Verdict v) {
  switch (v) {
    case Verdict::pass:
    case Verdict::reproduced:
      return 0;
    case Verdict::fail:
      return 1;
    case Verdict::error:
      return 2;
  }
  return 2;
}

std::vector<FaultWindow> fault_windows(const std::vector<AuditRecord>& audit) {
  std::map<std::string, FaultWindow> by_rule;
  for (const auto& rec : audit) {
    if (!rec.rule) continue;
    auto [it, fresh] = by_rule.try_emplace(*rec.rule);
    FaultWindow& w = it->second;
    if (fresh) {
      w.rule = *rec.rule;
      w.action = rec.action.value_or("");
      w.first = w.last = rec.ts;
    }
    w.first = std::min(w.first, rec.ts);
    w.last = std::max(w.last, rec.ts);
    ++w.requests;
  }
  std::vector<FaultWindow> out;
  for (auto& [rule, w] : by_rule) out.push_back(std::move(w));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::vector<TimelinePoint> build_timeline(const PodObservations& pods, WallTime start, std::size_t max_points) {
  enum Kind { created, bound, running };
  std::vector<std::pair<WallTime, Kind>> events;
  for (const auto& [uid, p] : pods.pods) {
    if (p.created) events.emplace_back(*p.created, created);
    if (p.bound) events.emplace_back(*p.bound, bound);
    if (p.running) events.emplace_back(*p.running, running);
  }
  if (events.empty() || max_points < 2) return {};
  std::sort(events.begin(), events.end());
  auto seconds = [&](WallTime t) { return std::chrono::duration<double>(t - start).count(); };
  double first = std::min(0.0, seconds(events.front().first));
  double span = std::max(seconds(events.back().first) - first, 1e-3);
  double bucket = span / static_cast<double>(max_points - 1);
  std::vector<TimelinePoint> out;
  TimelinePoint now{first, 0, 0, 0};
  out.push_back(now);
  for (const auto& [t, kind] : events) {
    if (kind == created) ++now.created;
    if (kind == bound) ++now.bound;
    if (kind == running) ++now.running;
    now.seconds = seconds(t);
    if (now.seconds - out.back().seconds >= bucket) out.push_back(now);
  }
  now.seconds = seconds(events.back().first);
  out.push_back(now);
  return out;
}

}  // namespace faultline::harness
