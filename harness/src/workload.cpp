#include "faultline/harness/workload.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>
#include <deque>

#include "faultline/faults/yaml_json.hpp"
#include "faultline/harness/async.hpp"
#include "faultline/harness/poll.hpp"
#include "faultline/harness/token_bucket.hpp"
#include "faultline/net/rfc3339.hpp"
#include "kwok_node_manifest.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

void replace_all(std::string& text, std::string_view placeholder, std::string_view value) {
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size()))
    text.replace(at, placeholder.size(), value);
}

json::object string_map(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

double elapsed(SteadyTime from, SteadyTime to) { return std::chrono::duration<double>(to - from).count(); }

std::string rate_text(double r) { return fmt::format("{:.0f}/s", r); }

using IndexTask = std::function<asio::awaitable<void>(std::uint64_t)>;

// One of parallel_for's coroutines: takes the next index until none is left.
asio::awaitable<void> take_indices(std::uint64_t& next, std::uint64_t count, const IndexTask& fn) {
  for (std::uint64_t i = next++; i < count; i = next++) co_await fn(i);
}

// Runs fn(index) for index in [0, count) on `workers` coroutines; each keeps its own pooled
// connection busy, so `workers` is the number of requests in flight.
asio::awaitable<void> parallel_for(std::uint64_t count, unsigned workers, const IndexTask& fn) {
  std::uint64_t next = 0;
  std::vector<asio::awaitable<void>> tasks;
  for (unsigned w = 0; w < std::max(1u, workers); ++w) tasks.push_back(take_indices(next, count, fn));
  co_await all_of(std::move(tasks));
}

}  // namespace

std::string node_name(std::uint64_t index) { return "kwok-node-" + std::to_string(index); }

std::string pod_name(const std::string& phase, std::uint64_t index) { return fmt::format("{}-{:05}", phase, index); }

json::value make_node(const std::string& name, const std::map<std::string, std::string>& capacity) {
  std::string capacity_yaml;  // a flow mapping of JSON strings, which YAML reads as they are
  for (const auto& [resource, amount] : capacity)
    capacity_yaml += (capacity_yaml.empty() ? "" : ", ") + json::serialize(json::string(resource)) + ": " +
                     json::serialize(json::string(amount));
  capacity_yaml = "{" + capacity_yaml + "}";
  std::string manifest(kwok_node_manifest());
  replace_all(manifest, "${NAME}", name);
  replace_all(manifest, "${CAPACITY}", capacity_yaml);
  return json::parse(faults::yaml_to_json(manifest, "scripts/stack.d/kwok-node.yaml"));
}

bool node_ready(const json::value& node) {
  const auto* status = node.as_object().if_contains("status");
  const auto* conditions =
      status != nullptr && status->is_object() ? status->as_object().if_contains("conditions") : nullptr;
  if (conditions == nullptr || !conditions->is_array()) return false;
  return std::any_of(conditions->get_array().begin(), conditions->get_array().end(), [](const json::value& c) {
    return c.at("type").as_string() == "Ready" && c.at("status").as_string() == "True";
  });
}

asio::awaitable<std::set<std::string>> ready_kwok_nodes(KubeClient& client) {
  std::set<std::string> ready;
  for (const auto& node : (co_await client.list("/api/v1/nodes", "type=kwok")).items)
    if (node_ready(node)) ready.insert(std::string(node.at("metadata").at("name").as_string()));
  co_return ready;
}

std::string pod_scheduler_name(const schema::PodTemplate& t, const std::string& scheduler_under_test) {
  const std::string& n = t.scheduler_name;
  if (n.empty() || n == "yunikorn" || n == "default-scheduler") {
    return scheduler_under_test == "kube-scheduler" ? "default-scheduler" : scheduler_under_test;
  }
  return n;
}

