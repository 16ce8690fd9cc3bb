// Each fault action's effects: what the relay will do for a plan carrying it. Suite ActionEffects,
// each test named after the action it is about (<Type>...): unit.ActionCoverage looks for one per action.
#include "faultline/proxy/effects.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "faultline/faults/clock.hpp"
#include "faultline/proxy/watch_stream.hpp"

namespace faultline::proxy {
namespace {

namespace fa = faults::actions;
using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using End = WatchFilter::End;

faults::Plan plan_with(faults::Action action) {
  faults::Plan plan;
  plan.action = std::move(action);
  plan.rule = "r";
  plan.rule_index = 0;
  return plan;
}

std::string event(const std::string& type, const std::string& name) {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"name":")" + name +
         R"(","deletionTimestamp":"2026-01-01T00:00:00Z"}}})" + "\n";
}

// The one effect of `effects`, of type E (fails the test otherwise).
template <class E>
E& only(Effects& effects) {
  EXPECT_EQ(effects.size(), 1u);
  EXPECT_TRUE(!effects.empty() && std::holds_alternative<E>(effects.front()));
  return std::get<E>(effects.at(0));
}

// The watch filter of a watch action's effects (its one effect).
effect::FilterWatch& watch_of(Effects& effects) {
  auto& watch = only<effect::FilterWatch>(effects);
  EXPECT_TRUE(watch.filter);
  return watch;
}

TEST(Effects, NoActionForwardsUntouched) {
  Effects e = effects_of(faults::Plan{});
  EXPECT_THAT(e, IsEmpty());
  EXPECT_TRUE(forwards(e));
}

TEST(ActionEffects, RespondAnswersWithTheRenderedStatus) {
  fa::Respond respond;
  respond.code = 429;
  faults::Plan plan = plan_with(respond);
  plan.response = respond.render(faults::classify("POST", "/api/v1/namespaces/d/pods/p/binding"));
  Effects e = effects_of(plan);
  EXPECT_FALSE(forwards(e));
  auto& answer = only<effect::Answer>(e);
  EXPECT_EQ(answer.response.code, 429);
  EXPECT_THAT(answer.response.body, HasSubstr(R"("kind":"Status")"));
  EXPECT_THROW(effects_of(plan_with(respond)), std::logic_error);  // a plan without its rendering
}

TEST(ActionEffects, HoldGatesTheRequestInItsRulesBatch) {
  fa::Hold hold;
  hold.count = 3;
  hold.duration = 20s;
  Effects e = effects_of(plan_with(hold));
  auto& gate = only<effect::Gate>(e);
  EXPECT_EQ(gate.rule, "r");
  EXPECT_EQ(gate.count, 3u);
  EXPECT_EQ(gate.wait, 20s);
  EXPECT_TRUE(forwards(e));  // then: forward, the default

  // Only a count: held at most the maximum; only a duration: at most the maximum count.
  fa::Hold by_count;
  by_count.count = 2;
  Effects c = effects_of(plan_with(by_count));
  EXPECT_EQ(only<effect::Gate>(c).wait, 10min);
  fa::Hold by_time;
  by_time.duration = 1s;
  Effects t = effects_of(plan_with(by_time));
  EXPECT_EQ(only<effect::Gate>(t).count, fa::Hold::kMaxCount);

  // Failed in a named way: never forwarded.
  fa::Hold reset = hold;
  reset.then = fa::Hold::Then::reset;
  Effects r = effects_of(plan_with(reset));
  EXPECT_FALSE(forwards(r));
  EXPECT_FALSE(only<effect::Gate>(r).response);
  fa::Hold respond = hold;
  respond.then = fa::Hold::Then::respond;
  EXPECT_THROW(effects_of(plan_with(respond)), std::logic_error);  // a plan without its rendering
  faults::Plan answered = plan_with(respond);
  answered.response = respond.respond.render(faults::classify("POST", "/api/v1/namespaces/d/pods/p/binding"));
  Effects a = effects_of(answered);
  EXPECT_FALSE(forwards(a));
  ASSERT_TRUE(only<effect::Gate>(a).response);
  EXPECT_EQ(only<effect::Gate>(a).response->code, 503);
}

