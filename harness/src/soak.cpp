#include "faultline/harness/soak.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "faultline/harness/async.hpp"
#include "faultline/harness/gcc12_coroutine_frames.hpp"
#include "faultline/net/rfc3339.hpp"

namespace faultline::harness {
namespace fs = std::filesystem;

ResourceSample read_process_resources(int pid, const std::string& component) {
  ResourceSample sample;
  sample.at = WallClock::now();
  sample.component = component;
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::ifstream status(proc / "status");
  std::string line;
  bool rss = false;
  while (std::getline(status, line)) {
    if (!line.starts_with("VmRSS:")) continue;
    sample.rss_kib = std::stoll(line.substr(6));  // "VmRSS:     22528 kB"
    rss = true;
    break;
  }
  if (!rss)
    throw std::runtime_error(fmt::format("{} (pid {}): no VmRSS in {}", component, pid, (proc / "status").string()));
  std::error_code ec;
  fs::directory_iterator fds(proc / "fd", ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("{} (pid {}): cannot list {}: {}", component, pid, (proc / "fd").string(), ec.message()));
  for (auto it = fds; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec)
      throw std::runtime_error(
          fmt::format("{} (pid {}): listing {}: {}", component, pid, (proc / "fd").string(), ec.message()));
    ++sample.fds;
  }
  return sample;
}

std::optional<double> least_squares_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return std::nullopt;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  if (sxx == 0) return std::nullopt;
  return sxy / sxx;
}

CheckResult check_proxy_resources(const std::vector<ResourceSample>& samples, const schema::ResourceChecks& bounds,
                                  const std::string& error) {
  CheckResult c;
  c.name = "proxy-resources-flat";
  c.status = CheckStatus::no_data;
  if (!error.empty()) {
    c.summary = "sampling failed: " + error;
    return c;
  }
  std::vector<const ResourceSample*> proxy;
  for (const auto& s : samples)
    if (s.component == kProxyComponent) proxy.push_back(&s);
  if (proxy.empty()) {
    c.summary = "no samples of faultline-proxy (is the stack running it?)";
    return c;
  }
  const WallTime first = proxy.front()->at, last = proxy.back()->at;
  const WallTime middle = first + (last - first) / 2;
  std::vector<double> minutes, rss, fds;
  for (const auto* s : proxy) {
    if (s->at < middle) continue;
    minutes.push_back(std::chrono::duration<double>(s->at - first).count() / 60);
    rss.push_back(static_cast<double>(s->rss_kib));
    fds.push_back(static_cast<double>(s->fds));
  }
  const auto rss_slope = least_squares_slope(minutes, rss);
  const auto fd_slope = least_squares_slope(minutes, fds);
  const std::string numbers =
      fmt::format("proxy RSS {} -> {} KiB, fds {} -> {} over {:.1f} min ({} samples, {} in the last half)",
                  proxy.front()->rss_kib, proxy.back()->rss_kib, proxy.front()->fds, proxy.back()->fds,
                  std::chrono::duration<double>(last - first).count() / 60, proxy.size(), minutes.size());
  if (minutes.size() < 3 || !rss_slope || !fd_slope) {
    c.summary = "too few samples in the last half of the run to fit a slope: " + numbers;
    return c;
  }
  c.evidence.push_back(fmt::format("RSS slope over the last half: {:.1f} KiB/min (bound {:.1f})", *rss_slope,
                                   bounds.rss_kib_per_minute));
  c.evidence.push_back(
      fmt::format("fd slope over the last half: {:.3f} /min (bound {:.3f})", *fd_slope, bounds.fds_per_minute));
  c.count = (*rss_slope > bounds.rss_kib_per_minute ? 1 : 0) + (*fd_slope > bounds.fds_per_minute ? 1 : 0);
  c.status = c.count > 0 ? CheckStatus::violated : CheckStatus::passed;
  c.summary = (c.count > 0 ? "proxy grows: " : "flat: ") + numbers +
              fmt::format("; slopes {:.1f} KiB/min, {:.3f} fds/min", *rss_slope, *fd_slope);
  return c;
}

Observations settled_before(const Observations& obs, WallTime cutoff) {
  Observations out = obs;
  std::erase_if(out.pods.pods, [&](const auto& entry) {
    const PodState& pod = entry.second;
    return !pod.created || *pod.created >= cutoff;
  });
  return out;
}