json::value make_pod(const std::string& ns, const std::string& name, const schema::Phase& phase,
                     const std::string& scheduler_name) {
  const auto& t = phase.pod_template;
  json::object labels = string_map(t.labels);
  labels[kWorkloadLabel] = "true";
  labels[kPhaseLabel] = phase.name;
  json::object selector = string_map(t.node_selector);
  selector["type"] = "kwok";
  json::object resources{{"requests", string_map(t.requests)}};
  if (!t.limits.empty()) resources["limits"] = string_map(t.limits);
  json::object spec{
      {"schedulerName", scheduler_name},
      {"nodeSelector", std::move(selector)},
      {"tolerations",
       json::array{json::object{{"key", "kwok.x-k8s.io/node"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
      {"terminationGracePeriodSeconds", 0},
      {"containers",
       json::array{json::object{
           {"name", "work"}, {"image", "registry.k8s.io/pause:3.10"}, {"resources", std::move(resources)}}}},
  };
  if (!t.priority_class_name.empty()) spec["priorityClassName"] = t.priority_class_name;
  json::object meta{{"name", name}, {"namespace", ns}, {"labels", std::move(labels)}};
  if (!t.annotations.empty()) meta["annotations"] = string_map(t.annotations);
  return json::object{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)}, {"spec", std::move(spec)}};
}

namespace {

std::string template_namespace(const schema::ObjectStep& step) {
  const json::value object = json::parse(step.template_json);
  const auto* meta = object.as_object().if_contains("metadata");
  const auto* ns = meta != nullptr && meta->is_object() ? meta->as_object().if_contains("namespace") : nullptr;
  return ns != nullptr && ns->is_string() ? std::string(ns->get_string()) : std::string();
}

}  // namespace

json::value make_object(const schema::ObjectStep& step, const std::string& phase, const std::string& ns,
                        std::uint64_t index) {
  json::value object = json::parse(step.template_json);
  json::value& metadata = object.as_object()["metadata"];
  if (!metadata.is_object()) metadata.emplace_object();
  json::object& meta = metadata.as_object();
  if (auto* name = meta.if_contains("name"); name != nullptr && name->is_string()) {
    std::string text(name->get_string());
    replace_all(text, "{i}", std::to_string(index));
    *name = text;
  }
  if (!meta.contains("namespace")) meta["namespace"] = ns;
  json::value& labels = meta["labels"];
  if (!labels.is_object()) labels.emplace_object();
  labels.as_object()[kWorkloadLabel] = "true";
  labels.as_object()[kPhaseLabel] = phase;
  return object;
}

std::string object_collection(const schema::ObjectStep& step, const std::string& workload_namespace) {
  const std::string ns = template_namespace(step);
  const std::string root = step.api_version.find('/') == std::string::npos ? "/api/" : "/apis/";
  return root + step.api_version + "/namespaces/" + (ns.empty() ? workload_namespace : ns) + "/" + step.resource;
}

namespace {

// Whether the object at `path` carries this step's phase label and was created since `started`
// (less the second of a creationTimestamp's resolution): an earlier attempt of this step got
// through before its answer was lost.
asio::awaitable<bool> created_by_step(KubeClient& client, const std::string& path, const std::string& phase,
                                      WallTime started) {
  std::optional<json::value> object;
  try {
    object = co_await client.get(path);
  } catch (const std::exception&) {
    co_return false;
  }
  if (!object || !object->is_object()) co_return false;
  const auto* meta = object->as_object().if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) co_return false;
  const auto* labels = meta->as_object().if_contains("labels");
  const auto* label = labels != nullptr && labels->is_object() ? labels->as_object().if_contains(kPhaseLabel) : nullptr;
  const auto* created = meta->as_object().if_contains("creationTimestamp");
  if (label == nullptr || !label->is_string() || label->get_string() != phase || created == nullptr ||
      !created->is_string())
    co_return false;
  const auto at = net::parse_rfc3339(created->get_string());
  co_return at&&* at >= started - std::chrono::seconds(1);
}

}  // namespace

Workload::Workload(KubeClient& client, const schema::Workload& spec, std::string scheduler_under_test,
                   ProgressFn progress, const faults::Clock& clock)
    : client_(client),
      spec_(spec),
      scheduler_(std::move(scheduler_under_test)),
      progress_(std::move(progress)),
      clock_(clock) {}

asio::awaitable<void> Workload::ensure_namespace() {
  if (co_await client_.get("/api/v1/namespaces/" + spec_.namespace_)) co_return;
  json::value ns =
      json::object{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", spec_.namespace_}}}};
  try {
    co_await client_.create("/api/v1/namespaces", std::move(ns));
  } catch (const ApiError& e) {
    if (e.status != 409) throw;
  }
}

asio::awaitable<std::uint64_t> Workload::delete_leftover_pods(std::chrono::seconds timeout) {
  const std::string pods = "/api/v1/namespaces/" + spec_.namespace_ + "/pods";
  const std::string selector = kWorkloadLabel;
  auto left = (co_await client_.list(pods, selector)).items.size();
  if (left == 0) co_return 0;
  progress_("deleting " + std::to_string(left) + " pods left by an earlier run", false);
  const std::string target = with_query(pods, {{"labelSelector", selector}, {"gracePeriodSeconds", "0"}});
  HttpResult res = co_await client_.request("DELETE", target);
  if (res.status != 200) throw ApiError(res.status, "", "delete leftover pods: HTTP " + std::to_string(res.status));
  co_await poll_until(
      clock_, {timeout, std::chrono::milliseconds(250)},
      [&]() -> asio::awaitable<bool> { co_return (co_await client_.list(pods, selector)).items.empty(); },
      [&] { return "pods left by an earlier run are still there after " + std::to_string(timeout.count()) + "s"; });
  progress_("deleted " + std::to_string(left) + " leftover pods", true);
  co_return left;
}

asio::awaitable<NodesResult> Workload::create_nodes(unsigned concurrency) {
  NodesResult out;
  std::string first_error;
  auto start = clock_.now();
  const IndexTask create = [&](std::uint64_t i) -> asio::awaitable<void> {
    try {
      co_await client_.create("/api/v1/nodes", make_node(node_name(i), spec_.nodes.capacity));
      ++out.created;
    } catch (const ApiError& e) {
      if (e.status == 409) {
        ++out.existing;
      } else if (first_error.empty()) {
        first_error = e.what();
      }
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  };
  co_await parallel_for(spec_.nodes.count, concurrency, create);
  if (!first_error.empty()) throw std::runtime_error("creating KWOK nodes: " + first_error);
  out.seconds = elapsed(start, clock_.now());
  progress_("nodes: " + std::to_string(out.created) + " created, " + std::to_string(out.existing) + " already there (" +
                std::to_string(static_cast<int>(out.seconds * 1000)) + " ms)",
            true);
  co_return out;
}

asio::awaitable<void> Workload::wait_nodes_ready(std::chrono::seconds timeout) {
  const std::string count = std::to_string(spec_.nodes.count);
  std::size_t ready = 0;
  const auto all_ready = [&]() -> asio::awaitable<bool> {
    ready = (co_await ready_kwok_nodes(client_)).size();
    if (ready >= spec_.nodes.count) {
      progress_("nodes: " + std::to_string(ready) + " Ready", true);
      co_return true;
    }
    progress_("nodes: " + std::to_string(ready) + "/" + count + " Ready", false);
    co_return false;
  };
  co_await poll_until(clock_, {timeout, std::chrono::milliseconds(200)}, all_ready, [&] {
    return "only " + std::to_string(ready) + " of " + count + " KWOK nodes became Ready within " +
           std::to_string(timeout.count()) + "s (is the kwok controller running with the node stages?)";
  });
}

asio::awaitable<PhaseResult> Workload::run_phase(const schema::Phase& phase,
                                                 std::function<asio::awaitable<void>()> before_first,
                                                 std::function<std::string()> status) {
  PhaseResult r;
  r.name = phase.name;
  const std::uint64_t count = phase.objects ? phase.objects->count : phase.pods;
  r.requested = count;
  const std::string collection = phase.objects ? object_collection(*phase.objects, spec_.namespace_)
                                               : "/api/v1/namespaces/" + spec_.namespace_ + "/pods";
  const std::string scheduler = pod_scheduler_name(phase.pod_template, scheduler_);
  std::optional<TokenBucket> bucket;
  // Burst of one interval per connection: the connections start together without overshooting.
  if (phase.rate) {
    bucket.emplace(*phase.rate, static_cast<double>(std::max<std::uint64_t>(1, phase.concurrency)), clock_);
  }
  std::uint64_t created = 0;
  std::uint64_t failed = 0;
  bool done = false;
  // Churn: the pods to delete, oldest first (creations are paced, so creation order is expiry order).
  struct Expiring {
    std::string name;
    std::string uid;
    SteadyTime expires;
  };
  std::deque<Expiring> alive;
  auto start = clock_.now();
  SteadyTime last_end = start;
  auto report = [&](bool final) {
    double secs = elapsed(start, final ? last_end : clock_.now());
    double rate = secs > 0 ? static_cast<double>(created) / secs : 0;
    progress_("phase " + phase.name + ": created " + std::to_string(created) + "/" + std::to_string(count) + " (" +
                  rate_text(rate) + ")" + (phase.churn ? ", deleted " + std::to_string(r.deleted) : std::string()) +
                  (failed ? ", " + std::to_string(failed) + " failed" : std::string()) + " | " + status(),
              final);
  };
  const IndexTask create = [&](std::uint64_t i) -> asio::awaitable<void> {
    if (bucket) co_await sleep_for(bucket->reserve());
    std::string name = pod_name(phase.name, i + 1);
    std::optional<std::string> conflict;  // an objects step's 409
    try {
      json::value body = phase.objects ? make_object(*phase.objects, phase.name, spec_.namespace_, i + 1)
                                       : make_pod(spec_.namespace_, name, phase, scheduler);
      if (phase.objects) {
        const auto& meta = body.at("metadata").as_object();
        name = meta.contains("name") ? std::string(meta.at("name").as_string())
                                     : std::string(meta.at("generateName").as_string()) + "*";
      }
      const json::value pod = co_await client_.create(collection, std::move(body));
      ++created;
      if (phase.churn) {
        const std::string uid(pod.at("metadata").at("uid").as_string());
        alive.push_back({name, uid, clock_.now() + phase.churn->lifetime});
        r.most_alive = std::max<std::uint64_t>(r.most_alive, alive.size());
      }
    } catch (const ApiError& e) {
      // 409 for a pod of this run: an earlier attempt of ours got through before its answer was lost.
      // (A churn does not delete such a pod: its UID is not known; it stays to the end.) An object
      // already there is ours only if this step created it (looked at below: no co_await in a handler).
      if (e.status == 409 && phase.objects) {
        conflict = e.what();
      } else if (e.status == 409) {
        ++created;
      } else {
        ++failed;
        if (r.errors.size() < 5) r.errors.push_back(name + ": " + e.what());
      }
    } catch (const std::exception& e) {
      ++failed;
      if (r.errors.size() < 5) r.errors.push_back(name + ": " + e.what());
    }
    if (conflict) {
      const std::string path = collection + "/" + name;  // named: GCC 12 and co_await temporaries
      if (co_await created_by_step(client_, path, phase.name, r.started)) {
        ++created;
      } else {
        ++failed;
        if (r.errors.size() < 5)
          r.errors.push_back(name + ": " + *conflict +
                             " (not created by this step: left by an earlier run? delete it, or use "
                             "metadata.generateName)");
      }
    }
    last_end = std::max(last_end, clock_.now());
  };
  // Churn: deletes each pod once its lifetime is over, until the creations end.
  auto expire = [&]() -> asio::awaitable<void> {
    while (!done) {
      while (!alive.empty() && alive.front().expires <= clock_.now()) {
        Expiring pod = std::move(alive.front());
        alive.pop_front();
        if (on_delete_) on_delete_(pod.uid);
        const std::string path = collection + "/" + pod.name;  // named: GCC 12 and co_await temporaries
        try {
          co_await client_.remove(path);
          ++r.deleted;
        } catch (const std::exception& e) {
          ++failed;
          if (r.errors.size() < 5) r.errors.push_back("delete " + pod.name + ": " + e.what());
        }
      }
      co_await sleep_for(std::chrono::milliseconds(100));
    }
  };
  asio::steady_timer tick(client_.executor());
  auto ticker = [&]() -> asio::awaitable<void> {
    while (!done) {
      tick.expires_after(std::chrono::milliseconds(500));
      co_await tick.async_wait(use_tuple);
      if (!done) report(false);
    }
  };
  auto creations = [&]() -> asio::awaitable<void> {
    std::exception_ptr failure;  // of before_first: `create` catches every failure of its own
    try {
      // The first creation starts right after this: the token bucket's first slot is now.
      if (count > 0) co_await before_first();
      r.started = WallClock::now();
      const auto workers = static_cast<unsigned>(std::max<std::uint64_t>(1, phase.concurrency));
      co_await parallel_for(count, workers, create);
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;  // ends the ticker
    tick.cancel();
    if (failure) std::rethrow_exception(failure);
  };
  std::vector<asio::awaitable<void>> tasks;
  tasks.push_back(ticker());
  tasks.push_back(creations());
  if (phase.churn) tasks.push_back(expire());
  co_await all_of(std::move(tasks));
  r.left_alive = alive.size();
  r.finished = WallClock::now();
  r.created = created;
  r.failed = failed;
  r.seconds = elapsed(start, last_end);
  report(true);
  co_return r;
}

}  // namespace faultline::harness
