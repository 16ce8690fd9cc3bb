// Every fault action type the registry knows (faults::known_action_types()) has what the recipe
// "Adding a fault action" of docs/development.md asks for, found by convention, not by a list:
//  - unit tests: tests/unit/faults/actions/<name>_test.cpp, suite <Type>Action (faults_unit_tests);
//  - its mapping to the relay's effects, proxy/relay/src/actions/<name>.cpp, and a test of suite
//    ActionEffects whose name begins with <Type> (proxy_relay_unit);
//  - integration tests against the local stack's kube-apiserver (proxy_apiserver_integration): a
//    test of suite ActionOverHttp1 and one of ActionOverHttp2 whose names begin with <Type>;
//  - its rows in the three action tables of docs/scenarios.md, and a rule in full.yaml.
// <name> is the type with '-' as '_' (drop_response), <Type> the type in CamelCase (DropResponse).
// The recipe in turn must name places that exist and these conventions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "faultline/faults/action.hpp"
#include "faultline/faults/scenario.hpp"
#include "files.hpp"

namespace faultline::faults {
namespace {

namespace fs = std::filesystem;
using faultline::testing::slurp;

const fs::path source_dir = FAULTLINE_SOURCE_DIR;

// The conventions, as the recipe states them.
constexpr std::string_view unit_suite_suffix = "Action";
constexpr std::string_view http1_suite = "ActionOverHttp1";
constexpr std::string_view http2_suite = "ActionOverHttp2";
constexpr std::string_view effects_suite = "ActionEffects";
const std::string mapping_file = "proxy/relay/src/actions/<name>.cpp";
const std::string unit_test_file = "tests/unit/faults/actions/<name>_test.cpp";
const std::string scenario_reference = "docs/scenarios.md";
const std::string full_scenario = "tests/data/scenarios/good/full.yaml";
const std::string http1_tests = "tests/integration/proxy/apiserver_test.cpp";
const std::string http2_tests = "tests/integration/proxy/h2_test.cpp";

// "drop-response" -> "DropResponse"
std::string camel(std::string_view type) {
  std::string out;
  bool upper = true;
  for (char c : type) {
    if (c == '-') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// "drop-response" -> "drop_response"
std::string file_name(std::string_view type) {
  std::string out(type);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

using TestList = std::map<std::string, std::vector<std::string>>;  // suite -> test names

// What a gtest program lists with --gtest_list_tests (it runs no test and starts nothing).
TestList list_tests(const std::string& program) {
  TestList tests;
  FILE* pipe = ::popen((program + " --gtest_list_tests 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << program;
    return tests;
  }
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << program << " --gtest_list_tests:\n" << out;
  std::istringstream in(out);
  std::string suite;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find("  #"));  // "  Name/0  # GetParam() = ..."
    if (line.empty()) continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.rfind('.'));
    } else {
      tests[suite].push_back(line.substr(line.find_first_not_of(' ')));
    }
  }
  return tests;
}

// The action type a test is about: the longest type whose CamelCase begins the test's name at a
// word boundary ("WatchResetCuts..." is watch-reset, not a type "watch"); "" when none.
std::string type_of_test(std::string_view test) {
  std::string found;
  for (auto type : known_action_types()) {
    std::string prefix = camel(type);
    if (!test.starts_with(prefix) || prefix.size() <= camel(found).size()) continue;
    if (test.size() == prefix.size() || std::isupper(static_cast<unsigned char>(test[prefix.size()])))
      found = std::string(type);
  }
  return found;
}

// The first cells (code spans stripped) of the rows of the Markdown table whose header line is
// `header`; empty when there is no such table.
std::vector<std::string> first_cells(const std::string& doc, const std::string& header) {
  std::vector<std::string> cells;
  std::istringstream in(doc);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line == header;
      continue;
    }
    if (!line.starts_with("|")) break;
    if (line.starts_with("|---")) continue;
    std::string cell = line.substr(1, line.find('|', 1) - 1);
    cell.erase(0, cell.find_first_not_of(" `"));
    cell.erase(cell.find_last_not_of(" `") + 1);
    cells.push_back(cell);
  }
  return cells;
}

