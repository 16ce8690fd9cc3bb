#include "faultline/harness/run.hpp"

#include <boost/json.hpp>
#include <fstream>
#include <thread>

#include "faultline/harness/pod_watcher.hpp"
#include "faultline/harness/services.hpp"
#include "faultline/net/rfc3339.hpp"
#include "faultline/harness/token_bucket.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

double since(SteadyTime t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }

std::string fmt(double v, int decimals = 1) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// Polls the proxy's audit log on a thread so nothing is evicted from its memory before we read it.
// A failed poll (the admin API busy for a moment) is retried by the next one; reading resumes
// where it stopped, and records evicted meanwhile make every later poll fail (410).
class AuditCollector {
public:
    explicit AuditCollector(ProxyAdmin& proxy) : proxy_(proxy), since_(proxy.audit_head()) {
        thread_ = std::thread([this] {
            while (!stop_) {
                poll();
                for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(milliseconds(100));
            }
        });
    }
    ~AuditCollector() { stop_polling(); }  // never throws: finish() reports errors
    // Stops polling and reads what is left. Throws when that last read fails.
    audit::DecodedLines finish() {
        stop_polling();
        poll();
        std::lock_guard lock(mutex_);
        if (!error_.empty()) throw std::runtime_error("proxy audit: " + error_);
        return records_;
    }

private:
    void stop_polling() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }
    void poll() {
        std::lock_guard lock(mutex_);
        try {
            proxy_.read_audit(since_, records_);
            error_.clear();
        } catch (const std::exception& e) {
            error_ = e.what();
        }
    }
    ProxyAdmin& proxy_;
    std::uint64_t since_;
    audit::DecodedLines records_;
    std::string error_;
    std::mutex mutex_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Waits until every live pod is bound and Running, or nothing changed for `quiet`. Returns how it ended.
std::string settle(PodWatcher& watcher, milliseconds quiet, const ProgressFn& progress) {
    auto start = std::chrono::steady_clock::now();
    auto give_up = quiet * 10 + seconds(60);
    for (;;) {
        if (auto err = watcher.error(); !err.empty()) throw std::runtime_error(err);
        auto c = watcher.counts();
        double quiet_for = std::chrono::duration<double>(WallClock::now() - c.lastChange).count();
        std::string state = std::to_string(c.bound) + "/" + std::to_string(c.live) + " bound, " +
                            std::to_string(c.running) + " Running";
        if (c.live > 0 && c.bound == c.live && c.running == c.live) {
            progress("settled: " + state + " after " + fmt(since(start)) + "s", true);
            return "settled: every live pod bound and Running (" + state + ") " + fmt(since(start)) + "s after the last phase";
        }
        if (quiet_for * 1000 >= static_cast<double>(quiet.count())) {
            progress("settled by quiet period: " + state + ", nothing changed for " + fmt(quiet_for) + "s", true);
            return "settled by quiet period: nothing changed for " + fmt(quiet_for) + "s (" + state + ")";
        }
        if (std::chrono::steady_clock::now() - start > give_up) {
            progress("still changing after " + fmt(since(start)) + "s; checking anyway", true);
            return "gave up settling after " + fmt(since(start)) + "s: pods kept changing (" + state + ")";
        }
        progress("settling: " + state + ", quiet for " + fmt(quiet_for) + "s (settle " +
                     fmt(static_cast<double>(quiet.count()) / 1000) + "s)",
                 false);
        std::this_thread::sleep_for(milliseconds(500));
    }
}

std::vector<std::string> node_names(KubeClient& client) {
    std::vector<std::string> out;
    for (const auto& n : client.list("/api/v1/nodes").items) out.emplace_back(n.at("metadata").at("name").as_string());
    return out;
}

std::string apiserver_version(KubeClient& client) {
    auto v = client.get("/version");
    if (!v || !v->is_object()) return "unknown";
    auto* git = v->get_object().if_contains("gitVersion");
    return git != nullptr && git->is_string() ? std::string(git->get_string()) : "unknown";
}

faults::Workload effective_workload(const RunOptions& o, const faults::Scenario& sc) {
    if (!sc.workload) throw std::runtime_error(sc.source + ": the scenario has no workload: nothing to run");
    faults::Workload w = *sc.workload;
    if (w.phases.empty()) throw std::runtime_error(sc.source + ": the workload has no phases");
    if (o.nodes) w.nodes.count = *o.nodes;
    if (o.pods) w.phases.front().pods = *o.pods;
    if (o.rate) w.phases.front().rate = *o.rate;
    return w;
}