CheckResult summarize_quiet_points(const std::vector<QuietPoint>& points, std::size_t dropped,
                                   std::size_t dropped_failures, bool faults_expected, WallTime run_started) {
  CheckResult c;
  c.name = "quiet-points";
  c.count = static_cast<std::int64_t>(dropped_failures);
  std::size_t no_data = 0;
  for (const auto& point : points) {
    const double secs = std::chrono::duration<double>(point.at - run_started).count();
    for (const auto& check : point.checks) {
      if (!check.failed()) continue;
      if (check.status == CheckStatus::no_data) ++no_data;
      else ++c.count;
      if (c.evidence.size() < kMaxEvidence)
        c.evidence.push_back(fmt::format("{:.1f}s ({}), after {}: {} {} ({}): {}", secs,
                                         net::format_rfc3339(point.at, 3), point.after, check.name,
                                         to_string(check.status), check.count, check.summary));
    }
  }
  const std::size_t total = points.size() + dropped;
  if (total == 0) {
    c.status = faults_expected ? CheckStatus::no_data : CheckStatus::passed;
    c.summary = faults_expected ? "no quiet point came: no fault window closed during the run"
                                : "no fault windows, so no quiet points; invariants checked at the end";
    return c;
  }
  c.status = c.count > 0 ? CheckStatus::violated : (no_data > 0 ? CheckStatus::no_data : CheckStatus::passed);
  c.summary = fmt::format(
      "{} quiet points checked{}: {} violations, {} checks without data", total,
      dropped ? fmt::format(" ({} beyond the first {} only counted)", dropped, kMaxQuietPoints) : "", c.count, no_data);
  return c;
}

asio::awaitable<void> sample_resources(const StackProcesses& stack, faults::Duration every, ResourceSampling& out) {
  std::vector<std::string> components;
  for (const char* name : kStackComponents)
    if (fs::exists(stack.run_dir() / "pids" / name)) components.emplace_back(name);
  if (components.empty()) {
    out.error = "no component pid files in " + (stack.run_dir() / "pids").string();
    co_return;
  }
  std::size_t per_component = 0;
  try {
    for (;;) {
      for (const auto& name : components) out.samples.push_back(read_process_resources(stack.pid(name), name));
      if (++per_component >= kMaxSamplesPerComponent) {
        std::vector<ResourceSample> kept;
        for (std::size_t i = 0; i < out.samples.size(); ++i)
          if ((i / components.size()) % 2 == 0) kept.push_back(out.samples[i]);
        out.samples = std::move(kept);
        per_component = (per_component + 1) / 2;
        every *= 2;
      }
      co_await sleep_for(every);
    }
  } catch (const boost::system::system_error& e) {
    if (e.code() == asio::error::operation_aborted) throw;
    out.error = e.what();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

bool LastFaultedRequest::update(const std::vector<AuditRecord>& records) {
  bool seen = false;
  for (; scanned < records.size(); ++scanned) {
    const AuditRecord& record = records[scanned];
    if (!record.rule) continue;
    seen = true;
    rule = *record.rule;
    at = record.ts;
  }
  return seen;
}

asio::awaitable<void> watch_quiet_points(QuietPointSources src, QuietPoints& out) {
  std::vector<std::string> names;
  for (const auto& name : src.names)
    if (const auto* spec = schema::find_invariant(name); spec && !spec->needs_yunikorn) names.push_back(name);
  LastFaultedRequest faulted;
  std::optional<faults::Clock::time_point> last_fault;  // when a new faulted request was last seen
  for (;;) {
    co_await sleep_for(std::chrono::seconds(1));
    const std::vector<AuditRecord>* records = src.audit();
    if (records == nullptr) continue;
    if (faulted.update(*records)) last_fault = src.clock.now();
    if (!last_fault || src.clock.now() - *last_fault < src.quiet_after) continue;
    last_fault.reset();
    QuietPoint point;
    point.at = WallClock::now();
    point.after =
        "the window of rule " + faulted.rule + " (last faulted request " + net::format_rfc3339(*faulted.at, 3) + ")";
    Observations obs = src.base;
    obs.pods = src.watcher.snapshot();
    obs.audit = *records;
    try {
      const ListResult nodes = co_await src.client.list("/api/v1/nodes");
      std::vector<std::string> live;
      for (const auto& n : nodes.items) live.emplace_back(n.at("metadata").at("name").as_string());
      obs.live_nodes = std::move(live);
    } catch (const boost::system::system_error& e) {
      if (e.code() == asio::error::operation_aborted) throw;
    } catch (const std::exception&) {
      // no node list: bound-to-live-node reports no data at this point
    }
    point.checks = run_checks(names, {}, settled_before(obs, point.at - src.quiet_after));
    for (auto& check : point.checks)
      if (check.evidence.size() > kQuietPointEvidence) check.evidence.resize(kQuietPointEvidence);
    if (out.points.size() < kMaxQuietPoints) {
      out.points.push_back(std::move(point));
    } else {
      ++out.dropped;
      for (const auto& check : point.checks) out.dropped_failures += check.failed() ? 1 : 0;
    }
  }
}

}  // namespace faultline::harness
