#include "faultline/faults/engine.hpp"

#include <algorithm>
#include <random>

namespace faultline::faults {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// A double in [0, 1) from the top 53 bits: the same on every platform, unlike
// std::uniform_real_distribution.
double unit_interval(std::uint64_t random) { return static_cast<double>(random >> 11) * 0x1.0p-53; }

struct RuleState {
  std::uint64_t matched = 0;
  std::uint64_t fired = 0;
  std::uint64_t window_matched = 0;  // matched / fired in the current window (when.every, when.limit)
  std::uint64_t window_fired = 0;
  std::uint64_t trigger_seen = 0;  // requests matching `of` so far in this period
  std::optional<Clock::time_point> window_start;
  std::uint64_t period = 0;  // when.repeat: the current period, 0 from arm() on
  Clock::time_point period_start;
  std::mt19937_64 rng;
  // stale-read without a fixed resourceVersion: asked for at the window's first request, then recorded.
  bool rv_asked = false;
  std::string recorded_rv;
};

// A stale-read rule that reads at the resourceVersion recorded when its window opened.
bool records_resource_version(const Rule& rule) {
  const auto* stale = std::get_if<actions::StaleRead>(&rule.action);
  return stale && stale->resource_version.empty();
}

}  // namespace

struct Engine::State {
  bool armed = false;
  Clock::time_point armed_at;
  std::vector<RuleState> rules;
  std::optional<OutageState> outage;
  int outage_rule_index = -1;

  void reset_rules(const Scenario* scenario) {
    rules.clear();
    if (!scenario) return;
    for (const Rule& rule : scenario->faults) {
      RuleState state;
      state.rng.seed(rule_seed(scenario->seed, rule.name));
      rules.push_back(std::move(state));
    }
  }
};

namespace {

// Opens the window of a triggered rule when the afterMatches-th `of` request goes by. Returns true
// when this request was the one that completed the count (it is not itself faulted).
bool count_trigger(const Rule& rule, RuleState& state, const Request& request, Clock::time_point now,
                   Clock::time_point schedule_start) {
  if (!rule.when.trigger || state.window_start || now < schedule_start) return false;
  if (!rule.when.trigger->of.matches(request)) return false;
  if (++state.trigger_seen < rule.when.trigger->after_matches) return false;
  state.window_start = now;
  return true;
}

// when.repeat: moves the rule into the period `now` falls in, where its schedule starts over
// (trigger count, window, per-window counters). Periods are computed from `now`, so a period in
// which no request came by is simply skipped.
void enter_period(const Rule& rule, RuleState& state, Clock::time_point now) {
  if (!rule.when.repeat || now < state.period_start) return;
  const Duration repeat = *rule.when.repeat;
  const Clock::time_point first = state.period_start - static_cast<std::int64_t>(state.period) * repeat;
  const auto period = static_cast<std::uint64_t>((now - first) / repeat);
  if (period == state.period) return;
  state.period = period;
  state.period_start = first + static_cast<std::int64_t>(period) * repeat;
  state.trigger_seen = 0;
  state.window_matched = 0;
  state.window_fired = 0;
  state.window_start.reset();
  state.rv_asked = false;
  state.recorded_rv.clear();
  if (!rule.when.trigger) state.window_start = state.period_start;
}

std::optional<Clock::time_point> window_end(const Rule& rule, const RuleState& state) {
  if (!rule.when.for_ || !state.window_start) return std::nullopt;
  Clock::time_point end = *state.window_start + *rule.when.for_;
  if (rule.when.repeat) end = std::min(end, state.period_start + *rule.when.repeat);
  return end;
}

bool in_window(const Rule& rule, const RuleState& state, Clock::time_point now) {
  if (!state.window_start || now < *state.window_start) return false;
  auto end = window_end(rule, state);
  return !end || now < *end;
}

// every / limit / probability, in that order; the RNG is drawn only when probability is set, so
// a rule's random sequence depends only on its own matches.
bool should_fire(const When& when, RuleState& state) {
  if (when.every && state.window_matched % *when.every != 0) return false;
  if (when.limit && state.window_fired >= *when.limit) return false;
  if (when.probability && unit_interval(state.rng()) >= *when.probability) return false;
  return true;
}

}  // namespace

Engine::Engine(std::shared_ptr<const Scenario> scenario) : state_(std::make_unique<State>()) {
  load(std::move(scenario));
}

Engine::~Engine() = default;