class Runner {
public:
    Runner(const RunOptions& o, const faults::Scenario& sc, const std::string& text, const ProgressFn& progress, Report& r)
        : o_(o), sc_(sc), text_(text), progress_(progress), r_(r) {}

    void execute() {
        validate_options();
        net::KubeconfigContext cluster = net::load_kubeconfig(o_.kubeconfig, o_.context);
        KubeClientOptions client_options;
        client_options.cluster = cluster;
        client_ = std::make_unique<KubeClient>(client_options);
        r_.versions["kube-apiserver"] = apiserver_version(*client_);
        workload_spec_ = effective_workload(o_, sc_);
        Workload workload(*client_, workload_spec_, o_.scheduler, progress_);
        workload.ensure_namespace();
        workload.delete_leftover_pods(seconds(120));
        if (proxy_) {
            proxy_->disarm();
            proxy_->put_scenario(text_);
            r_.notes.push_back("faults loaded into the proxy at " + proxy_->url() + " (" + std::to_string(sc_.faults.size()) + " rules)");
        }
        r_.nodes = static_cast<std::int64_t>(workload_spec_.nodes.count);
        workload.create_nodes(o_.nodeConcurrency);
        workload.wait_nodes_ready(o_.nodeReadyTimeout);
        if (o_.scheduler == "yunikorn") wait_yunikorn_nodes();

        watcher_ = std::make_unique<PodWatcher>(*client_, workload_spec_.namespace_, kWorkloadLabel);
        watcher_->start();
        if (proxy_) audit_ = std::make_unique<AuditCollector>(*proxy_);
        run_phases(workload);
        if (!armed_ && proxy_) arm();
        r_.notes.push_back(settle(*watcher_, settle_time(), progress_));
        collect();
    }

    // Whatever was observed, also after a failure.
    void finish_observations(Observations& obs) {
        if (watcher_) {
            watcher_->stop();
            obs.pods = watcher_->snapshot();
            if (auto err = watcher_->error(); !err.empty() && r_.error.empty()) r_.error = err;
        }
        if (client_) r_.clientRetries = client_->retries();
    }

    Observations observations;

private:
    void validate_options() {
        if (o_.scheduler != "yunikorn" && o_.scheduler != "kube-scheduler") {
            throw std::runtime_error("scheduler must be yunikorn or kube-scheduler, not '" + o_.scheduler + "'");
        }
        if (o_.scheduler == "yunikorn" && o_.yunikornUrl.empty()) {
            throw std::runtime_error("scheduler is yunikorn but no YuniKorn REST URL was given (--yunikorn-url)");
        }
        if (!sc_.faults.empty() && o_.proxyAdminUrl.empty()) {
            throw std::runtime_error("the scenario has " + std::to_string(sc_.faults.size()) +
                                     " fault rules but no proxy admin URL was given (--proxy-admin-url)");
        }
        if (!o_.proxyAdminUrl.empty()) proxy_ = std::make_unique<ProxyAdmin>(o_.proxyAdminUrl, o_.proxyAdminToken);
    }

    milliseconds settle_time() const { return o_.settle ? *o_.settle : sc_.checks.settle; }

    void wait_yunikorn_nodes() {
        auto deadline = std::chrono::steady_clock::now() + o_.nodeReadyTimeout;
        for (;;) {
            auto snapshot = take_yunikorn_snapshot(o_.yunikornUrl);
            if (snapshot.nodes.size() >= workload_spec_.nodes.count) {
                progress_("YuniKorn knows " + std::to_string(snapshot.nodes.size()) + " nodes", true);
                return;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error("YuniKorn registered only " + std::to_string(snapshot.nodes.size()) + " of " +
                                         std::to_string(workload_spec_.nodes.count) + " nodes");
            }
            progress_("waiting for YuniKorn to register nodes: " + std::to_string(snapshot.nodes.size()) + "/" +
                          std::to_string(workload_spec_.nodes.count),
                      false);
            std::this_thread::sleep_for(milliseconds(500));
        }
    }

    void arm() {
        proxy_->arm();
        armed_ = true;
        r_.notes.push_back("proxy armed at " + net::format_rfc3339(WallClock::now(), 3));
    }

