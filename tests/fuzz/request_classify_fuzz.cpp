// Request classification (faults::make_request / classify) and the engine's matching on it.
// Input: "METHOD TARGET" on the first line, then "Name: value" header lines, e.g.
//   GET /api/v1/namespaces/default/pods?watch=1
//   User-Agent: kube-scheduler/v1.31
// Every input must classify without crashing, keep the documented shape of a RequestInfo, and go
// through Engine::decide against a scenario whose rules use every kind of match.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/engine.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/request_info.hpp"
#include "faultline/faults/scenario.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;

// Rules that look at every part of a request: verbs, resources with groups and subresources,
// namespaces, names, user agents, paths and headers (globs everywhere), plus a counting trigger.
constexpr std::string_view kScenario = R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: fuzz-classify}
seed: 7
faults:
  - name: binds
    match: {verbs: [create], resources: [pods/binding], namespaces: ["team-*", faultline], names: ["burst-*-?"]}
    action: {type: respond, code: 500, message: bind failed}
  - name: agents
    match: {userAgents: ["*yunikorn*"], headers: {X-Faultline: "o?"}}
    action: {type: respond, code: 429, reason: TooManyRequests, retryAfter: 2s}
  - name: groups
    match: {verbs: [patch, update, connect], resources: [deployments.apps, "*/status", "pods/*"]}
    action: {type: reset}
  - name: watches
    match: {verbs: [watch], resources: [pods, "nodes.*"]}
    action: {type: watch-gone, afterEvents: 1}
  - name: paths
    match: {paths: ["/healthz*", "/apis/*/v1*", "*%*"]}
    action: {type: delay, latency: 1ms, jitter: 1ms}
  - name: lists
    match: {verbs: [list, deletecollection, proxy]}
    when: {every: 2}
    action: {type: respond, code: 404}
  - name: after-three
    match: {verbs: ["*"]}
    when: {afterMatches: 3, of: {resources: ["*"]}}
    action: {type: close}
)";

std::shared_ptr<const faults::Scenario> scenario() {
  static const auto loaded = faults::load_scenario_text(kScenario, "fuzz-classify.yaml");
  return loaded;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool same_info(const faults::RequestInfo& a, const faults::RequestInfo& b) {
  return a.is_resource_request == b.is_resource_request && a.path == b.path && a.verb == b.verb &&
         a.api_prefix == b.api_prefix && a.api_group == b.api_group && a.api_version == b.api_version &&
         a.namespace_ == b.namespace_ && a.resource == b.resource && a.subresource == b.subresource &&
         a.name == b.name && a.label_selector == b.label_selector && a.field_selector == b.field_selector &&
         a.malformed == b.malformed;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  scenario();  // a scenario the loader rejects is a broken target: fail at start, not per input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto first_nl = input.find('\n');
  const std::string_view request_line = input.substr(0, first_nl);
  const auto space = request_line.find(' ');
  const std::string_view method = request_line.substr(0, space);
  const std::string_view target = space == std::string_view::npos ? std::string_view() : request_line.substr(space + 1);

  std::vector<faults::Header> headers;
  std::string_view rest = first_nl == std::string_view::npos ? std::string_view() : input.substr(first_nl + 1);
  while (!rest.empty() && headers.size() < 64) {
    const auto nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.push_back({std::string(line.substr(0, colon)), std::string(value)});
  }

  const faults::RequestInfo info = faults::classify(method, target);
  const faults::Request request = faults::make_request(method, target, headers);
  check(same_info(request.info, info), "make_request classified differently from classify");
  check(request.method == method && request.target == target, "make_request changed method or target");
  const std::string* agent = request.header("user-agent");
  check(request.user_agent == (agent ? *agent : std::string()), "user_agent is not the User-Agent header");

  if (info.is_resource_request && !info.malformed) {
    static const std::set<std::string, std::less<>> kVerbs = {
        "", "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy"};
    check(kVerbs.contains(info.verb), "resource request with a verb kube-apiserver does not use: " + info.verb);
    check(info.api_prefix == "api" || info.api_prefix == "apis", "resource request without api prefix");
    check(info.api_prefix == "apis" || info.api_group.empty(), "core-group request with an API group");
  }
  if (!info.is_resource_request) {
    check(info.verb == lower(method), "non-resource verb is not the lower-case method");
  }
  if (!info.label_selector.empty() || !info.field_selector.empty()) {
    check(info.verb == "list" || info.verb == "watch" || info.verb == "deletecollection",
          "selectors recorded for verb " + info.verb);
  }
  (void)info.is_connect();
  (void)info.resource_path();

  // Four decisions: enough for `every: 2` and `afterMatches: 3` to open and fire.
  faults::Engine engine(scenario());
  const faults::Clock::time_point t0{};
  engine.arm(t0);
  for (int i = 0; i < 4; ++i) {
    const faults::Plan plan = engine.decide(request, t0 + std::chrono::seconds(i));
    check(!plan.fires() || !plan.rule.empty(), "a plan fires without naming its rule");
    if (plan.response) check(plan.response->code >= 100 && plan.response->code <= 599, "respond status out of range");
  }
  return 0;
}
