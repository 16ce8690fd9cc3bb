// The bounds of a scenario: what a file or an admin API body may make the loader do. Each case is
// an input that used to cost unbounded memory or time, or to block, and now is a located error.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "faultline/faults/actions/respond.hpp"
#include "faultline/faults/duration.hpp"
#include "faultline/faults/match.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "files.hpp"
#include "scenario_helpers.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;

namespace fs = std::filesystem;
using faults::testing::load_errors;

std::string bad_path(const char* file) { return std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/bad/" + file; }

const std::string header = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: x}\n";

// The alias bomb (nine levels of nine aliases: 9^9 values once expanded) is refused at its
// anchors and aliases, before any tree is built. Its 81 errors are cut at 50.
TEST(ScenarioBounds, AliasBombIsRefusedAtItsFirstAnchor) {
  std::string path = bad_path("alias-bomb.yaml");
  auto errors = load_errors([&] { load_scenario_file(path); });
  ASSERT_EQ(errors.size(), max_reported_errors + 1);
  EXPECT_EQ(errors[0],
            path + R"(:10:12: anchors are not supported in scenario files ("&a"): write the value out in full)");
  EXPECT_EQ(errors[2],
            path + R"(:11:16: aliases are not supported in scenario files ("*a"): write the value out in full)");
  EXPECT_EQ(errors.back(), path + ": ... and 31 more errors (only the first 50 are listed)");
}

TEST(ScenarioBounds, ScalarAliasesInStringListsAreRefused) {
  std::string path = bad_path("alias-strings.yaml");
  auto errors = load_errors([&] { load_scenario_file(path); });
  ASSERT_EQ(errors.size(), max_reported_errors + 1);
  EXPECT_EQ(errors[0],
            path + R"(:7:20: anchors are not supported in scenario files ("&ua"): write the value out in full)");
  EXPECT_EQ(errors[1],
            path + R"(:8:15: aliases are not supported in scenario files ("*ua"): write the value out in full)");
  EXPECT_EQ(errors.back(), path + ": ... and 1951 more errors (only the first 50 are listed)");
}

TEST(ScenarioBounds, ErrorsAreCutAtFiftyWithACount) {
  std::string text = header;
  for (int i = 0; i < 10'000; ++i) text += "unknown" + std::to_string(i) + ": 1\n";
  auto errors = load_errors([&] { load_scenario_text(text, "many.yaml"); });
  ASSERT_EQ(errors.size(), max_reported_errors + 1);
  EXPECT_EQ(errors[0],
            "many.yaml:4:1: unknown0: unknown key (allowed: apiVersion, checks, componentFaults, faults, kind, "
            "metadata, seed, workload)");
  EXPECT_EQ(errors[49],
            "many.yaml:53:1: unknown49: unknown key (allowed: apiVersion, checks, componentFaults, faults, kind, "
            "metadata, seed, workload)");
  EXPECT_EQ(errors[50], "many.yaml: ... and 9950 more errors (only the first 50 are listed)");
}

TEST(ScenarioBounds, TextLongerThanOneMebibyteIsRefused) {
  std::string text = header + "# " + std::string(max_scenario_bytes, 'x') + "\n";
  EXPECT_EQ(load_errors([&] { load_scenario_text(text, "big.yaml"); }),
            std::vector<std::string>{"big.yaml: the scenario is " + std::to_string(text.size()) +
                                     " bytes; the maximum is 1048576 bytes (1 MiB)"});
}

TEST(ScenarioBounds, FileLongerThanOneMebibyteIsRefusedBeforeReading) {
  faultline::testing::TempDir dir{"faultline-bounds"};
  const fs::path path = dir.path() / "big.yaml";
  std::ofstream(path, std::ios::binary) << header << "# " << std::string(max_scenario_bytes, 'x') << "\n";
  EXPECT_EQ(load_errors([&] { load_scenario_file(path); }),
            std::vector<std::string>{path.string() + ": the file is " + std::to_string(fs::file_size(path)) +
                                     " bytes; the maximum is 1048576 bytes (1 MiB)"});
}

TEST(ScenarioBounds, OnlyRegularFilesAreRead) {
  faultline::testing::TempDir dir{"faultline-bounds"};
  fs::path fifo = dir.path() / "fifo.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Nobody writes to the FIFO: opening it for reading would wait forever without O_NONBLOCK.
  EXPECT_EQ(load_errors([&] { load_scenario_file(fifo); }),
            std::vector<std::string>{fifo.string() +
                                     ": not a regular file (a FIFO): a scenario is read from a regular file only"});
  EXPECT_EQ(load_errors([&] { load_scenario_file("/dev/zero"); }),
            std::vector<std::string>{
                "/dev/zero: not a regular file (a character device): a scenario is read from a regular file only"});
  EXPECT_EQ(
      load_errors([&] { load_scenario_file(dir.path()); }),
      std::vector<std::string>{dir.path().string() +
                               ": not a regular file (a directory): a scenario is read from a regular file only"});
}

TEST(ScenarioBounds, NulBytesAreAControlCharacterError) {
  std::string text = header + "seed: 1\n" + std::string(1000, '\0');
  EXPECT_EQ(load_errors([&] { load_scenario_text(text, "zeros.yaml"); }),
            std::vector<std::string>{
                "zeros.yaml:5:1: control character 0x00 (a scenario is text: only tabs and line breaks are allowed)"});
}

TEST(ScenarioBounds, InvalidUtf8IsReportedWhereItIs) {
  for (const std::string bad : {"\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xFF"}) {
    EXPECT_EQ(load_errors([&] { load_scenario_text(header + "description: \"é " + bad + "\"\n", "u.yaml"); }),
              std::vector<std::string>{"u.yaml:4:17: invalid UTF-8 (byte 0x" +
                                       std::string(1, "0123456789ABCDEF"[static_cast<unsigned char>(bad[0]) >> 4]) +
                                       std::string(1, "0123456789ABCDEF"[static_cast<unsigned char>(bad[0]) & 0xF]) +
                                       "): a scenario is UTF-8 text"});
  }
  // Every valid form, 1 to 4 bytes, loads.
  EXPECT_NO_THROW(load_scenario_text(header + "seed: 1 # a é € 𝄞\n", "u.yaml"));
}

TEST(ScenarioBounds, NestingDeeperThanSixtyFourIsRefused) {
  std::string text = header + "x: " + std::string(70, '[') + std::string(70, ']') + "\n";
  EXPECT_EQ(load_errors([&] { load_scenario_text(text, "deep.yaml"); }),
            std::vector<std::string>{"deep.yaml:4:67: mappings and lists nested more than 64 deep"});
}

TEST(ScenarioBounds, MoreThanAHundredThousandValuesAreRefused) {
  std::string text = header + "x: [";
  for (int i = 0; i < 120'000; ++i) text += "1,";
  text += "]\n";
  auto errors = load_errors([&] { load_scenario_text(text, "wide.yaml"); });
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].substr(errors[0].find(": ")),
            ": more than 100000 values (scalars, mappings and lists) in one scenario");
}