    void run_phases(Workload& workload) {
        auto status = [this] {
            auto c = watcher_->counts();
            return "bound " + std::to_string(c.bound) + ", running " + std::to_string(c.running);
        };
        auto workload_start = std::chrono::steady_clock::now();
        double created_seconds = 0;
        for (const auto& phase : workload_spec_.phases) {
            if (phase.start.kind == faults::PhaseStart::Kind::settled) {
                r_.notes.push_back("before phase " + phase.name + ": " + settle(*watcher_, settle_time(), progress_));
            } else if (phase.start.kind == faults::PhaseStart::Kind::offset) {
                auto at = workload_start + phase.start.offset;
                while (std::chrono::steady_clock::now() < at) std::this_thread::sleep_for(milliseconds(20));
            }
            PhaseResult pr = workload.run_phase(phase, [this] { if (proxy_ && !armed_) arm(); }, status);
            r_.podsCreated += static_cast<std::int64_t>(pr.created);
            created_seconds += pr.seconds;
            r_.notes.push_back("phase " + pr.name + ": " + std::to_string(pr.created) + "/" + std::to_string(pr.requested) +
                               " pods created in " + fmt(pr.seconds, 2) + "s (" + fmt(pr.rate()) + " pods/s" +
                               (phase.rate ? ", asked " + fmt(*phase.rate) + "/s" : std::string(", unpaced")) +
                               ", concurrency " + std::to_string(phase.concurrency) + ")");
            if (pr.failed > 0) {
                std::string why = pr.errors.empty() ? std::string() : ": " + pr.errors.front();
                throw std::runtime_error("phase " + pr.name + ": " + std::to_string(pr.failed) + " pod creations failed" + why);
            }
        }
        r_.createRateAchieved = created_seconds > 0 ? static_cast<double>(r_.podsCreated) / created_seconds : 0;
    }

    void collect() {
        if (audit_) {
            audit::DecodedLines collected = audit_->finish();
            if (collected.malformed > 0) {
                r_.notes.push_back("proxy audit: " + std::to_string(collected.malformed) +
                                   " malformed lines skipped; the first: " + collected.first_error);
            }
            observations.audit = std::move(collected.records);
        }
        if (proxy_) {
            r_.faults = proxy_->rules();
            proxy_->disarm();
        }
        if (o_.scheduler == "yunikorn") {
            std::this_thread::sleep_for(seconds(2));  // let the core apply the shim's last updates
            std::string dump;
            observations.yunikorn = take_yunikorn_snapshot(o_.yunikornUrl, &dump);
            std::filesystem::create_directories(o_.outDir);
            std::ofstream(o_.outDir / "yunikorn-fullstatedump.json") << dump;
        }
        observations.liveNodes = node_names(*client_);
        for (const auto& f : r_.faults) {
            if (f.fired == 0) {
                throw std::runtime_error("fault rule '" + f.rule + "' never fired (matched " + std::to_string(f.matched) +
                                         " requests): the run did not test what the scenario asks");
            }
        }
    }

    const RunOptions& o_;
    const faults::Scenario& sc_;
    const std::string& text_;
    const ProgressFn& progress_;
    Report& r_;
    faults::Workload workload_spec_;
    std::unique_ptr<KubeClient> client_;
    std::unique_ptr<ProxyAdmin> proxy_;
    std::unique_ptr<PodWatcher> watcher_;
    std::unique_ptr<AuditCollector> audit_;
    bool armed_ = false;
};

}  // namespace

Verdict check_invariants(const faults::Checks& checks, const std::optional<std::vector<std::string>>& expect,
                         const Observations& obs, Report& report) {
    std::vector<std::string> names = checks.invariants_to_check();
    report.checks = run_checks(names, expect ? *expect : checks.expect, obs);
    if (names.empty()) {
        report.notes.push_back("no invariants checked: the scenario lists `invariants: []`, so the verdict says only "
                               "that the run completed without error");
    }
    return decide_verdict(report.checks);
}

Report run_scenario(const RunOptions& o, const faults::Scenario& sc, const std::string& text, const ProgressFn& progress) {
    Report r;
    r.scenario = sc.metadata.name.empty() ? sc.source : sc.metadata.name;
    r.scenarioFile = sc.source;
    r.seed = sc.seed;
    r.scheduler = o.scheduler;
    r.started = WallClock::now();
    Runner runner(o, sc, text, progress, r);
    bool ok = true;
    try {
        runner.execute();
    } catch (const std::exception& e) {
        ok = false;
        r.error = e.what();
    }
    Observations& obs = runner.observations;
    obs.scheduler = o.scheduler;
    obs.harnessUserAgent = kHarnessUserAgent;
    runner.finish_observations(obs);
    try {
        Verdict checked = check_invariants(sc.checks, o.expect, obs, r);
        r.verdict = ok && r.error.empty() ? checked : Verdict::error;
    } catch (const std::exception& e) {
        r.error = e.what();
        r.verdict = Verdict::error;
    }
    r.stats = compute_stats(obs);
    if (obs.audit) r.faultWindows = fault_windows(*obs.audit);
    r.timeline = build_timeline(obs.pods, r.started);
    r.finished = WallClock::now();
    return r;
}

}  // namespace faultline::harness
