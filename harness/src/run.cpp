#include "faultline/harness/run.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "faultline/harness/async.hpp"
#include "faultline/harness/component_faults.hpp"
#include "faultline/harness/metrics_scrape.hpp"
#include "faultline/harness/node_flap.hpp"
#include "faultline/harness/object_watcher.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/poll.hpp"
#include "faultline/harness/services.hpp"
#include "faultline/harness/soak.hpp"
#include "faultline/harness/token_bucket.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/rfc3339.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

double seconds_between(SteadyTime from, SteadyTime to) { return std::chrono::duration<double>(to - from).count(); }

std::string fixed(double v, int decimals = 1) { return fmt::format("{:.{}f}", v, decimals); }

// The scheduler the checks see: the YuniKorn checks apply to a system with YuniKorn's REST API as a
// data source, whatever its name.
std::string checks_scheduler(const RunOptions& o) { return o.yunikorn_url.empty() ? o.scheduler : "yunikorn"; }

// The scenario's checks, with the system file's invariants when the scenario lists none.
schema::Checks checks_of(const RunOptions& o, const schema::Scenario& sc) {
  schema::Checks checks = sc.checks;
  if (!checks.invariants && o.default_checks) checks.invariants = o.default_checks;
  return checks;
}

// Polls the proxy's audit log in the background so nothing is evicted from its memory before we
// read it. A failed poll (the admin API busy for a moment) is retried by the next one; reading
// resumes where it stopped, and records evicted meanwhile make every later poll fail (410).
class AuditCollector {
 public:
  AuditCollector(ProxyAdmin& proxy, const asio::any_io_executor& executor) : proxy_(proxy), polling_(executor) {}

  asio::awaitable<void> start() {
    since_ = co_await proxy_.audit_head();
    polling_.start(poll_every_second());
  }
  // Stops polling and reads what is left. Throws when that last read fails.
  asio::awaitable<audit::DecodedLines> finish() {
    co_await polling_.stop();
    co_await poll();
    if (!error_.empty()) throw std::runtime_error("proxy audit: " + error_);
    co_return records_;
  }
  asio::awaitable<void> stop() { co_await polling_.stop(); }
  const std::vector<AuditRecord>& records() const { return records_.records; }