TEST(ActionEffects, StaleReadForwardsTheListRewrittenToItsResourceVersion) {
  faults::Plan plan = plan_with(fa::StaleRead{});
  plan.stale_resource_version = "42";
  plan.stale_target = "/api/v1/pods?resourceVersion=42&resourceVersionMatch=Exact";
  Effects e = effects_of(plan);
  auto& read = only<effect::ReadAsOf>(e);
  EXPECT_EQ(read.target, plan.stale_target);
  EXPECT_EQ(read.served, "42");
  EXPECT_TRUE(forwards(e));
  // Without a recorded resourceVersion the request goes as it is.
  Effects unrecorded = effects_of(plan_with(fa::StaleRead{}));
  EXPECT_EQ(only<effect::ReadAsOf>(unrecorded).target, "");
  EXPECT_TRUE(forwards(unrecorded));
}

TEST(ActionEffects, StaleReadRecordingComesFirstWhateverTheRequestsAction) {
  faults::Plan opened;
  opened.record_resource_version = {0, 2};
  Effects e = effects_of(opened);
  EXPECT_THAT(only<effect::RecordResourceVersion>(e).rules, ElementsAre(0, 2));
  EXPECT_TRUE(forwards(e));
  faults::Plan reset = plan_with(fa::Reset{});
  reset.record_resource_version = {1};
  Effects both = effects_of(reset);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<effect::RecordResourceVersion>(both[0]));
  EXPECT_TRUE(std::holds_alternative<effect::CutOff>(both[1]));
  EXPECT_FALSE(forwards(both));
}

TEST(ActionEffects, ResetCutsTheConnectionWithRst) {
  Effects reset = effects_of(plan_with(fa::Reset{}));
  EXPECT_EQ(only<effect::CutOff>(reset).how, Cut::reset);
  EXPECT_FALSE(forwards(reset));
}

TEST(ActionEffects, CloseCutsTheConnectionWithFin) {
  Effects close = effects_of(plan_with(fa::Close{}));
  EXPECT_EQ(only<effect::CutOff>(close).how, Cut::close);
  EXPECT_FALSE(forwards(close));
}

TEST(ActionEffects, DelayWaitsTheResolvedLatencyThenForwards) {
  faults::Plan delayed = plan_with(fa::Delay{500ms, 100ms});
  delayed.delay = 540ms;
  Effects d = effects_of(delayed);
  EXPECT_EQ(only<effect::Wait>(d).duration, 540ms);
  EXPECT_TRUE(forwards(d));
}

TEST(ActionEffects, HangHoldsTheRequestForItsDurationOrForever) {
  Effects h = effects_of(plan_with(fa::Hang{2s}));
  EXPECT_EQ(only<effect::Hold>(h).limit, 2s);
  EXPECT_FALSE(forwards(h));
  Effects forever = effects_of(plan_with(fa::Hang{}));
  EXPECT_EQ(only<effect::Hold>(forever).limit, std::nullopt);
}

TEST(ActionEffects, DropResponseForwardsThenLosesTheAnswer) {
  for (auto [then, cut] :
       {std::tuple{fa::DropResponse::Then::reset, Cut::reset}, std::tuple{fa::DropResponse::Then::close, Cut::close},
        std::tuple{fa::DropResponse::Then::hang, Cut::none}}) {
    Effects e = effects_of(plan_with(fa::DropResponse{then}));
    EXPECT_TRUE(forwards(e));
    ASSERT_EQ(e.size(), 2u);
    EXPECT_TRUE(std::holds_alternative<effect::DiscardResponse>(e[0]));
    if (cut == Cut::none) {
      ASSERT_TRUE(std::holds_alternative<effect::Hold>(e[1]));
      EXPECT_EQ(std::get<effect::Hold>(e[1]).limit, std::nullopt);  // until the client gives up
    } else {
      ASSERT_TRUE(std::holds_alternative<effect::CutOff>(e[1]));
      EXPECT_EQ(std::get<effect::CutOff>(e[1]).how, cut);
    }
  }
}

