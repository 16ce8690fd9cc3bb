// The scenario loaders: YAML text -> a Scenario, or a ScenarioError whose every message starts with
// the source name ("file:line:col: ..."), for the complete document (faultline-harness's loader)
// and for the proxy's part of it (faultline::faults's), which accepts whatever the complete one
// accepts. Any other exception, a crash, a hang or unbounded memory is a finding. An accepted scenario is then armed in
// an engine and asked to decide a few requests across its schedule, so values the loader lets through (durations,
// codes, counts) are used too.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "faultline/faults/engine.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/scenario.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;

constexpr std::string_view kSource = "fuzz.yaml";

void exercise(const std::shared_ptr<const faults::Scenario>& scenario) {
  for (const auto& rule : scenario->faults) check(!rule.name.empty(), "an accepted rule has no name");
  faults::Engine engine(scenario);
  const faults::Clock::time_point t0{};
  engine.arm(t0);
  const faults::Request requests[] = {
      faults::make_request("POST", "/api/v1/namespaces/faultline/pods/burst-1/binding",
                           {{"User-Agent", "yunikorn/v1.9.0"}, {"X-Faultline", "on"}}),
      faults::make_request("GET", "/api/v1/pods?watch=1&resourceVersion=5"),
      faults::make_request("PATCH", "/apis/apps/v1/namespaces/chaos/deployments/web/status"),
      faults::make_request("GET", "/healthz"),
  };
  using namespace std::chrono_literals;
  for (auto offset : {0s, 1s, 90s, 3600s}) {
    for (const auto& request : requests) {
      const faults::Plan plan = engine.decide(request, t0 + offset);
      if (plan.response) check(plan.response->code >= 100 && plan.response->code <= 599, "respond status out of range");
      (void)engine.outage(t0 + offset);
    }
  }
  (void)engine.counters();
}

// The scenario `load` returns, or nullptr after checking the errors it threw.
template <typename Load>
auto load_checked(Load load) -> decltype(load()) {
  try {
    auto scenario = load();
    check(scenario != nullptr, "load_scenario_text returned null");
    return scenario;
  } catch (const faults::ScenarioError& e) {
    check(!e.errors().empty(), "ScenarioError without errors");
    for (const auto& error : e.errors()) {
      check(error.starts_with(std::string(kSource) + ":"), "error does not start with the file name: " + error);
    }
    return nullptr;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto complete = load_checked([&] { return harness::schema::load_scenario_text(text, kSource); });
  auto proxys = load_checked([&] { return faults::load_scenario_text(text, kSource); });
  if (complete) check(proxys != nullptr, "the proxy's loader refuses a scenario the harness's accepts");
  if (proxys) exercise(proxys);
  return 0;
}