// The section "Adding a fault action" of docs/development.md.
std::string recipe() {
  std::string doc = slurp(source_dir / "docs/development.md");
  auto begin = doc.find("\n## Adding a fault action\n");
  if (begin == std::string::npos) return {};
  auto end = doc.find("\n## ", begin + 1);
  return doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

TEST(ActionCoverage, ConventionsMapTypesToNames) {
  EXPECT_EQ(camel("drop-response"), "DropResponse");
  EXPECT_EQ(camel("goaway"), "Goaway");
  EXPECT_EQ(file_name("watch-reset"), "watch_reset");
  EXPECT_EQ(type_of_test("ResetIsSeenAsEconnreset"), "reset");
  EXPECT_EQ(type_of_test("WatchResetCutsTheStream"), "watch-reset");
  EXPECT_EQ(type_of_test("Resetting"), "");  // not at a word boundary
  EXPECT_EQ(type_of_test("KubectlWatchSeesEvents"), "");
  EXPECT_EQ(first_cells("x\n| type | keys |\n|---|---|\n| `a` | b |\n| `c-*` | |\n\n| `z` |", "| type | keys |"),
            (std::vector<std::string>{"a", "c-*"}));
}

TEST(ActionCoverage, EveryActionTypeHasItsUnitTests) {
  TestList tests = list_tests(FAULTLINE_FAULTS_UNIT_TESTS);
  for (auto type : known_action_types()) {
    SCOPED_TRACE(std::string(type));
    std::string file = unit_test_file;
    file.replace(file.find("<name>"), 6, file_name(type));
    EXPECT_TRUE(fs::exists(source_dir / file)) << file << " is missing";
    std::string suite = camel(type) + std::string(unit_suite_suffix);
    EXPECT_FALSE(tests[suite].empty()) << "faults_unit_tests has no test in suite " << suite;
  }
}

TEST(ActionCoverage, EveryActionTypeHasItsRelayMappingAndItsTest) {
  TestList tests = list_tests(FAULTLINE_RELAY_UNIT_TESTS);
  std::map<std::string, std::vector<std::string>> by_type;
  for (const auto& test : tests[std::string(effects_suite)]) {
    std::string type = type_of_test(test);
    EXPECT_NE(type, "") << effects_suite << "." << test << ": the name does not begin with an action type in CamelCase";
    by_type[type].push_back(test);
  }
  for (auto type : known_action_types()) {
    SCOPED_TRACE(std::string(type));
    std::string file = mapping_file;
    file.replace(file.find("<name>"), 6, file_name(type));
    EXPECT_TRUE(fs::exists(source_dir / file)) << file << " is missing";
    EXPECT_FALSE(by_type[std::string(type)].empty())
        << "proxy_relay_unit has no test " << effects_suite << "." << camel(type) << "... for `" << type << "`";
  }
}

TEST(ActionCoverage, EveryActionTypeHasAnHttp1AndAnHttp2IntegrationTest) {
  TestList tests = list_tests(FAULTLINE_APISERVER_INTEGRATION);
  for (auto suite : {http1_suite, http2_suite}) {
    std::map<std::string, std::vector<std::string>> by_type;
    for (const auto& test : tests[std::string(suite)]) {
      std::string type = type_of_test(test);
      EXPECT_NE(type, "") << suite << "." << test << ": the name does not begin with an action type in CamelCase";
      by_type[type].push_back(test);
    }
    for (auto type : known_action_types()) {
      EXPECT_FALSE(by_type[std::string(type)].empty())
          << "proxy_apiserver_integration has no test " << suite << "." << camel(type) << "... for `" << type << "`";
    }
  }
}

TEST(ActionCoverage, EveryActionTypeHasItsRowsInTheScenarioReference) {
  std::string doc = slurp(source_dir / scenario_reference);
  for (std::string header : {"| type | keys | what the client sees |", "| type | HTTP/1.1 connection | HTTP/2 stream |",
                             "| type | keys |"}) {
    SCOPED_TRACE(header);
    std::vector<std::string> rows = first_cells(doc, header);
    ASSERT_FALSE(rows.empty()) << scenario_reference << " has no table " << header;
    std::set<std::string> known(known_action_types().begin(), known_action_types().end());
    for (auto type : known_action_types()) {
      bool documented = std::any_of(rows.begin(), rows.end(), [&](const std::string& row) {
        return row == type || (row.ends_with("*") && type.starts_with(row.substr(0, row.size() - 1)));
      });
      EXPECT_TRUE(documented) << scenario_reference << ": no row for `" << type << "`";
    }
    for (const auto& row : rows) {
      bool known_row = known.contains(row) || std::any_of(known.begin(), known.end(), [&](const std::string& type) {
                         return row.ends_with("*") && type.starts_with(row.substr(0, row.size() - 1));
                       });
      EXPECT_TRUE(known_row) << scenario_reference << ": a row for `" << row << "`, which is no action type";
    }
  }
}

TEST(ActionCoverage, FullScenarioUsesEveryActionType) {
  auto scenario = load_scenario_file((source_dir / full_scenario).string());
  std::set<std::string> used;
  for (const auto& rule : scenario->faults) used.insert(std::string(action_type(rule.action)));
  for (auto type : known_action_types())
    EXPECT_TRUE(used.contains(std::string(type))) << full_scenario << ": no " << type;
}

TEST(ActionCoverage, TheRecipeNamesPlacesThatExist) {
  std::string text = recipe();
  ASSERT_FALSE(text.empty()) << "docs/development.md has no section \"Adding a fault action\"";
  std::regex span("`([a-z_]+/[^` ]*)`");
  int places = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), span), end; it != end; ++it) {
    std::string path = (*it)[1];
    ++places;
    if (path.find("<name>") == std::string::npos) {
      EXPECT_TRUE(fs::exists(source_dir / path)) << "the recipe names " << path << ", which does not exist";
      continue;
    }
    // A place per action: it exists for at least one action today.
    bool some = false;
    for (auto type : known_action_types()) {
      std::string real = path;
      real.replace(real.find("<name>"), 6, file_name(type));
      some = some || fs::exists(source_dir / real);
    }
    EXPECT_TRUE(some) << "the recipe names " << path << ", which exists for no action";
  }
  EXPECT_GE(places, 10);
}

TEST(ActionCoverage, TheRecipeStatesTheConventionsThisTestChecks) {
  std::string text = recipe();
  for (const std::string& name :
       {unit_test_file, scenario_reference, full_scenario, http1_tests, http2_tests, std::string(http1_suite),
        std::string(http2_suite), "<Type>" + std::string(unit_suite_suffix), std::string("unit.ActionCoverage"),
        mapping_file, std::string(effects_suite)})
    EXPECT_NE(text.find("`" + name + "`"), std::string::npos) << "the recipe does not name `" << name << "`";
  // The suites named are where the tests are.
  EXPECT_THAT(slurp(source_dir / http1_tests), ::testing::HasSubstr("class " + std::string(http1_suite)));
  EXPECT_THAT(slurp(source_dir / http2_tests), ::testing::HasSubstr("class " + std::string(http2_suite)));
}

}  // namespace
}  // namespace faultline::faults