void Engine::load(std::shared_ptr<const Scenario> scenario) {
  std::lock_guard lock(mutex_);
  scenario_ = std::move(scenario);
  *state_ = State{};
  state_->reset_rules(scenario_.get());
}

std::shared_ptr<const Scenario> Engine::scenario() const {
  std::lock_guard lock(mutex_);
  return scenario_;
}

void Engine::arm(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  state_->armed = true;
  state_->armed_at = now;
  state_->outage.reset();
  state_->reset_rules(scenario_.get());
  if (!scenario_) return;
  for (std::size_t i = 0; i < scenario_->faults.size(); ++i) {
    RuleState& rule = state_->rules[i];
    rule.period_start = now + scenario_->faults[i].when.at;
    if (!scenario_->faults[i].when.trigger) rule.window_start = rule.period_start;
  }
}

void Engine::disarm() {
  std::lock_guard lock(mutex_);
  state_->armed = false;
  state_->outage.reset();
}

bool Engine::armed() const {
  std::lock_guard lock(mutex_);
  return state_->armed;
}

std::optional<OutageState> Engine::outage(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  if (state_->outage && now < state_->outage->until) return state_->outage;
  return std::nullopt;
}

void Engine::start_outage(actions::Outage::Mode mode, Duration duration, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  state_->outage = OutageState{mode, now + duration, "admin"};
  state_->outage_rule_index = -1;
}

Plan Engine::decide(const Request& request, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (state_->outage && now < state_->outage->until) {
    Plan plan;
    plan.action =
        actions::Outage{state_->outage->mode, std::chrono::duration_cast<Duration>(state_->outage->until - now)};
    plan.rule = state_->outage->rule;
    plan.rule_index = state_->outage_rule_index;
    return plan;
  }
  if (!state_->armed || !scenario_) return {};
  // Triggers observe every request, even ones an earlier rule will fault; the request that
  // completes a trigger is itself left alone by that rule.
  const auto& rules = scenario_->faults;
  std::vector<bool> just_triggered(rules.size());
  for (std::size_t i = 0; i < rules.size(); ++i) enter_period(rules[i], state_->rules[i], now);
  for (std::size_t i = 0; i < rules.size(); ++i)
    just_triggered[i] = count_trigger(rules[i], state_->rules[i], request, now, state_->armed_at + rules[i].when.at);
  // A stale-read rule's window opened: this request asks for the current resourceVersion and is
  // itself left alone by that rule (as the request that completes a trigger).
  std::vector<int> record;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    RuleState& state = state_->rules[i];
    if (!records_resource_version(rules[i]) || state.rv_asked || !in_window(rules[i], state, now)) continue;
    state.rv_asked = true;
    just_triggered[i] = true;
    record.push_back(static_cast<int>(i));
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Rule& rule = rules[i];
    RuleState& state = state_->rules[i];
    if (just_triggered[i] || !in_window(rule, state, now)) continue;
    if (is_watch_action(rule.action) && !request.info.is_watch()) continue;
    if (std::holds_alternative<actions::StaleRead>(rule.action) && !actions::StaleRead::applies_to(request)) continue;
    if (!rule.match.matches(request)) continue;
    ++state.matched;
    ++state.window_matched;
    if (match_listener_) match_listener_(rule.name);
    if (!should_fire(rule.when, state)) continue;
    ++state.fired;
    ++state.window_fired;
    Plan plan = make_plan(static_cast<int>(i), request, now);
    plan.record_resource_version = std::move(record);
    return plan;
  }
  Plan plan;
  plan.record_resource_version = std::move(record);
  return plan;
}

Plan Engine::make_plan(int index, const Request& request, Clock::time_point now) {
  const Rule& rule = scenario_->faults[static_cast<std::size_t>(index)];
  RuleState& state = state_->rules[static_cast<std::size_t>(index)];
  Plan plan;
  plan.action = rule.action;
  plan.rule = rule.name;
  plan.rule_index = index;
  if (const auto* respond = std::get_if<actions::Respond>(&rule.action)) plan.response = respond->render(request.info);
  if (const auto* hold = std::get_if<actions::Hold>(&rule.action); hold && hold->then == actions::Hold::Then::respond)
    plan.response = hold->respond.render(request.info);
  if (const auto* delay = std::get_if<actions::Delay>(&rule.action)) plan.delay = delay->resolve(state.rng());
  if (const auto* stale = std::get_if<actions::StaleRead>(&rule.action)) {
    plan.stale_resource_version = stale->resource_version.empty() ? state.recorded_rv : stale->resource_version;
    if (!plan.stale_resource_version.empty())
      plan.stale_target = actions::rewrite_to_exact(request.target, plan.stale_resource_version);
  }
  if (const auto* outage = std::get_if<actions::Outage>(&rule.action)) {
    auto until = outage->duration ? now + *outage->duration : window_end(rule, state).value_or(now);
    state_->outage = OutageState{outage->mode, until, rule.name};
    state_->outage_rule_index = index;
    plan.action = actions::Outage{outage->mode, std::chrono::duration_cast<Duration>(until - now)};
  }
  return plan;
}

