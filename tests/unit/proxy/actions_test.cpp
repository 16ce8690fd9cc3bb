// Each fault action's Disposition: what the relay will do for a plan carrying it.
#include "faultline/proxy/disposition.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(Dispose, NoActionForwardsUntouched) {
  Disposition d = dispose(faults::Plan{});
  EXPECT_TRUE(d.forward);
  EXPECT_FALSE(d.respond);
  EXPECT_EQ(d.cut, Cut::none);
  EXPECT_FALSE(d.hang);
  EXPECT_FALSE(d.watch_filter);
  EXPECT_FALSE(d.json_upstream);
}

TEST(Dispose, RespondAnswersWithTheRenderedStatus) {
  fa::Respond respond;
  respond.code = 429;
  faults::Plan plan = plan_with(respond);
  plan.response = respond.render(faults::classify("POST", "/api/v1/namespaces/d/pods/p/binding"));
  Disposition d = dispose(plan);
  EXPECT_FALSE(d.forward);
  ASSERT_TRUE(d.respond);
  EXPECT_EQ(d.respond->code, 429);
  EXPECT_THAT(d.respond->body, HasSubstr(R"("kind":"Status")"));
  EXPECT_THROW(dispose(plan_with(respond)), std::logic_error);  // a plan without its rendering
}

TEST(Dispose, ResetCloseDelayHang) {
  EXPECT_EQ(dispose(plan_with(fa::Reset{})).cut, Cut::reset);
  EXPECT_FALSE(dispose(plan_with(fa::Reset{})).forward);
  EXPECT_EQ(dispose(plan_with(fa::Close{})).cut, Cut::close);
  faults::Plan delayed = plan_with(fa::Delay{500ms, 100ms});
  delayed.delay = 540ms;
  Disposition d = dispose(delayed);
  EXPECT_EQ(d.wait_before, 540ms);
  EXPECT_TRUE(d.forward);
  Disposition h = dispose(plan_with(fa::Hang{2s}));
  EXPECT_TRUE(h.hang);
  EXPECT_EQ(h.hang_for, 2s);
  EXPECT_FALSE(h.forward);
}

TEST(Dispose, DropResponseForwardsThenLosesTheAnswer) {
  for (auto [then, cut, hang] : {std::tuple{fa::DropResponse::Then::reset, Cut::reset, false},
                                 std::tuple{fa::DropResponse::Then::close, Cut::close, false},
                                 std::tuple{fa::DropResponse::Then::hang, Cut::none, true}}) {
    Disposition d = dispose(plan_with(fa::DropResponse{then}));
    EXPECT_TRUE(d.forward);
    EXPECT_TRUE(d.discard_response);
    EXPECT_EQ(d.cut, cut);
    EXPECT_EQ(d.hang, hang);
  }
}

TEST(Dispose, OutageResetsOrHoldsAndTellsTheServer) {
  Disposition reset = dispose(plan_with(fa::Outage{fa::Outage::Mode::reset, 10s}));
  EXPECT_EQ(reset.outage, fa::Outage::Mode::reset);
  EXPECT_EQ(reset.outage_for, 10s);
  EXPECT_EQ(reset.cut, Cut::reset);
  EXPECT_FALSE(reset.forward);
  Disposition blackhole = dispose(plan_with(fa::Outage{fa::Outage::Mode::blackhole, 3s}));
  EXPECT_TRUE(blackhole.hang);
  EXPECT_EQ(blackhole.hang_for, 3s);
  EXPECT_EQ(dispose(plan_with(fa::Outage{fa::Outage::Mode::refuse, 1s})).cut, Cut::reset);
}

TEST(WatchGone, RelaysNEventsThenA410ErrorAndEndsCleanly) {
  fa::WatchGone gone;
  gone.after_events = 2;
  Disposition d = dispose(plan_with(gone));
  ASSERT_TRUE(d.watch_filter);
  EXPECT_TRUE(d.json_upstream);
  auto& f = *d.watch_filter;
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

TEST(WatchGone, AfterZeroEventsActsBeforeTheFirst) {
  Disposition d = dispose(plan_with(fa::WatchGone{}));
  auto start = d.watch_filter->on_start();
  ASSERT_EQ(start.emit.size(), 1u);
  EXPECT_EQ(watch_event_type(start.emit[0]), "ERROR");
  EXPECT_EQ(start.end, End::clean);
}

TEST(WatchReset, CutsAfterNEventsOrAtTheDeadline) {
  fa::WatchReset by_count;
  by_count.after_events = 1;
  Disposition d = dispose(plan_with(by_count));
  EXPECT_TRUE(d.json_upstream);
  auto step = d.watch_filter->on_event(event("ADDED", "a"));
  EXPECT_THAT(step.emit, ElementsAre(event("ADDED", "a")));
  EXPECT_EQ(step.end, End::reset);
  EXPECT_TRUE(d.watch_filter->acted());

  fa::WatchReset by_time;
  by_time.after = 3s;
  by_time.mode = fa::WatchReset::Mode::close;
  Disposition t = dispose(plan_with(by_time));
  EXPECT_FALSE(t.json_upstream);  // a timed cut needs no framing
  EXPECT_EQ(t.watch_filter->deadline(), 3s);
  EXPECT_EQ(t.watch_filter->at_deadline(), End::clean);
  EXPECT_EQ(t.watch_filter->on_event(event("ADDED", "a")).end, End::none);
}

TEST(WatchInject, DeletedCopyOfTheLastObjectWithoutDeletionTimestamp) {
  fa::WatchInject inject;
  inject.after_events = 2;
  Disposition d = dispose(plan_with(inject));
  auto& f = *d.watch_filter;
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

TEST(WatchInject, WithNothingToInjectGivesUpOnceAndRelaysTheStreamUntouched) {
  // After 0 events there is no last object and no template: nothing can be injected, and the fault
  // does not fire later either, once objects have been seen.
  fa::WatchInject inject;
  inject.after_events = 0;
  Disposition d = dispose(plan_with(inject));
  auto& f = *d.watch_filter;
  EXPECT_THAT(f.on_start().emit, IsEmpty());
  EXPECT_FALSE(f.acted());
  EXPECT_THAT(f.on_event(event("ADDED", "a")).emit, ElementsAre(event("ADDED", "a")));
  EXPECT_THAT(f.on_event(event("ADDED", "b")).emit, ElementsAre(event("ADDED", "b")));
  EXPECT_FALSE(f.acted());
}

TEST(WatchDrop, DropsOnlyTheListedTypesUpToCount) {
  fa::WatchDrop drop;
  drop.events = {"DELETED"};
  drop.after_events = 1;
  drop.count = 1;
  Disposition d = dispose(plan_with(drop));
  auto& f = *d.watch_filter;
  EXPECT_THAT(f.on_event(event("DELETED", "first")).emit, ElementsAre(event("DELETED", "first")));  // after_events
  EXPECT_THAT(f.on_event(event("ADDED", "x")).emit, ElementsAre(event("ADDED", "x")));
  EXPECT_FALSE(f.acted());
  EXPECT_THAT(f.on_event(event("DELETED", "y")).emit, IsEmpty());
  EXPECT_TRUE(f.acted());
  EXPECT_THAT(f.on_event(event("DELETED", "z")).emit, ElementsAre(event("DELETED", "z")));  // count reached
}

}  // namespace
}  // namespace faultline::proxy