TEST(ActionEffects, OutageResetsOrHoldsAndTellsTheServer) {
  Effects reset = effects_of(plan_with(fa::Outage{fa::Outage::Mode::reset, 10s}));
  EXPECT_FALSE(forwards(reset));
  ASSERT_EQ(reset.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<effect::EnforceOutage>(reset[0]));
  EXPECT_EQ(std::get<effect::EnforceOutage>(reset[0]).mode, fa::Outage::Mode::reset);
  EXPECT_EQ(std::get<effect::EnforceOutage>(reset[0]).duration, 10s);
  ASSERT_TRUE(std::holds_alternative<effect::CutOff>(reset[1]));
  EXPECT_EQ(std::get<effect::CutOff>(reset[1]).how, Cut::reset);

  Effects blackhole = effects_of(plan_with(fa::Outage{fa::Outage::Mode::blackhole, 3s}));
  EXPECT_FALSE(forwards(blackhole));
  ASSERT_EQ(blackhole.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<effect::EnforceOutage>(blackhole[0]));
  ASSERT_TRUE(std::holds_alternative<effect::Hold>(blackhole[1]));
  EXPECT_EQ(std::get<effect::Hold>(blackhole[1]).limit, 3s);

  Effects refuse = effects_of(plan_with(fa::Outage{fa::Outage::Mode::refuse, 1s}));
  ASSERT_EQ(refuse.size(), 2u);
  EXPECT_EQ(std::get<effect::EnforceOutage>(refuse[0]).mode, fa::Outage::Mode::refuse);
  ASSERT_TRUE(std::holds_alternative<effect::CutOff>(refuse[1]));
  EXPECT_EQ(std::get<effect::CutOff>(refuse[1]).how, Cut::reset);
}

TEST(ActionEffects, GoawayEndsTheConnectionGracefullyOrAtOnce) {
  fa::GoAway graceful;
  Effects g = effects_of(plan_with(graceful));
  auto& end = only<effect::EndConnection>(g);
  EXPECT_TRUE(end.graceful);
  EXPECT_EQ(end.error_code, 0u);
  EXPECT_TRUE(forwards(g));  // this request still goes upstream

  fa::GoAway abrupt;
  abrupt.mode = fa::GoAway::Mode::abrupt;
  abrupt.error_code = 0x2;  // INTERNAL_ERROR
  Effects a = effects_of(plan_with(abrupt));
  auto& cut = only<effect::EndConnection>(a);
  EXPECT_FALSE(cut.graceful);
  EXPECT_EQ(cut.error_code, 0x2u);
  EXPECT_FALSE(forwards(a));  // the connection ends with this request unanswered
}

TEST(ActionEffects, StallHoldsTheConnectionThenForwards) {
  fa::Stall stall;
  stall.duration = 1500ms;
  Effects s = effects_of(plan_with(stall));
  EXPECT_EQ(only<effect::StallConnection>(s).duration, 1500ms);
  EXPECT_TRUE(forwards(s));
}

TEST(Effects, TheFirstEffectThatDecidesDecidesForwarding) {
  Effects e;
  e.emplace_back(effect::Wait{1ms});
  e.emplace_back(effect::EndConnection{true, 0});
  EXPECT_TRUE(forwards(e));
  e.emplace_back(effect::Hold{});
  EXPECT_FALSE(forwards(e));
  e.insert(e.begin(), effect::DiscardResponse{});
  EXPECT_TRUE(forwards(e));
}

TEST(ActionEffects, WatchGoneRelaysNEventsThenA410ErrorAndEndsCleanly) {
  fa::WatchGone gone;
  gone.after_events = 2;
  Effects e = effects_of(plan_with(gone));
  EXPECT_TRUE(forwards(e));
  auto& w = watch_of(e);
  ASSERT_TRUE(w.filter);
  EXPECT_TRUE(w.json_upstream);
  auto& f = *w.filter;
  EXPECT_THAT(f.on_start().emit, IsEmpty());
  auto first = f.on_event(event("ADDED", "a"));
  EXPECT_THAT(first.emit, ElementsAre(event("ADDED", "a")));
  EXPECT_EQ(first.end, End::none);
  EXPECT_FALSE(f.acted());
  auto second = f.on_event(event("ADDED", "b"));
  ASSERT_EQ(second.emit.size(), 2u);
  EXPECT_EQ(second.emit[0], event("ADDED", "b"));
  EXPECT_EQ(watch_event_type(second.emit[1]), "ERROR");
  EXPECT_THAT(second.emit[1], HasSubstr(R"("code":410)"));
  EXPECT_THAT(second.emit[1], HasSubstr(R"("reason":"Expired")"));
  EXPECT_EQ(second.end, End::clean);
  EXPECT_TRUE(f.acted());
}

