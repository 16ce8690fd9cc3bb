// Scenario YAML as JSON (GET /v1/scenario?format=json, watch-inject object templates): one
// conversion, YAML 1.2 core-schema typing of plain scalars, always valid JSON.
#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include "faultline/faults/yaml_json.hpp"
#include "scenario_helpers.hpp"

namespace faultline::faults {
namespace {

using testing::load_errors;

TEST(YamlToJson, TypesPlainScalarsAndKeepsQuotedOnesStrings) {
  EXPECT_EQ(yaml_to_json(R"(
count: 500
negative: -3
ratio: 0.25
big: 1e3
quoted_number: "32"
single_quoted_bool: 'true'
flag: true
off: False
nothing: ~
empty:
word: 10m
hex: 0x1F
infinite: .inf
list: [1, "2", three]
nested: {a: {b: null}}
)"),
            R"({"count":500,"negative":-3,"ratio":2.5E-1,"big":1E3,"quoted_number":"32",)"
            R"("single_quoted_bool":"true","flag":true,"off":false,"nothing":null,"empty":null,)"
            R"("word":"10m","hex":"0x1F","infinite":".inf","list":[1,"2","three"],"nested":{"a":{"b":null}}})");
}

// The core schema's spellings of null and booleans are all typed; YAML 1.1 words (yes, on) and
// numbers JSON cannot hold are not: they stay the text written.
TEST(YamlToJson, CoreSchemaSpellingsAndWhatJsonCannotHold) {
  EXPECT_EQ(yaml_to_json("[True, TRUE, FALSE, NULL, Null, yes, on, inf, -.inf, .NaN, nan, +7, 007, .5, 1., -1.5e-3, "
                         "1e, 1.2.3, 9223372036854775807, 9223372036854775808, 1e400]"),
            R"([true,true,false,null,null,"yes","on","inf","-.inf",".NaN","nan",7,7,5E-1,1E0,-1.5E-3,"1e","1.2.3",)"
            R"(9223372036854775807,9.223372036854776E18,"1e400"])");
}

TEST(YamlToJson, AFiftyThousandDigitNumberStaysAString) {
  const std::string digits(50'000, '7');
  std::string json = yaml_to_json("description: " + digits + "\n");
  EXPECT_EQ(json, R"({"description":")" + digits + "\"}");
  EXPECT_NO_THROW(boost::json::parse(json));
}

TEST(YamlToJson, RejectsYamlThatDoesNotParse) {
  EXPECT_EQ(load_errors([] { yaml_to_json("a: [unclosed"); }),
            std::vector<std::string>{"scenario:1:1: invalid YAML: end of sequence flow not found"});
}

// watch-inject templates are typed by the same conversion as the admin API's JSON view.
TEST(YamlToJson, WatchInjectTemplatesUseTheSameTyping) {
  const std::string object = "{a: True, b: NULL, c: .inf, d: inf, e: 1e3, f: '5'}";
  auto scenario = testing::scenario_with_faults(
      "- {name: r, match: {verbs: [watch]}, action: {type: watch-inject, object: " + object + "}}");
  const auto& inject = std::get<actions::WatchInject>(scenario->faults.at(0).action);
  EXPECT_EQ(inject.object_json, yaml_to_json(object));
  EXPECT_EQ(inject.object_json, R"({"a":true,"b":null,"c":".inf","d":"inf","e":1E3,"f":"5"})");
}

}  // namespace
}  // namespace faultline::faults