 private:
  asio::awaitable<void> poll_every_second() {
    for (;;) {
      co_await poll();
      co_await sleep_for(seconds(1));
    }
  }
  asio::awaitable<void> poll() {
    try {
      co_await proxy_.read_audit(since_, records_);
      error_.clear();
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  ProxyAdmin& proxy_;
  std::uint64_t since_ = 0;
  audit::DecodedLines records_;
  std::string error_;
  BackgroundTask polling_;
};

// What keeps the faults going at this moment ("rule r (open)", "an outage", "a component fault"),
// or nullopt when every fault has ended.
using FaultsGoingOn = std::function<asio::awaitable<std::optional<std::string>>()>;

// How often settling asks the proxy whether a fault is still going on, and the shortest time
// between two looks at the pods (it looks at each change of a pod, not on a fixed poll).
constexpr milliseconds kFaultsLook{250};
constexpr milliseconds kSettleLookGap{50};
// From the end of the settle to reading YuniKorn's state (collect()).
constexpr milliseconds kYunikornCatchUp{2000};
// How often the harness asks whether its nodes are Ready and registered in YuniKorn.
constexpr milliseconds kNodesLook{200};

struct Settled {
  std::string how;
  std::optional<SteadyTime> faults_last_seen;  // the last moment a fault was seen going on
  SteadyTime began{};                          // when the settle period began: every fault had ended
};

// Waits until every fault has ended (going_on returns nullopt; checked every second, and again
// while settling: a trigger reached or a repeat window opened meanwhile starts the wait over),
// then until every live pod is bound and Running, or nothing changed for `quiet` since the faults
// ended. A bind that keeps failing changes nothing the watch sees; a fault window still open is
// what this waits out. Returns how it ended.
asio::awaitable<Settled> settle(PodWatcher& watcher, std::int64_t created, milliseconds quiet,
                                const ProgressFn& progress, const faults::Clock& clock, const FaultsGoingOn& going_on) {
  const SteadyTime start = clock.now();
  Settled out;
  out.began = start;
  auto give_up = quiet * 10 + seconds(60);
  SteadyTime next_fault_check = start;
  bool faults_going_on = false;
  for (;;) {
    if (auto err = watcher.error(); !err.empty()) throw std::runtime_error(err);
    if (going_on && clock.now() >= next_fault_check) {
      next_fault_check = clock.now() + kFaultsLook;
      if (auto what = co_await going_on()) {
        out.faults_last_seen = clock.now();
        faults_going_on = true;
        progress("waiting for the faults to end: " + *what, false);
        co_await sleep_for(kFaultsLook);
        continue;
      }
      if (faults_going_on) out.began = clock.now();  // the first look that found every fault ended
      faults_going_on = false;
    }
    auto c = watcher.counts();
    const SteadyTime now = clock.now();
    auto since = [&](SteadyTime t) { return seconds_between(t, now); };
    double quiet_for = since(std::max(c.last_change, out.began));
    std::string state =
        std::to_string(c.bound) + "/" + std::to_string(c.live) + " bound, " + std::to_string(c.running) + " Running";
    if (c.pods < created)
      state += ", " + std::to_string(c.pods) + " of " + std::to_string(created) + " created pods seen by the watch";
    if (c.settled(created)) {
      progress("settled: " + state + " after " + fixed(since(start)) + "s", true);
      out.how =
          "settled: every live pod bound and Running (" + state + ") " + fixed(since(start)) + "s after the last phase";
      co_return out;
    }
    if (quiet_for * 1000 >= static_cast<double>(quiet.count())) {
      progress("settled by quiet period: " + state + ", nothing changed for " + fixed(quiet_for) + "s", true);
      out.how = "settled by quiet period: nothing changed for " + fixed(quiet_for) + "s (" + state + ")";
      co_return out;
    }
    if (now - out.began > give_up) {
      progress("still changing after " + fixed(since(out.began)) + "s; checking anyway", true);
      out.how = "gave up settling after " + fixed(since(out.began)) + "s: pods kept changing (" + state + ")";
      co_return out;
    }
    progress("settling: " + state + ", quiet for " + fixed(quiet_for) + "s (settle " +
                 fixed(static_cast<double>(quiet.count()) / 1000) + "s)",
             false);
    // Look again at the next change of a pod, when the quiet period would be over, at the next
    // look at the faults, or after a second, whichever comes first.
    SteadyTime wake =
        std::min({std::max(c.last_change, out.began) + quiet, out.began + give_up + milliseconds(1), now + seconds(1)});
    if (going_on) wake = std::min(wake, next_fault_check);
    const auto wait = std::max<SteadyTime::duration>(wake - now, milliseconds(1));
    // A burst changes pods thousands of times a second: look at most every kSettleLookGap.
    const bool changed = co_await watcher.next_change(wait);  // GCC 12: no co_await in the if's condition
    if (changed) co_await sleep_for(kSettleLookGap);
  }
}

asio::awaitable<std::vector<std::string>> node_names(KubeClient& client) {
  std::vector<std::string> out;
  const ListResult nodes = co_await client.list("/api/v1/nodes");
  for (const auto& n : nodes.items) out.emplace_back(n.at("metadata").at("name").as_string());
  co_return out;
}

asio::awaitable<std::string> apiserver_version(KubeClient& client) {
  auto v = co_await client.get("/version");
  if (!v || !v->is_object()) co_return "unknown";
  auto* git = v->get_object().if_contains("gitVersion");
  std::string version = git != nullptr && git->is_string() ? std::string(git->get_string()) : "unknown";
  co_return version;
}

constexpr std::chrono::seconds kFirstContactTimeout{10};
constexpr int kFirstContactAttempts = 2;

schema::Workload effective_workload(const RunOptions& o, const schema::Scenario& sc) {
  if (!sc.workload) throw std::runtime_error(sc.source + ": the scenario has no workload: nothing to run");
  schema::Workload w = *sc.workload;
  if (w.phases.empty()) throw std::runtime_error(sc.source + ": the workload has no phases");
  if (o.nodes) w.nodes.count = *o.nodes;
  // The first phase of pods (a nodeFlap or objects step creates none).
  auto first = std::find_if(w.phases.begin(), w.phases.end(), [](const auto& p) { return !p.node_flap && !p.objects; });
  if (first != w.phases.end() && o.pods) first->pods = *o.pods;
  if (first != w.phases.end() && o.rate) first->rate = *o.rate;
  for (auto& phase : w.phases) {
    if (!phase.churn || !o.churn_for) continue;
    const double pods = std::ceil(phase.churn->rate * std::chrono::duration<double>(*o.churn_for).count());
    if (*o.churn_for > schema::max_churn_for || pods > static_cast<double>(schema::max_churn_pods))
      throw std::runtime_error(
          fmt::format("--churn-for {}: churn {} would create {:.0f} pods over {} (at most {} pods, {})",
                      faults::format_duration(*o.churn_for), phase.name, pods, faults::format_duration(*o.churn_for),
                      schema::max_churn_pods, faults::format_duration(schema::max_churn_for)));
    phase.churn->for_ = *o.churn_for;
    phase.pods = static_cast<std::uint64_t>(pods);
  }
  // The loader bounds each phase and the sum; the overrides can raise the sum.
  std::uint64_t total = 0;
  for (const auto& phase : w.phases) total += phase.pods;
  if (total > schema::max_workload_pods)
    throw std::runtime_error(
        fmt::format("with the overrides the phases create {} pods together, more than the limit of {}", total,
                    schema::max_workload_pods));
  return w;
}

class Runner {
 public:
  Runner(asio::any_io_executor executor, const RunOptions& o, const schema::Scenario& sc, const std::string& text,
         const ProgressFn& progress, const faults::Clock& clock, Report& r)
      : executor_(std::move(executor)), o_(o), sc_(sc), text_(text), progress_(progress), clock_(clock), r_(r) {}

  asio::awaitable<void> execute() {
    lap_ = clock_.now();
    validate_options();
    net::KubeconfigContext cluster = net::load_kubeconfig(o_.kubeconfig, o_.context);
    KubeClientOptions client_options;
    client_options.cluster = cluster;
    client_options.limits = o_.limits;
    if (stops_the_api()) {
      // The harness's own calls outlast a component fault that takes the API away (about 100 s
      // of retries instead of 12 s).
      client_options.retry.max_attempts = 40;
      r_.notes.push_back(
          "a component fault stops kube-apiserver or etcd: the harness retries its calls up to 40 times");
    }
    client_ = std::make_unique<KubeClient>(executor_, client_options);
    r_.versions["kube-apiserver"] = co_await first_contact(client_options);
    workload_spec_ = effective_workload(o_, sc_);
    Workload workload(*client_, workload_spec_, o_.scheduler_name.empty() ? o_.scheduler : o_.scheduler_name, progress_,
                      clock_);
    workload.on_delete([this](const std::string& uid) { watcher_->mark_deleted_by_harness(uid); });
    co_await workload.ensure_namespace();
    co_await workload.delete_leftover_pods(seconds(120));
    if (proxy_) {
      co_await proxy_->disarm();
      co_await proxy_->put_scenario(text_);
      r_.notes.push_back("faults loaded into the proxy at " + proxy_->url() + " (" + std::to_string(sc_.faults.size()) +
                         " rules)");
    }
    lap(r_.timings.prepare);
    r_.nodes = static_cast<std::int64_t>(workload_spec_.nodes.count);
    co_await workload.create_nodes(o_.node_concurrency);
    co_await workload.wait_nodes_ready(o_.node_ready_timeout);
    if (!o_.yunikorn_url.empty()) co_await wait_yunikorn_nodes();
    lap(r_.timings.nodes);

    watcher_ = std::make_unique<PodWatcher>(*client_, workload_spec_.namespace_, kWorkloadLabel,
                                            max_watched_pods(workload_spec_), clock_);
    co_await watcher_->start();
    co_await start_declared_watches();
    if (proxy_) {
      audit_ = std::make_unique<AuditCollector>(*proxy_, executor_);
      co_await audit_->start();
    }
    co_await scrape_system_metrics(true);
    start_soak_checks();
    lap(r_.timings.observers);
    co_await run_phases(workload);
    workload_created = WallClock::now();
    if (!armed_) co_await arm();
    lap(r_.timings.workload);
    r_.notes.push_back(co_await settle_workload(Judged::after_faults));
    co_await stop_soak_checks();
    if (components_) {
      // A component still down or paused comes back first; then the cluster settles again.
      const bool under_way = components_->busy();
      co_await finish_components();
      if (under_way) r_.notes.push_back(co_await settle_workload(Judged::after_faults));
    }
    lap(r_.timings.settle);
    co_await scrape_system_metrics(false);
    co_await collect();
    lap(r_.timings.collect);
    for (const auto& step : r_.steps)
      if (!step.error.empty()) throw std::runtime_error(step.error);
  }

  // GET /version before anything else, with a short deadline and few attempts: an apiserver that
  // accepts connections and never answers (a stopped process behind a live socket, a wrong port)
  // is named within kFirstContactAttempts * kFirstContactTimeout, not after the run's retries.
  asio::awaitable<std::string> first_contact(const KubeClientOptions& options) {
    KubeClientOptions probe_options = options;
    probe_options.request_timeout = kFirstContactTimeout;
    probe_options.retry.max_attempts = kFirstContactAttempts;
    KubeClient probe(executor_, probe_options);
    progress_("contacting kube-apiserver at " + probe.server(), false);
    try {
      co_return co_await apiserver_version(probe);
    } catch (const TransportError& e) {
      throw TransportError("kube-apiserver at " + probe.server() + " does not answer: " + e.what());
    }
  }

  // Whatever was observed, also after a failure. Stops the pod watch and the audit poller.
  asio::awaitable<void> finish_observations(Observations& obs) {
    if (components_) co_await finish_components();  // never leave a component killed or paused
    try {
      co_await stop_soak_checks();
    } catch (const std::exception& e) {
      if (r_.error.empty()) r_.error = e.what();
    }
    if (audit_) co_await audit_->stop();
    for (auto& w : object_watchers_) co_await w->stop();
    if (watcher_) {
      co_await watcher_->stop();
      obs.pods = watcher_->snapshot();
      if (auto err = watcher_->error(); !err.empty() && r_.error.empty()) r_.error = err;
    }
    if (client_) r_.client_retries = client_->retries();
    // A run that failed between the two scrapes still reads the system's metrics once more.
    if (r_.system && r_.system->metrics_before && !r_.system->metrics_after) co_await scrape_system_metrics(false);
  }

  // The seconds since the last lap (or the start) go into `slot`.
  void lap(std::optional<double>& slot) {
    const SteadyTime now = clock_.now();
    slot = seconds_between(lap_, now);
    lap_ = now;
  }

  Observations observations;
  QuietPoints quiet;
  ResourceSampling sampling;
  std::vector<std::unique_ptr<DeclaredEvaluator>> declared;  // checks.declared, in order
  std::optional<WallTime> workload_created;                  // the workload's steps finished creating

 private:
  // checks.declared: one watch per check, from before the workload to the end.
  asio::awaitable<void> start_declared_watches() {
    for (const auto& check : sc_.checks.declared) {
      declared.push_back(std::make_unique<DeclaredEvaluator>(check, workload_spec_.namespace_));
      object_watchers_.push_back(std::make_unique<ObjectWatcher>(*client_, *declared.back()));
      co_await object_watchers_.back()->start();
    }
  }

  // checks.quietAfter and checks.resources: checked and sampled in the background while the
  // workload runs, until the cluster has settled at the end.
  void start_soak_checks() {
    if (sc_.checks.quiet_after) {
      Observations base;
      base.scheduler = checks_scheduler(o_);
      base.harness_user_agent = kHarnessUserAgent;
      std::function<const std::vector<AuditRecord>*()> audit = [this]() -> const std::vector<AuditRecord>* {
        return audit_ ? &audit_->records() : nullptr;
      };
      QuietPointSources sources{*client_,
                                *watcher_,
                                std::move(audit),
                                std::move(base),
                                checks_of(o_, sc_).invariants_to_check(),
                                *sc_.checks.quiet_after,
                                clock_};
      quiet_task_ = std::make_unique<BackgroundTask>(executor_);
      quiet_task_->start(watch_quiet_points(std::move(sources), quiet));
    }
    if (sc_.checks.resources) {
      if (o_.stack_run_dir.empty())
        throw std::runtime_error(
            "the scenario samples the stack's components (checks.resources) but no local stack was given "
            "(--stack-run-dir, or FAULTLINE_RUN_DIR from the stack's env file)");
      if (!stack_)
        stack_ = std::make_unique<StackProcesses>(o_.stack_run_dir, o_.stack_script,
                                                  o_.out_dir / "component-faults.log", clock_);
      sampler_task_ = std::make_unique<BackgroundTask>(executor_);
      sampler_task_->start(sample_resources(*stack_, sc_.checks.resources->every, sampling));
    }
  }
  // Throws when the quiet-point watch ended by itself with an error (then no check ran after it).
  asio::awaitable<void> stop_soak_checks() {
    std::string failed;
    if (quiet_task_ && !quiet_task_->error().empty()) failed = "quiet points: " + quiet_task_->error();
    if (quiet_task_) co_await quiet_task_->stop();
    if (sampler_task_) co_await sampler_task_->stop();
    if (!failed.empty()) throw std::runtime_error(failed);
  }

  void validate_options() {
    check_faults_end();
    if (o_.scheduler.empty()) throw std::runtime_error("no system under test (--system or --scheduler)");
    if (o_.scheduler == "yunikorn" && o_.yunikorn_url.empty()) {
      throw std::runtime_error("scheduler is yunikorn but no YuniKorn REST URL was given (--yunikorn-url)");
    }
    if (!sc_.faults.empty() && o_.proxy_admin_url.empty()) {
      throw std::runtime_error("the scenario has " + std::to_string(sc_.faults.size()) +
                               " fault rules but no proxy admin URL was given (--proxy-admin-url)");
    }
    if (!o_.proxy_admin_url.empty()) {
      proxy_ = std::make_unique<ProxyAdmin>(o_.proxy_admin_url, o_.proxy_admin_token, o_.limits);
    }
    if (!sc_.component_faults.empty()) {
      if (o_.stack_run_dir.empty() || o_.stack_script.empty())
        throw std::runtime_error("the scenario has " + std::to_string(sc_.component_faults.size()) +
                                 " component faults but no local stack was given (--stack-run-dir and --stack, or "
                                 "FAULTLINE_RUN_DIR and FAULTLINE_STACK from the stack's env file)");
      stack_ = std::make_unique<StackProcesses>(o_.stack_run_dir, o_.stack_script, o_.out_dir / "component-faults.log",
                                                clock_);
      components_ =
          std::make_unique<ComponentFaults>(executor_, sc_.component_faults, *stack_, proxy_.get(), clock_, progress_);
    }
  }

  bool stops_the_api() const {
    return std::any_of(sc_.component_faults.begin(), sc_.component_faults.end(), [](const auto& f) {
      return f.target == schema::Component::kube_apiserver || f.target == schema::Component::etcd;
    });
  }

  asio::awaitable<void> finish_components() {
    if (components_finished_) co_return;
    components_finished_ = true;
    std::vector<StepRecord> records = co_await components_->finish();
    r_.steps.insert(r_.steps.end(), records.begin(), records.end());
  }

  milliseconds settle_time() const { return o_.settle ? *o_.settle : sc_.checks.settle; }

  // A rule that neither closes its window (when.for) nor runs out of fires (when.limit) never
  // ends: there would be no moment after the faults to judge the cluster at.
  void check_faults_end() const {
    for (const auto& rule : sc_.faults)
      if (!rule.when.for_ && !rule.when.limit)
        throw std::runtime_error("fault rule '" + rule.name +
                                 "' never ends (it has neither when.for nor when.limit): the harness judges the "
                                 "cluster once every fault has ended; give the rule a window (when.for) or a "
                                 "number of fires (when.limit)");
  }

  // What keeps the faults going now (see settle()): an outage in force, a rule whose window is
  // open or still to come, a component fault under way. A rule whose afterMatches trigger was not
  // reached is not going on (collect() reports a rule that never fired). A rule with when.limit
  // but no when.for ends when its limit is used up: one still open a whole settle period after
  // the wait began is an error, as the verdict would be judged while it can still fire.
  asio::awaitable<std::optional<std::string>> faults_going_on() {
    std::vector<std::string> what;
    std::vector<std::string> limit_only;
    bool limit_only_fired = false;  // one of them fired at least once
    if (components_ && components_->busy()) what.emplace_back("a component fault");
    if (proxy_ && armed_) {
      const ProxyAdmin::Activity activity = co_await proxy_->activity();
      if (activity.outage) what.emplace_back("an outage");
      for (std::size_t i = 0; i < activity.rules.size(); ++i) {
        const FaultCounter& rule = activity.rules[i];
        const std::string& phase = activity.phases[i];
        if (phase != "open" && phase != "scheduled") continue;
        what.push_back("rule " + rule.rule + " (" + phase + ")");
        auto spec = std::find_if(sc_.faults.begin(), sc_.faults.end(),
                                 [&](const faults::Rule& r) { return r.name == rule.rule; });
        if (phase == "open" && spec != sc_.faults.end() && !spec->when.for_) {
          limit_only.push_back(rule.rule + " (fired " + std::to_string(rule.fired) + " of its limit of " +
                               std::to_string(spec->when.limit.value_or(0)) + ")");
          limit_only_fired = limit_only_fired || rule.fired > 0;
        }
      }
    }
    if (what.empty()) {
      limit_only_open_since_.reset();
      co_return std::nullopt;
    }
    if (!limit_only.empty() && limit_only.size() == what.size()) {
      if (!limit_only_open_since_) limit_only_open_since_ = clock_.now();
      // Never fired at all: the run did not test what the scenario asks, as for a trigger never reached.
      if (clock_.now() - *limit_only_open_since_ > settle_time())
        throw std::runtime_error(
            "fault rule " + limit_only.front() + (limit_only_fired ? " did not end" : " never fired and did not end") +
            " within checks.settle (" + fixed(seconds_between(*limit_only_open_since_, clock_.now())) +
            "s) after the workload: it has no when.for and can still fire, so the cluster "
            "cannot be judged after the faults");
    } else {
      limit_only_open_since_.reset();
    }
    std::string joined;
    for (const auto& w : what) joined += (joined.empty() ? "" : ", ") + w;
    co_return joined;
  }
  // Until every pod created so far is bound and Running (and seen by the watch), or nothing changed
  // for the settle time.
  // after_faults: the settle before the verdict, which begins once every fault has ended; now: a
  // phase's `start: settled`, which does not wait for the faults.
  enum class Judged { after_faults, now };
  asio::awaitable<std::string> settle_workload(Judged when) {
    FaultsGoingOn going_on;
    if (when == Judged::now)
      co_return (co_await settle(*watcher_, r_.pods_created, settle_time(), progress_, clock_, going_on)).how;
    if (proxy_ || components_) going_on = [this] { return faults_going_on(); };
    const Settled settled = co_await settle(*watcher_, r_.pods_created, settle_time(), progress_, clock_, going_on);
    // Wall times of the steady-clock moments settle() saw.
    const SteadyTime steady_now = clock_.now();
    const WallTime wall_now = WallClock::now();
    const auto wall = [&](SteadyTime t) {
      return wall_now - std::chrono::duration_cast<WallClock::duration>(steady_now - t);
    };
    std::optional<WallTime> ended;
    if (settled.faults_last_seen) ended = wall(*settled.faults_last_seen);
    if (audit_) {
      LastFaultedRequest faulted;
      faulted.update(audit_->records());
      if (faulted.at && (!ended || *faulted.at > *ended)) ended = faulted.at;
    }
    r_.faults_ended = ended;
    r_.settle_started = wall(settled.began);
    if (!ended) co_return settled.how;
    co_return settled.how + "; the last fault ended at " + net::format_rfc3339(*ended, 3) + ", settling began at " +
        net::format_rfc3339(*r_.settle_started, 3);
  }

  asio::awaitable<void> wait_yunikorn_nodes() {
    const std::string count = std::to_string(workload_spec_.nodes.count);
    std::size_t known = 0;
    const auto registered = [&]() -> asio::awaitable<bool> {
      known = (co_await take_yunikorn_snapshot(o_.yunikorn_url, nullptr, "default", o_.limits)).nodes.size();
      if (known >= workload_spec_.nodes.count) {
        progress_("YuniKorn knows " + std::to_string(known) + " nodes", true);
        co_return true;
      }
      progress_("waiting for YuniKorn to register nodes: " + std::to_string(known) + "/" + count, false);
      co_return false;
    };
    co_await poll_until(clock_, {o_.node_ready_timeout, kNodesLook}, registered, [&] {
      return "YuniKorn registered only " + std::to_string(known) + " of " + count + " nodes";
    });
  }

  // The system's metrics (metrics.url of its system file), before the faults are armed and after
  // the last settle. An endpoint that cannot be read is a note, not a failed run.
  asio::awaitable<void> scrape_system_metrics(bool before) {
    if (!r_.system || r_.system->metrics_url.empty()) co_return;
    SystemRecord& sys = *r_.system;
    const std::string what = "metrics of " + sys.name + " at " + sys.metrics_url;
    MetricsScrape scrape = co_await scrape_metrics(sys.metrics_url, sys.metrics_series);
    const char* when = before ? " (before)" : " (after)";
    if (!scrape.error.empty()) {
      const std::string line = what + " could not be read" + when + ": " + scrape.error;
      progress_(line, true);
      r_.notes.push_back(line);
    } else {
      progress_(what + when + ": " + std::to_string(scrape.samples.size()) + " samples of " +
                    std::to_string(sys.metrics_series.size()) + " series kept (" + std::to_string(scrape.seen) +
                    " served)",
                true);
      if (scrape.malformed > 0)
        r_.notes.push_back(what + when + ": " + std::to_string(scrape.malformed) +
                           " malformed lines skipped; the first: " + scrape.first_malformed);
      if (scrape.dropped > 0)
        r_.notes.push_back(what + when + ": " + std::to_string(scrape.dropped) + " samples past the limit of " +
                           std::to_string(kMaxMetricSamples) + " not kept");
    }
    (before ? sys.metrics_before : sys.metrics_after) = std::move(scrape);
    if (before) co_return;
    if (auto missing = missing_series(sys); !missing.empty()) {
      std::string names;
      for (const auto& n : missing) names += (names.empty() ? "" : ", ") + n;
      const std::string line =
          what + ": listed series not served (a labelled series appears once it has a value): " + names;
      progress_(line, true);
      r_.notes.push_back(line);
    }
  }

  // Time zero of the faults: the proxy's rules and the component faults.
  asio::awaitable<void> arm() {
    armed_ = true;
    if (proxy_) {
      co_await proxy_->arm();
      r_.armed = WallClock::now();
      r_.notes.push_back("proxy armed at " + net::format_rfc3339(*r_.armed, 3));
    }
    if (components_) co_await components_->start();
  }

  asio::awaitable<void> run_phases(Workload& workload) {
    std::function<std::string()> status = [this] {
      auto c = watcher_->counts();
      return "bound " + std::to_string(c.bound) + ", running " + std::to_string(c.running);
    };
    std::function<asio::awaitable<void>()> arm_once = [this]() -> asio::awaitable<void> {
      if (!armed_) co_await arm();
    };
    const SteadyTime workload_start = clock_.now();
    // A nodeFlap step with an offset start runs at that offset, alongside whatever phase is creating pods.
    for (const auto& phase : workload_spec_.phases)
      if (phase.node_flap && phase.start.kind == schema::PhaseStart::Kind::offset)
        start_flap(phase, workload_start + phase.start.offset);
    double created_seconds = 0;
    for (const auto& phase : workload_spec_.phases) {
      if (phase.node_flap && phase.start.kind == schema::PhaseStart::Kind::offset) continue;
      if (phase.node_flap && phase.start.kind == schema::PhaseStart::Kind::settled) {
        const std::string settled = co_await settle_workload(Judged::now);
        r_.notes.push_back("before step " + phase.name + ": " + settled);
      }
      if (phase.node_flap) {
        start_flap(phase, clock_.now());
        continue;
      }
      if (phase.start.kind == schema::PhaseStart::Kind::settled) {
        const std::string settled = co_await settle_workload(Judged::now);
        r_.notes.push_back("before phase " + phase.name + ": " + settled);
      } else if (phase.start.kind == schema::PhaseStart::Kind::offset) {
        const auto wait = workload_start + phase.start.offset - clock_.now();
        if (wait > SteadyTime::duration::zero()) co_await sleep_for(wait);
      }
      PhaseResult pr = co_await workload.run_phase(phase, arm_once, status);
      if (phase.objects) {
        r_.objects_created += static_cast<std::int64_t>(pr.created);
        r_.objects_failed += static_cast<std::int64_t>(pr.failed);
        r_.notes.push_back("objects " + pr.name + ": " + std::to_string(pr.created) + "/" +
                           std::to_string(pr.requested) + " " + phase.objects->resource + " created in " +
                           fixed(pr.seconds, 2) + "s, " + std::to_string(pr.failed) + " failed");
        if (pr.failed > 0)
          throw std::runtime_error("objects " + pr.name + ": " + std::to_string(pr.failed) +
                                   " creations failed: " + (pr.errors.empty() ? std::string("?") : pr.errors.front()));
        continue;
      }
      r_.pods_created += static_cast<std::int64_t>(pr.created);
      created_seconds += pr.seconds;
      r_.notes.push_back("phase " + pr.name + ": " + std::to_string(pr.created) + "/" + std::to_string(pr.requested) +
                         " pods created in " + fixed(pr.seconds, 2) + "s (" + fixed(pr.rate()) + " pods/s" +
                         (phase.rate ? ", asked " + fixed(*phase.rate) + "/s" : std::string(", unpaced")) +
                         ", concurrency " + std::to_string(phase.concurrency) + ")");
      if (phase.churn)
        r_.notes.push_back("churn " + pr.name + ": " + std::to_string(pr.deleted) +
                           " pods deleted at the end of their lifetime, at most " + std::to_string(pr.most_alive) +
                           " alive at once, " + std::to_string(pr.left_alive) + " left alive at the end");
      if (pr.failed > 0) {
        std::string why = pr.errors.empty() ? std::string() : ": " + pr.errors.front();
        throw std::runtime_error("phase " + pr.name + ": " + std::to_string(pr.failed) + " pod creations" +
                                 (phase.churn ? " or deletions" : "") + " failed" + why);
      }
    }
    r_.create_rate_achieved = created_seconds > 0 ? static_cast<double>(r_.pods_created) / created_seconds : 0;
    // The flaps end (their nodes are back) before the cluster is left to settle.
    for (auto& flap : flaps_)
      while (flap->running()) co_await sleep_for(milliseconds(100));
  }

  // Runs a nodeFlap step in the background from `at`; its record goes into the report's steps.
  void start_flap(const schema::Phase& step, SteadyTime at) {
    auto task = [](Runner& self, const schema::Phase& flap_step, SteadyTime flap_at) -> asio::awaitable<void> {
      asio::steady_timer wait(self.executor_, flap_at);
      co_await wait.async_wait(use_tuple);
      if (!self.armed_) co_await self.arm();
      NodeFlapContext context{*self.client_, *self.watcher_, self.o_.yunikorn_url, self.workload_spec_.nodes,
                              self.clock_,   self.progress_};
      StepRecord record = co_await run_node_flap(flap_step, context);
      self.r_.steps.push_back(std::move(record));
    };
    flaps_.push_back(std::make_unique<BackgroundTask>(executor_));
    flaps_.back()->start(task(*this, step, at));
  }

  asio::awaitable<void> collect() {
    // YuniKorn's core gets 2 s after the settle to apply the shim's last updates before its state
    // is read; the audit log, the rule counters and the node list are read meanwhile.
    const SteadyTime yunikorn_read_at = clock_.now() + kYunikornCatchUp;
    if (audit_) {
      audit::DecodedLines collected = co_await audit_->finish();
      if (collected.malformed > 0) {
        r_.notes.push_back("proxy audit: " + std::to_string(collected.malformed) +
                           " malformed lines skipped; the first: " + collected.first_error);
      }
      observations.audit = std::move(collected.records);
    }
    if (proxy_) {
      r_.faults = co_await proxy_->rules();
      co_await proxy_->disarm();
    }
    observations.live_nodes = co_await node_names(*client_);
    if (!o_.yunikorn_url.empty()) {
      if (const auto wait = yunikorn_read_at - clock_.now(); wait > SteadyTime::duration::zero())
        co_await sleep_for(wait);
      std::string dump;
      observations.yunikorn = co_await take_yunikorn_snapshot(o_.yunikorn_url, &dump, "default", o_.limits);
      net::write_file(o_.out_dir / "yunikorn-fullstatedump.json", dump);
    }
    for (const auto& f : r_.faults) {
      if (f.fired == 0) {
        throw std::runtime_error("fault rule '" + f.rule + "' never fired (matched " + std::to_string(f.matched) +
                                 " requests): the run did not test what the scenario asks");
      }
    }
  }

  asio::any_io_executor executor_;
  const RunOptions& o_;
  const schema::Scenario& sc_;
  const std::string& text_;
  const ProgressFn& progress_;
  const faults::Clock& clock_;
  Report& r_;
  schema::Workload workload_spec_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<ProxyAdmin> proxy_;
  std::unique_ptr<PodWatcher> watcher_;
  std::vector<std::unique_ptr<ObjectWatcher>> object_watchers_;
  std::unique_ptr<AuditCollector> audit_;
  std::unique_ptr<StackProcesses> stack_;
  std::unique_ptr<ComponentFaults> components_;
  bool components_finished_ = false;
  std::optional<SteadyTime> limit_only_open_since_;  // faults_going_on(): only limit-only rules open since
  std::vector<std::unique_ptr<BackgroundTask>> flaps_;
  std::unique_ptr<BackgroundTask> quiet_task_;
  std::unique_ptr<BackgroundTask> sampler_task_;
  bool armed_ = false;
  SteadyTime lap_{};  // the end of the last step timed (RunTimings)
};

}  // namespace

std::uint64_t max_watched_pods(const schema::Workload& workload) {
  constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t pods = 0;
  for (const auto& phase : workload.phases) pods = phase.pods > most - pods ? most : pods + phase.pods;
  return pods > (most - 1000) / 2 ? most : 2 * pods + 1000;
}

Verdict check_invariants(const schema::Checks& checks, const std::optional<std::vector<std::string>>& expect,
                         const Observations& obs, Report& report, const std::vector<CheckResult>& declared) {
  std::vector<std::string> names = checks.invariants_to_check();
  const std::vector<std::string>& expected = expect ? *expect : checks.expect;
  const auto is_declared = [&](const std::string& name) {
    return std::any_of(checks.declared.begin(), checks.declared.end(), [&](const auto& d) { return d.name == name; });
  };
  std::vector<std::string> expected_invariants;
  for (const auto& e : expected)
    if (!is_declared(e)) expected_invariants.push_back(e);
  report.checks = run_checks(names, expected_invariants, obs);
  for (const auto& spec : checks.declared) {
    auto found = std::find_if(declared.begin(), declared.end(), [&](const auto& r) { return r.name == spec.name; });
    CheckResult r;
    if (found != declared.end()) {
      r = *found;
    } else {
      r.name = spec.name;
      r.status = CheckStatus::no_data;
      r.summary = "no data: the run ended before its watch started";
    }
    r.expected_violated = std::find(expected.begin(), expected.end(), spec.name) != expected.end();
    report.checks.push_back(std::move(r));
  }
  if (names.empty() && checks.declared.empty()) {
    report.notes.push_back(
        "no invariants checked: the scenario lists `invariants: []`, so the verdict says only "
        "that the run completed without error");
  }
  return decide_verdict(report.checks);
}

namespace {

// checks.quietAfter / checks.resources: their checks go after the invariants; the verdict counts them.
Verdict add_soak_checks(const schema::Scenario& sc, QuietPoints& quiet, ResourceSampling& sampling, Report& report) {
  if (sc.checks.quiet_after) {
    report.checks.push_back(summarize_quiet_points(quiet.points, quiet.dropped, quiet.dropped_failures,
                                                   !sc.faults.empty(), report.started));
    report.quiet_points = std::move(quiet.points);
  }
  if (sc.checks.resources) {
    report.checks.push_back(check_proxy_resources(sampling.samples, *sc.checks.resources, sampling.error));
    report.resources = std::move(sampling.samples);
  }
  return decide_verdict(report.checks);
}

}  // namespace

Report run_scenario(const RunOptions& o, const schema::Scenario& sc, const std::string& text,
                    const ProgressFn& progress, const faults::Clock& clock) {
  Report r;
  r.scenario = sc.metadata.name.empty() ? sc.source : sc.metadata.name;
  r.scenario_file = sc.source;
  r.seed = sc.seed;
  r.scheduler = o.scheduler;
  r.system = o.system;
  r.started = WallClock::now();
  // The whole run is one single-threaded io_context on this thread.
  asio::io_context ioc;
  Runner runner(ioc.get_executor(), o, sc, text, progress, clock, r);
  bool ok = true;
  try {
    run_blocking(ioc, runner.execute());
  } catch (const std::exception& e) {
    ok = false;
    r.error = e.what();
  }
  const SteadyTime checks_began = clock.now();
  Observations& obs = runner.observations;
  obs.scheduler = checks_scheduler(o);
  obs.harness_user_agent = kHarnessUserAgent;
  run_blocking(ioc, runner.finish_observations(obs));
  std::stable_sort(r.steps.begin(), r.steps.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.started < b.started; });
  try {
    DeclaredContext context;
    context.run_started = r.started;
    context.ended = WallClock::now();
    context.workload_created = runner.workload_created;
    context.faults_ended = r.faults_ended;
    context.audit = obs.audit ? &*obs.audit : nullptr;
    std::vector<CheckResult> declared;
    for (const auto& evaluator : runner.declared) declared.push_back(evaluator->result(context));
    Verdict checked = check_invariants(checks_of(o, sc), o.expect, obs, r, declared);
    if (sc.checks.quiet_after || sc.checks.resources) {
      checked = add_soak_checks(sc, runner.quiet, runner.sampling, r);
    }
    r.verdict = ok && r.error.empty() ? checked : Verdict::error;
  } catch (const std::exception& e) {
    r.error = e.what();
    r.verdict = Verdict::error;
  }
  r.stats = compute_stats(obs);
  if (obs.audit) r.fault_windows = fault_windows(*obs.audit);
  r.timeline = build_timeline(obs.pods, r.started);
  r.timings.checks = seconds_between(checks_began, clock.now());
  r.finished = WallClock::now();
  return r;
}

}  // namespace faultline::harness