TEST(ActionEffects, WatchGoneAfterZeroEventsActsBeforeTheFirst) {
  Effects e = effects_of(plan_with(fa::WatchGone{}));
  auto start = watch_of(e).filter->on_start();
  ASSERT_EQ(start.emit.size(), 1u);
  EXPECT_EQ(watch_event_type(start.emit[0]), "ERROR");
  EXPECT_EQ(start.end, End::clean);
}

TEST(ActionEffects, WatchResetCutsAfterNEventsOrAtTheDeadline) {
  fa::WatchReset by_count;
  by_count.after_events = 1;
  Effects e = effects_of(plan_with(by_count));
  auto& d = watch_of(e);
  EXPECT_TRUE(d.json_upstream);
  auto step = d.filter->on_event(event("ADDED", "a"));
  EXPECT_THAT(step.emit, ElementsAre(event("ADDED", "a")));
  EXPECT_EQ(step.end, End::reset);
  EXPECT_TRUE(d.filter->acted());

  fa::WatchReset by_time;
  by_time.after = 3s;
  by_time.mode = fa::WatchReset::Mode::close;
  Effects et = effects_of(plan_with(by_time));
  auto& t = watch_of(et);
  EXPECT_FALSE(t.json_upstream);  // a timed cut needs no framing
  EXPECT_EQ(t.filter->deadline(), 3s);
  EXPECT_EQ(t.filter->at_deadline(), End::clean);
  EXPECT_EQ(t.filter->on_event(event("ADDED", "a")).end, End::none);
}

TEST(ActionEffects, WatchInjectDeletedCopyOfTheLastObjectWithoutDeletionTimestamp) {
  fa::WatchInject inject;
  inject.after_events = 2;
  Effects e = effects_of(plan_with(inject));
  auto& f = *watch_of(e).filter;
  EXPECT_THAT(f.on_event(event("ADDED", "a")).emit, ElementsAre(event("ADDED", "a")));
  auto step = f.on_event(event("MODIFIED", "b"));
  ASSERT_EQ(step.emit.size(), 2u);
  EXPECT_EQ(step.emit[0], event("MODIFIED", "b"));
  EXPECT_EQ(watch_event_type(step.emit[1]), "DELETED");
  EXPECT_THAT(step.emit[1], HasSubstr(R"("name":"b")"));
  EXPECT_THAT(step.emit[1], ::testing::Not(HasSubstr("deletionTimestamp")));
  EXPECT_EQ(step.end, End::none);
  EXPECT_TRUE(f.acted());
  // Only once.
  EXPECT_THAT(f.on_event(event("ADDED", "c")).emit, ElementsAre(event("ADDED", "c")));
}

TEST(ActionEffects, WatchInjectWithNothingToInjectGivesUpOnceAndRelaysTheStreamUntouched) {
  // After 0 events there is no last object and no template: nothing can be injected, and the fault
  // does not fire later either, once objects have been seen.
  fa::WatchInject inject;
  inject.after_events = 0;
  Effects e = effects_of(plan_with(inject));
  auto& f = *watch_of(e).filter;
  EXPECT_THAT(f.on_start().emit, IsEmpty());
  EXPECT_FALSE(f.acted());
  EXPECT_THAT(f.on_event(event("ADDED", "a")).emit, ElementsAre(event("ADDED", "a")));
  EXPECT_THAT(f.on_event(event("ADDED", "b")).emit, ElementsAre(event("ADDED", "b")));
  EXPECT_FALSE(f.acted());
}

