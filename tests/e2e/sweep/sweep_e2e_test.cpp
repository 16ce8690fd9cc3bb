// scripts/soak --matrix end to end, as `make soak MATRIX=...` runs it: a 2-cell matrix
// (tests/data/matrices/e2e-short.yaml: the YUNIKORN-3355 faults against kube-scheduler at two
// trigger points, 10 nodes, 50 pods, one run each) on one real local stack that the second cell
// reuses. The sweep's soak.json and junit.xml are read the way a user or CI would.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace faultline::testing;  // tests/support/local_stack.hpp

CommandResult soak(const fs::path& out) {
  return run_command(
      "FAULTLINE_HARNESS_BIN=" +
      shell_quote(env_or("FAULTLINE_HARNESS_BIN", kBinary / "harness" / "faultline-harness")) +
      " FAULTLINE_PROXY_BIN=" + shell_quote(env_or("FAULTLINE_PROXY_BIN", kBinary / "proxy" / "faultline-proxy")) +
      " " + shell_quote((kSource / "scripts" / "soak").string()) + " --matrix " +
      shell_quote((kSource / "tests" / "data" / "matrices" / "e2e-short.yaml").string()) + " --out " +
      shell_quote(out.string()));
}

TEST(SweepE2E, TwoCellsOnOneReusedStackPassAndResumeRunsNothing) {
  const fs::path out = fs::temp_directory_path() / ("faultline-sweep-e2e-" + std::to_string(::getpid()));
  fs::remove_all(out);
  const CommandResult first = soak(out);
  const std::string context = "soak output:\n" + first.output + "\nsweep in " + out.string();
  EXPECT_EQ(first.exit_code, 0) << context;

  const std::string text = slurp(out / "soak.json");
  ASSERT_FALSE(text.empty()) << context;
  const json::object soak_json = json::parse(text).as_object();
  EXPECT_EQ(soak_json.at("runsDone").to_number<std::uint64_t>(), 2u) << text;
  const json::array& cells = soak_json.at("cells").as_array();
  ASSERT_EQ(cells.size(), 2u) << text;
  const char* trigger = "faults[0].when.afterMatches, faults[1].when.afterMatches";
  EXPECT_EQ(cells[0].at("values").at(trigger).as_string(), "10") << text;
  EXPECT_EQ(cells[1].at("values").at(trigger).as_string(), "30") << text;
  for (const auto& c : cells) {
    EXPECT_EQ(c.at("expected").as_string(), "pass") << text;
    EXPECT_TRUE(c.at("asExpected").as_bool()) << text;
    EXPECT_EQ(c.at("verdicts").as_object().at("pass").to_number<std::uint64_t>(), 1u) << text;
    EXPECT_EQ(c.at("medianStrandedPods").as_double(), 0.0) << text;
    EXPECT_GT(c.at("medianFirstFaultSeconds").as_double(), 0.0) << text;
  }
  EXPECT_EQ(cells[0].at("runs").as_array()[0].at("stack").as_string(), "fresh") << text;
  EXPECT_EQ(cells[1].at("runs").as_array()[0].at("stack").as_string(), "reused") << text;

  // Each cell ran its own scenario: the proxy fired both rules in each run.
  for (const char* cell : {"c001", "c002"}) {
    const json::object report = json::parse(slurp(out / "cells" / cell / "run-01" / "report.json")).as_object();
    for (const auto& f : report.at("faults").as_array())
      EXPECT_GT(f.at("fired").to_number<std::int64_t>(), 0) << cell << " " << json::serialize(f);
  }

  const std::string junit = slurp(out / "junit.xml");
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("name=\"c002 " + std::string(trigger) + "=30\""), std::string::npos) << junit;
  EXPECT_NE(slurp(out / "soak.html").find("<svg"), std::string::npos);

  // Run again: both runs have their report, so nothing runs and no stack comes up.
  const CommandResult again = soak(out);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("2 of 2 runs already done"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("run 1/1"), std::string::npos) << again.output;
  if (!HasFailure()) fs::remove_all(out);
}

}  // namespace
