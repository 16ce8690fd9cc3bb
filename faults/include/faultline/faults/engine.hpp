#pragma once
// The decision engine: for each request, which rule (if any) fires and what the proxy must do.
// Thread-safe. Deterministic: decisions depend only on the scenario (and its seed), the order of
// requests and the `now` values passed in. Every request first advances every rule's afterMatches
// trigger; then rules are tried in file order, the first that fires wins and later rules do not
// see that request.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/action.hpp"
#include "faultline/faults/clock.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/scenario.hpp"
#include "faultline/faults/status.hpp"

namespace faultline::faults {

struct Plan {
  std::optional<Action> action;  // nullopt: forward untouched
  std::string rule;              // the rule that fired ("" for none, "admin" for POST /v1/outage)
  int rule_index = -1;
  std::optional<HttpResponse> response;  // respond: the rendered answer to write
  Duration delay{0};                     // delay: how long to hold the request (jitter resolved)
  // stale-read: the resourceVersion the answer is read at and the target that asks for it; both ""
  // while the rule has none recorded (the request then goes as it is).
  std::string stale_resource_version;
  std::string stale_target;
  // The stale-read rules whose window opened with this request: the proxy learns the current
  // resourceVersion before the request goes on and records it (Engine::record_resource_version).
  // Set whether or not a rule fires.
  std::vector<int> record_resource_version;

  bool fires() const { return action.has_value(); }
};

// Where a rule is in its schedule at a given time.
enum class RulePhase {
  disarmed,   // the engine is not armed
  scheduled,  // its window opens later (when.at)
  waiting,    // its afterMatches trigger has not been reached
  open,       // its window is open and it may fire
  closed,     // when.repeat: between two windows (the next one opens at the next period)
  ended,      // it can fire no more: its window closed (when.for) or its limit is used up
};
std::string_view rule_phase_name(RulePhase phase);

struct RuleCounters {
  std::string name;
  std::uint64_t matched = 0;              // requests that matched while the rule was active
  std::uint64_t fired = 0;                // of those, how many got the action
  bool window_opened = false;             // armed (rules without a trigger) or afterMatches reached
  RulePhase phase = RulePhase::disarmed;  // filled by counters(now) only
};

// Whole-proxy outage in progress (from an outage action or the admin API).
struct OutageState {
  actions::Outage::Mode mode = actions::Outage::Mode::reset;
  Clock::time_point until;
  std::string rule;
};

// Told the name of every rule that matched a request (see RuleCounters::matched), whether or not
// its every/limit/probability then let it fire.
using MatchListener = std::function<void(std::string_view rule)>;

class Engine {
 public:
  explicit Engine(std::shared_ptr<const Scenario> scenario = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Swap in a new scenario snapshot: counters and schedule state start over, engine disarmed.
  void load(std::shared_ptr<const Scenario> scenario);
  std::shared_ptr<const Scenario> scenario() const;

  // Time zero of the schedule: `at`, `for` and trigger counting start here. Re-arming restarts.
  void arm(Clock::time_point now);
  void disarm();  // no faults until armed again; ends any outage
  bool armed() const;

  Plan decide(const Request& request, Clock::time_point now);

  // Outage in force at `now` (the proxy asks at accept time, to refuse or reset connections).
  std::optional<OutageState> outage(Clock::time_point now) const;
  // POST /v1/outage: take everything down for `duration` from `now`, armed or not.
  void start_outage(actions::Outage::Mode mode, Duration duration, Clock::time_point now);

  std::vector<RuleCounters> counters() const;

  // stale-read: the resourceVersion current when rule `rule_index`'s window opened, as the proxy
  // learned it upstream for a request whose plan asked for it. Kept for that window (a new period
  // of when.repeat, arm() and load() forget it); a second record for the same window is ignored.
  void record_resource_version(int rule_index, std::string resource_version);
  // "" when none is recorded (or the rule is not a stale-read).
  std::string recorded_resource_version(int rule_index) const;
  // The same, with each rule's phase at `now`.
  std::vector<RuleCounters> counters(Clock::time_point now) const;

  // Called from decide() each time a rule's `matched` counter goes up, with the engine's lock held
  // (so counters and listener agree): it must be quick and must not call back into the engine.
  // Unlike counters(), what a listener accumulates survives load() and arm().
  void set_match_listener(MatchListener listener);

 private:
  struct State;
  Plan make_plan(int index, const Request& request, Clock::time_point now);  // mutex_ held
  mutable std::mutex mutex_;
  std::shared_ptr<const Scenario> scenario_;
  std::unique_ptr<State> state_;
  MatchListener match_listener_;
};

// The RNG seed of the rule named `name` under scenario seed `seed`: FNV-1a of the (unique) name
// mixed with the seed by splitmix64. Stable across runs and platforms, and unchanged when other
// rules are added or reordered.
std::uint64_t rule_seed(std::uint64_t seed, std::string_view name);

}  // namespace faultline::faults