TEST(ActionEffects, WatchDropDropsOnlyTheListedTypesUpToCount) {
  fa::WatchDrop drop;
  drop.events = {"DELETED"};
  drop.after_events = 1;
  drop.count = 1;
  Effects e = effects_of(plan_with(drop));
  auto& f = *watch_of(e).filter;
  EXPECT_THAT(f.on_event(event("DELETED", "first")).emit, ElementsAre(event("DELETED", "first")));  // after_events
  EXPECT_THAT(f.on_event(event("ADDED", "x")).emit, ElementsAre(event("ADDED", "x")));
  EXPECT_FALSE(f.acted());
  EXPECT_THAT(f.on_event(event("DELETED", "y")).emit, IsEmpty());
  EXPECT_TRUE(f.acted());
  EXPECT_THAT(f.on_event(event("DELETED", "z")).emit, ElementsAre(event("DELETED", "z")));  // count reached
}

// An event of a pod `name` (in namespace "ns", uid "uid-<name>" unless given) at resourceVersion `rv`.
std::string pod_event(const std::string& type, const std::string& name, int rv, const std::string& uid = "") {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"namespace":"ns","name":")" + name +
         R"(","uid":")" + (uid.empty() ? "uid-" + name : uid) + R"(","resourceVersion":")" + std::to_string(rv) +
         "\"}}}\n";
}
std::string bookmark(int rv) {
  return R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":")" + std::to_string(rv) +
         "\"}}}\n";
}

// The time of the filters' tests: t(ms) milliseconds after an arbitrary start (a ManualClock's).
WatchFilter::TimePoint t(int ms) {
  faults::ManualClock clock;
  clock.advance(std::chrono::hours(1) + std::chrono::milliseconds(ms));
  return clock.now();
}

// Hands `event` to the filter at time `at`; what that step emits (events come in only through
// on_event, which holds them: the relay calls advance first).
std::vector<std::string> feed(WatchFilter& f, int at, const std::string& event) {
  auto due = f.advance(t(at)).emit;
  auto step = f.on_event(event);
  EXPECT_EQ(step.end, End::none);
  EXPECT_THAT(step.emit, IsEmpty());
  return due;
}

TEST(ActionEffects, WatchDelayHoldsEveryEventForItsDurationInTheUpstreamOrder) {
  fa::WatchDelay delay;
  delay.duration = 1s;
  Effects e = effects_of(plan_with(delay));
  auto& watch = watch_of(e);
  EXPECT_TRUE(watch.json_upstream);
  auto& f = *watch.filter;
  EXPECT_TRUE(f.holds_events());
  EXPECT_THAT(feed(f, 0, pod_event("ADDED", "a", 10)), IsEmpty());
  EXPECT_THAT(feed(f, 500, pod_event("MODIFIED", "a", 11)), IsEmpty());
  EXPECT_THAT(feed(f, 600, bookmark(11)), IsEmpty());
  EXPECT_EQ(f.next_due(), t(1000));
  EXPECT_THAT(f.advance(t(999)).emit, IsEmpty());
  EXPECT_THAT(f.advance(t(1000)).emit, ElementsAre(pod_event("ADDED", "a", 10)));
  EXPECT_EQ(f.next_due(), t(1500));
  EXPECT_THAT(f.advance(t(1600)).emit, ElementsAre(pod_event("MODIFIED", "a", 11), bookmark(11)));
  EXPECT_EQ(f.next_due(), std::nullopt);
  EXPECT_TRUE(f.acted());
  EXPECT_EQ(f.counts().delayed, 3u);
  EXPECT_EQ(f.counts().withheld, 0u);
}

TEST(ActionEffects, WatchDelayDeliversWhatItHoldsBeforeACleanEnd) {
  fa::WatchDelay delay;
  delay.duration = 10s;
  Effects e = effects_of(plan_with(delay));
  auto& f = *watch_of(e).filter;
  feed(f, 0, pod_event("ADDED", "a", 10));
  feed(f, 1, pod_event("ADDED", "b", 11));
  EXPECT_THAT(f.flush().emit, ElementsAre(pod_event("ADDED", "a", 10), pod_event("ADDED", "b", 11)));
  EXPECT_EQ(f.next_due(), std::nullopt);
}

