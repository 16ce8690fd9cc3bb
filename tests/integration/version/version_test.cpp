// `faultline-proxy --version` and `faultline-harness --version`: the project's version (set once,
// project(VERSION) in CMakeLists.txt) and the commit the binary was built from; and
// proxy/version/git_commit.cmake, which captures it: the short hash in a checkout, "-dirty" when tracked
// files differ, "unknown" outside a checkout.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "faultline/version.hpp"
#include "files.hpp"

namespace {

namespace fs = std::filesystem;

struct Output {
  int status;
  std::string text;
};

Output run(const std::string& cmd) {
  Output out{-1, ""};
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.text.append(buf.data(), n);
  out.status = ::pclose(pipe);
  return out;
}

std::string head_commit() {
  const Output o = run("git -C '" + std::string(FAULTLINE_SOURCE_DIR) + "' rev-parse --short=12 --verify HEAD");
  if (o.status != 0) return "";
  return o.text.substr(0, o.text.find('\n'));
}

void expect_version_line(const std::string& program, const fs::path& binary) {
  const Output o = run("'" + binary.string() + "' --version");
  EXPECT_EQ(o.status, 0) << o.text;
  const std::regex line("^" + program + " " +
                        std::regex_replace(std::string(FAULTLINE_PROJECT_VERSION), std::regex("\\."), "\\.") +
                        R"( \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n$)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(o.text, m, line)) << o.text;
  EXPECT_EQ(o.text, faultline::version_line(program) + "\n");
  // Built from this checkout: its HEAD (unless the tree moved on since the build).
  if (const std::string head = head_commit(); !head.empty()) {
    EXPECT_EQ(m[1].str().substr(0, 12), head) << o.text;
  }
}

TEST(Version, IsTheProjectVersion) { EXPECT_EQ(faultline::version(), FAULTLINE_PROJECT_VERSION); }

TEST(Version, ProxyPrintsItsVersionAndCommit) {
  expect_version_line("faultline-proxy", fs::path(FAULTLINE_BINARY_DIR) / "proxy" / "faultline-proxy");
}

TEST(Version, HarnessPrintsItsVersionAndCommit) {
  expect_version_line("faultline-harness", fs::path(FAULTLINE_BINARY_DIR) / "harness" / "faultline-harness");
}

std::string capture(const fs::path& source, const fs::path& output, const std::string& override_commit = "") {
  const Output o = run("'" + std::string(FAULTLINE_CMAKE_COMMAND) + "' -DSOURCE_DIR='" + source.string() +
                       "' -DOUTPUT='" + output.string() + "' -DGIT=git -DOVERRIDE='" + override_commit + "' -P '" +
                       std::string(FAULTLINE_SOURCE_DIR) + "/proxy/version/git_commit.cmake'");
  EXPECT_EQ(o.status, 0) << o.text;
  const std::string text = faultline::testing::slurp(output);
  const auto at = text.find("return \"");
  if (at == std::string::npos) return "(no definition: " + text + ")";
  return text.substr(at + 8, text.find('"', at + 8) - at - 8);
}

TEST(GitCommitCapture, UnknownOutsideACheckoutHashInOneDirtyWhenChanged) {
  faultline::testing::TempDir tmp("faultline-version-test");
  const fs::path src = tmp.path() / "src", out = tmp.path() / "git_commit.cpp";
  fs::create_directories(src);
  EXPECT_EQ(capture(src, out), "unknown");
  EXPECT_EQ(capture(src, out, "abc123"), "abc123");  // -DFAULTLINE_GIT_COMMIT for trees without .git
  const std::string git = "git -C '" + src.string() + "' -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(
      run(git + "init -q && echo a >'" + (src / "f").string() + "' && " + git + "add f && " + git + "commit -q -m c")
          .status,
      0);
  const Output head = run("git -C '" + src.string() + "' rev-parse --short=12 HEAD");
  const std::string hash = head.text.substr(0, 12);
  EXPECT_EQ(capture(src, out), hash);
  const auto written = fs::last_write_time(out);
  EXPECT_EQ(capture(src, out), hash);
  EXPECT_EQ(fs::last_write_time(out), written) << "rewritten with the same commit: the programs would link again";
  std::ofstream(src / "f") << "b\n";
  EXPECT_EQ(capture(src, out), hash + "-dirty");
  // A directory inside a checkout is not that checkout's source tree.
  fs::create_directories(src / "sub");
  EXPECT_EQ(capture(src / "sub", out), "unknown");
}

}  // namespace