// The longest duration loads; one millisecond more is refused.
TEST(ScenarioBounds, DurationsUpToAYear) {
  EXPECT_EQ(parse_duration("8760h"), max_duration);
  EXPECT_EQ(parse_duration("525600m"), max_duration);
  EXPECT_EQ(parse_duration("8759h59m59s1000ms"), max_duration);
  EXPECT_EQ(parse_duration("8760h1ms"), std::nullopt);
  EXPECT_EQ(parse_duration("2562048h"), std::nullopt);
  EXPECT_EQ(parse_duration(std::string(50'000, '9') + "h"), std::nullopt);
  EXPECT_EQ(duration_problem("8760h1ms"), R"(duration "8760h1ms" is longer than the maximum of 8760h (365 days))");
  EXPECT_EQ(duration_problem("8760x"), R"(invalid duration "8760x" (write a number and a unit: 250ms, 10s, 2m, 1h))");
  EXPECT_EQ(duration_problem("8760h"), "");
  auto scenario = faults::testing::scenario_with_faults(
      "- {name: r, when: {at: 8760h, for: 8760h}, action: {type: respond, code: 503, retryAfter: 8760h}}");
  EXPECT_EQ(scenario->faults.at(0).when.at, max_duration);
}

// The longest Retry-After is a year in seconds, in the body and in the header.
TEST(ScenarioBounds, LongestRetryAfterFitsTheHeaderAndTheBody) {
  auto scenario = faults::testing::scenario_with_action("{type: respond, code: 429, retryAfter: 8760h}");
  HttpResponse response = std::get<actions::Respond>(scenario->faults.at(0).action).render(RequestInfo{});
  EXPECT_NE(response.body.find(R"("retryAfterSeconds":31536000)"), std::string::npos) << response.body;
  EXPECT_TRUE(std::any_of(response.headers.begin(), response.headers.end(),
                          [](const Header& h) { return h.name == "Retry-After" && h.value == "31536000"; }));
}

TEST(ScenarioBounds, RespondWithoutABodyFor204And304) {
  for (int code : {204, 304}) {
    auto scenario = faults::testing::scenario_with_action("{type: respond, code: " + std::to_string(code) + "}");
    HttpResponse response = std::get<actions::Respond>(scenario->faults.at(0).action).render(RequestInfo{});
    EXPECT_EQ(response.code, code);
    EXPECT_EQ(response.body, "");
    for (const auto& h : response.headers) EXPECT_NE(h.name, "Content-Type");
  }
}

TEST(ScenarioBounds, GlobPatternsUpToOneKibibyte) {
  const std::string longest(max_glob_pattern_bytes, '?');
  auto scenario =
      faults::testing::scenario_with_faults("- {name: r, match: {names: ['" + longest + "']}, action: {type: reset}}");
  EXPECT_EQ(scenario->faults.at(0).match.names.at(0), longest);
}

}  // namespace
}  // namespace faultline::harness::schema