TEST(ActionEffects, WatchDelayCutsTheStreamRatherThanHoldMoreThanItsBounds) {
  fa::WatchDelay delay;
  delay.duration = 1min;
  {
    Effects e = effects_of(plan_with(delay));
    auto& f = *watch_of(e).filter;
    f.advance(t(0));
    const std::string small = pod_event("ADDED", "a", 1);
    for (int i = 0; i < 10000; ++i) ASSERT_EQ(f.on_event(small).end, End::none) << i;
    EXPECT_EQ(f.on_event(small).end, End::reset);  // the 10,001st event
  }
  {
    Effects e = effects_of(plan_with(delay));
    auto& f = *watch_of(e).filter;
    f.advance(t(0));
    const std::string large(4u << 20, ' ');
    for (int i = 0; i < 4; ++i) ASSERT_EQ(f.on_event(large).end, End::none) << i;  // 16 MiB
    EXPECT_EQ(f.on_event("{}\n").end, End::reset);
  }
}

TEST(ActionEffects, WatchCoalesceDeliversOnlyTheLastEventOfAnObjectWithinItsWindow) {
  fa::WatchCoalesce coalesce;
  coalesce.window = 1s;
  Effects e = effects_of(plan_with(coalesce));
  auto& f = *watch_of(e).filter;
  EXPECT_TRUE(f.holds_events());
  feed(f, 0, pod_event("ADDED", "a", 10));
  feed(f, 100, pod_event("ADDED", "b", 11));
  feed(f, 200, pod_event("MODIFIED", "a", 12));
  feed(f, 300, pod_event("MODIFIED", "a", 13));
  // a's window ends at 1000, b's at 1100: b (rv 11) is released first, so the resourceVersions the
  // client sees only grow.
  EXPECT_THAT(f.advance(t(1000)).emit, IsEmpty());
  EXPECT_THAT(f.advance(t(1100)).emit, ElementsAre(pod_event("ADDED", "b", 11), pod_event("MODIFIED", "a", 13)));
  EXPECT_EQ(f.counts().delayed, 2u);
  EXPECT_EQ(f.counts().withheld, 2u);
  // A new window for a once its last one ended.
  feed(f, 1500, pod_event("DELETED", "a", 14));
  EXPECT_EQ(f.next_due(), t(2500));
  EXPECT_THAT(f.advance(t(2500)).emit, ElementsAre(pod_event("DELETED", "a", 14)));
}

TEST(ActionEffects, WatchCoalesceNeverLetsABookmarkOvertakeAHeldEvent) {
  fa::WatchCoalesce coalesce;
  coalesce.window = 1s;
  Effects e = effects_of(plan_with(coalesce));
  auto& f = *watch_of(e).filter;
  // Nothing held: a bookmark goes out at once.
  feed(f, 0, bookmark(9));
  EXPECT_THAT(f.advance(t(0)).emit, ElementsAre(bookmark(9)));
  feed(f, 10, pod_event("ADDED", "a", 10));
  feed(f, 20, bookmark(10));
  EXPECT_THAT(f.advance(t(500)).emit, IsEmpty());  // the bookmark waits behind a's event
  EXPECT_THAT(f.advance(t(1010)).emit, ElementsAre(pod_event("ADDED", "a", 10), bookmark(10)));
}

TEST(ActionEffects, WatchCoalesceByUidTellsApartObjectsOfOneName) {
  fa::WatchCoalesce coalesce;
  coalesce.window = 1s;
  coalesce.by = fa::WatchCoalesce::Key::uid;
  Effects e = effects_of(plan_with(coalesce));
  auto& f = *watch_of(e).filter;
  feed(f, 0, pod_event("DELETED", "a", 10, "u1"));
  feed(f, 1, pod_event("ADDED", "a", 11, "u2"));  // the same name again: another object
  EXPECT_THAT(f.advance(t(1001)).emit,
              ElementsAre(pod_event("DELETED", "a", 10, "u1"), pod_event("ADDED", "a", 11, "u2")));
  EXPECT_EQ(f.counts().withheld, 0u);
}

TEST(ActionEffects, WatchCoalesceDeliversWhatItHoldsBeforeACleanEnd) {
  fa::WatchCoalesce coalesce;
  coalesce.window = 5s;
  Effects e = effects_of(plan_with(coalesce));
  auto& f = *watch_of(e).filter;
  feed(f, 0, pod_event("ADDED", "a", 10));
  feed(f, 1, pod_event("MODIFIED", "a", 11));
  EXPECT_THAT(f.flush().emit, ElementsAre(pod_event("MODIFIED", "a", 11)));
}

}  // namespace
}  // namespace faultline::proxy