namespace {

// An outage a rule started counts as part of its window: the rule has not ended while it lasts.
RulePhase phase_of(const Rule& rule, const RuleState& state, bool armed, Clock::time_point now) {
  if (!armed) return RulePhase::disarmed;
  const bool exhausted = rule.when.limit && state.window_fired >= *rule.when.limit;
  if (rule.when.repeat) {
    // enter_period() runs on requests only: the period `now` is in may not have been entered yet.
    if (now < state.period_start) return RulePhase::scheduled;
    const Clock::time_point first = state.period_start - static_cast<std::int64_t>(state.period) * *rule.when.repeat;
    const auto period = static_cast<std::uint64_t>((now - first) / *rule.when.repeat);
    if (period != state.period) {  // a new period: a timed window opens at its start, for `for`
      if (rule.when.trigger) return RulePhase::waiting;
      const Clock::time_point start = first + static_cast<std::int64_t>(period) * *rule.when.repeat;
      return now < start + rule.when.for_.value_or(*rule.when.repeat) ? RulePhase::open : RulePhase::closed;
    }
    if (!state.window_start) return RulePhase::waiting;
    return in_window(rule, state, now) && !exhausted ? RulePhase::open : RulePhase::closed;
  }
  if (!state.window_start) return rule.when.trigger ? RulePhase::waiting : RulePhase::scheduled;
  if (now < *state.window_start) return RulePhase::scheduled;
  if (!in_window(rule, state, now) || exhausted) return RulePhase::ended;
  return RulePhase::open;
}

}  // namespace

std::string_view rule_phase_name(RulePhase phase) {
  switch (phase) {
    case RulePhase::disarmed:
      return "disarmed";
    case RulePhase::scheduled:
      return "scheduled";
    case RulePhase::waiting:
      return "waiting";
    case RulePhase::open:
      return "open";
    case RulePhase::closed:
      return "closed";
    case RulePhase::ended:
      return "ended";
  }
  return "unknown";
}

std::vector<RuleCounters> Engine::counters(Clock::time_point now) const {
  std::vector<RuleCounters> out = counters();
  std::lock_guard lock(mutex_);
  if (!scenario_) return out;
  for (std::size_t i = 0; i < out.size() && i < scenario_->faults.size(); ++i)
    out[i].phase = phase_of(scenario_->faults[i], state_->rules[i], state_->armed, now);
  return out;
}

std::vector<RuleCounters> Engine::counters() const {
  std::lock_guard lock(mutex_);
  std::vector<RuleCounters> out;
  if (!scenario_) return out;
  for (std::size_t i = 0; i < scenario_->faults.size(); ++i) {
    const RuleState& state = state_->rules[i];
    out.push_back({scenario_->faults[i].name, state.matched, state.fired, state.window_start.has_value()});
  }
  return out;
}

void Engine::record_resource_version(int rule_index, std::string resource_version) {
  std::lock_guard lock(mutex_);
  if (!scenario_ || rule_index < 0 || static_cast<std::size_t>(rule_index) >= state_->rules.size()) return;
  RuleState& state = state_->rules[static_cast<std::size_t>(rule_index)];
  if (!records_resource_version(scenario_->faults[static_cast<std::size_t>(rule_index)]) || !state.rv_asked ||
      !state.recorded_rv.empty() || !actions::is_resource_version(resource_version))
    return;
  state.recorded_rv = std::move(resource_version);
}

std::string Engine::recorded_resource_version(int rule_index) const {
  std::lock_guard lock(mutex_);
  if (rule_index < 0 || static_cast<std::size_t>(rule_index) >= state_->rules.size()) return {};
  return state_->rules[static_cast<std::size_t>(rule_index)].recorded_rv;
}

void Engine::set_match_listener(MatchListener listener) {
  std::lock_guard lock(mutex_);
  match_listener_ = std::move(listener);
}

std::uint64_t rule_seed(std::uint64_t seed, std::string_view name) { return splitmix64(seed ^ fnv1a(name)); }

}  // namespace faultline::faults
