// The README's tutorial, as a reader copies it: the scenario of "Write your own scenario" and the
// matrix of "Run a small sweep", taken from README.md itself (so the test breaks when the text
// does), saved under the names the README gives, checked with `faultline-harness validate` and
// `matrix expand`, and the scenario run the way the README runs it (scripts/chaos, which `make
// chaos` calls) on kube-scheduler, at a size that fits CI.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "local_stack.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

using namespace faultline::testing;  // tests/support/local_stack.hpp

// The first ```yaml block after the line that tells the reader to save `file_name`.
std::string yaml_block_saved_as(const std::string& readme, const std::string& file_name) {
  std::size_t at = readme.find("Save this as `" + file_name + "`");
  if (at == std::string::npos) return "";
  std::size_t begin = readme.find("```yaml\n", at);
  if (begin == std::string::npos) return "";
  begin += 8;
  std::size_t end = readme.find("```", begin);
  return end == std::string::npos ? "" : readme.substr(begin, end - begin);
}

std::string harness_bin() { return env_or("FAULTLINE_HARNESS_BIN", kBinary / "harness" / "faultline-harness"); }

class Tutorial : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string readme = slurp(kSource / "README.md");
    scenario_text_ = yaml_block_saved_as(readme, "my-bind-errors.yaml");
    matrix_text_ = yaml_block_saved_as(readme, "my-sweep.yaml");
    ASSERT_FALSE(scenario_text_.empty()) << "README.md has no scenario saved as my-bind-errors.yaml";
    ASSERT_FALSE(matrix_text_.empty()) << "README.md has no matrix saved as my-sweep.yaml";
    std::ofstream(dir_.path() / "my-bind-errors.yaml") << scenario_text_;
    std::ofstream(dir_.path() / "my-sweep.yaml") << matrix_text_;
  }
  // A command run in the reader's directory (where the two files were saved).
  CommandResult in_dir(const std::string& command) const {
    return run_command("cd " + shell_quote(dir_.path().string()) + " && " + command);
  }

  TempDir dir_{"faultline-tutorial-e2e", TempDir::Keep::on_failure};
  std::string scenario_text_, matrix_text_;
};

TEST_F(Tutorial, ScenarioValidatesAsTheReadmeSays) {
  CommandResult r = in_dir(shell_quote(harness_bin()) + " validate my-bind-errors.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("my-bind-errors.yaml: ok (1 fault rules, 0 component faults, 1 phases)"), std::string::npos)
      << r.output;
}

TEST_F(Tutorial, SweepExpandsToSixCells) {
  CommandResult r = in_dir(shell_quote(harness_bin()) + " matrix expand my-sweep.yaml --out plan");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("6 cells"), std::string::npos) << r.output;
}

// Every third bind answered 500 for 20 s after the 50th: kube-scheduler retries the failed binds,
// so the run ends `pass` with every pod bound, and the rule fired.
TEST_F(Tutorial, ScenarioRunsAndKubeSchedulerRecovers) {
  const fs::path out = dir_.path() / "report";
  CommandResult r = in_dir("FAULTLINE_HARNESS_BIN=" + shell_quote(harness_bin()) + " FAULTLINE_PROXY_BIN=" +
                           shell_quote(env_or("FAULTLINE_PROXY_BIN", kBinary / "proxy" / "faultline-proxy")) + " " +
                           shell_quote((kSource / "scripts" / "chaos").string()) +
                           " --scenario ./my-bind-errors.yaml --scheduler kube-scheduler --nodes 5 --pods 120 --out " +
                           shell_quote(out.string()));
  ASSERT_TRUE(fs::exists(out / "report.json")) << r.output;
  json::value report = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(report.at("verdict").as_string(), "pass") << r.output;
  EXPECT_EQ(report.at("stats").at("strandedPods").to_number<std::int64_t>(), 0) << r.output;
  EXPECT_EQ(report.at("stats").at("boundPods").to_number<std::int64_t>(), 120) << r.output;
  const auto& faults = report.at("faults").as_array();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].at("rule").as_string(), "bind-500");
  EXPECT_GT(faults[0].at("fired").to_number<std::int64_t>(), 0) << r.output;
}

}  // namespace
