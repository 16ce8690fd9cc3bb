// faultline-harness reading faultline-proxy's admin API: the real admin server and AdminBridge
// over loopback, fed the way the relay feeds them (AuditingObserver::exchange_done), read by the
// harness's ProxyAdmin. This is where the proxy's audit encoder meets the harness's decoder.
#include "faultline/harness/services.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <ostream>
#include <thread>

#include "audit_sample.hpp"
#include "faultline/admin/admin_server.hpp"
#include "faultline/app/bridge.hpp"
#include "faultline/faults/clock.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/harness/async.hpp"

namespace faultline::audit {
// Failure messages show a record as its JSON line.
void PrintTo(const Record& record, std::ostream* out) { *out << to_json_line(record); }
}  // namespace faultline::audit

namespace faultline::harness {
namespace {

using namespace std::chrono;

class ProxyAdminAgainstTheProxy : public ::testing::Test {
 protected:
  void SetUp() override {
    admin::AdminServerOptions options;
    options.audit_default_limit = 1;  // one record per answer: the harness must follow "more"
    server_ = std::make_unique<admin::AdminServer>(ioc_, options, bridge_);
    server_->start();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  std::string admin_url() const { return "http://127.0.0.1:" + std::to_string(server_->local_endpoint().port()); }
  ProxyAdmin harness_side(ReadLimits limits = {}) { return ProxyAdmin(admin_url() + "/", "", limits); }

  faults::ManualClock clock_;
  faults::Engine engine_;
  admin::AuditLog audit_{{}};
  admin::ProxyMetrics metrics_;
  app::AuditingObserver observer_{audit_, metrics_};
  app::AdminBridge bridge_{engine_, clock_, audit_, metrics_};
  boost::asio::io_context ioc_;
  boost::asio::io_context client_ioc_;  // the harness side runs its coroutines here
  std::unique_ptr<admin::AdminServer> server_;
  std::thread thread_;
};

TEST_F(ProxyAdminAgainstTheProxy, EveryAuditFieldArrivesAsTheRelayReportedIt) {
  audit::Record full = testing::every_field_set();  // seq: the audit log assigns its own
  // Naming every member: a field added to the record without being added here does not compile.
  const auto& [seq, ts, conn, client, user_agent, proto, method, path, verb, resource, subresource, namespace_, name,
               watch, rule, action, status, upstream_status, bytes_in, bytes_out, duration, held, events_delayed,
               events_withheld, stale_read] = full;
  const audit::Record defaults;
  EXPECT_TRUE(seq != defaults.seq && ts != defaults.ts && conn != defaults.conn && client != defaults.client &&
              user_agent != defaults.user_agent && proto != defaults.proto && method != defaults.method &&
              path != defaults.path && verb != defaults.verb && resource != defaults.resource &&
              subresource != defaults.subresource && namespace_ != defaults.namespace_ && name != defaults.name &&
              watch != defaults.watch && rule != defaults.rule && action != defaults.action &&
              status != defaults.status && upstream_status != defaults.upstream_status &&
              bytes_in != defaults.bytes_in && bytes_out != defaults.bytes_out && duration != defaults.duration &&
              held != defaults.held && events_delayed != defaults.events_delayed &&
              events_withheld != defaults.events_withheld && stale_read != defaults.stale_read)
      << "the test record must set every field, or a dropped field would go unnoticed";

  // A request cut before any answer: no rule, no upstream status (null, not 0), status 0.
  audit::Record cut;
  cut.ts = full.ts + seconds{1};
  cut.proto = "h1";
  cut.method = "GET";
  cut.path = "/api/v1/pods";

  ProxyAdmin proxy = harness_side();
  std::uint64_t since = run_blocking(client_ioc_, proxy.audit_head());
  EXPECT_EQ(since, 0u);
  observer_.exchange_done(full, milliseconds{5});
  observer_.exchange_done(cut, std::nullopt);

  audit::DecodedLines got;
  run_blocking(client_ioc_, proxy.read_audit(since, got));
  EXPECT_EQ(got.malformed, 0u) << got.first_error;
  ASSERT_EQ(got.records.size(), 2u);
  full.seq = 1;
  cut.seq = 2;
  EXPECT_EQ(got.records[0], full);
  EXPECT_EQ(got.records[1], cut);
  EXPECT_FALSE(got.records[1].upstream_status);
  EXPECT_EQ(since, 2u);

  // Reading on starts after what was read.
  run_blocking(client_ioc_, proxy.read_audit(since, got));
  EXPECT_EQ(got.records.size(), 2u);
}

TEST_F(ProxyAdminAgainstTheProxy, AuditRecordsBeyondTheLimitAreAnErrorNamingTheFlag) {
  ReadLimits limits;
  limits.max_audit_records = 3;
  ProxyAdmin proxy = harness_side(limits);
  std::uint64_t since = run_blocking(client_ioc_, proxy.audit_head());
  for (int i = 0; i < 3; ++i) observer_.exchange_done(testing::every_field_set(), milliseconds{5});
  audit::DecodedLines got;
  run_blocking(client_ioc_, proxy.read_audit(since, got));
  EXPECT_EQ(got.records.size(), 3u) << "up to the limit, every record is kept";

  observer_.exchange_done(testing::every_field_set(), milliseconds{5});
  try {
    run_blocking(client_ioc_, proxy.read_audit(since, got));
    FAIL() << "a fourth record went past a limit of 3";
  } catch (const LimitError& e) {
    EXPECT_EQ(std::string(e.what()), "GET " + admin_url() +
                                         "/v1/audit?since=3: the run's audit records would be more than the limit of "
                                         "3; raise it with --max-audit-records");
  }
  EXPECT_EQ(got.records.size(), 3u);
}

TEST_F(ProxyAdminAgainstTheProxy, RuleCountersAreReadAsTheProxyNamesThem) {
  ProxyAdmin proxy = harness_side();
  run_blocking(client_ioc_, proxy.put_scenario(R"(apiVersion: faultline/v1
kind: Scenario
metadata: {name: unit}
faults:
  - {name: every-other-bind, match: {verbs: [create], resources: [pods/binding]}, when: {every: 2}, action: {type: reset}}
)"));
  run_blocking(client_ioc_, proxy.arm());
  for (int i = 0; i < 5; ++i) {
    engine_.decide(faults::make_request("POST", "/api/v1/namespaces/ns/pods/p" + std::to_string(i) + "/binding"),
                   clock_.now());
  }
  const auto rules = run_blocking(client_ioc_, proxy.rules());
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].rule, "every-other-bind");
  EXPECT_EQ(rules[0].matched, 5);
  EXPECT_EQ(rules[0].fired, 2);
}

}  // namespace
}  // namespace faultline::harness
