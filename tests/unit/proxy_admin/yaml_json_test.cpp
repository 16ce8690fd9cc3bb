#include "yaml_json.hpp"

#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

namespace faultline::admin {
namespace {

TEST(YamlToJson, TypesPlainScalarsAndKeepsQuotedOnesStrings) {
  const auto v = yaml_to_json(R"(
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
)");
  EXPECT_EQ(boost::json::serialize(v),
            R"({"count":500,"negative":-3,"ratio":2.5E-1,"big":1E3,"quoted_number":"32",)"
            R"("single_quoted_bool":"true","flag":true,"off":false,"nothing":null,"empty":null,)"
            R"("word":"10m","hex":"0x1F","infinite":".inf","list":[1,"2","three"],"nested":{"a":{"b":null}}})");
}

TEST(YamlToJson, RejectsYamlThatDoesNotParse) {
  EXPECT_THROW(yaml_to_json("a: [unclosed"), std::runtime_error);
}

}  // namespace
}  // namespace faultline::admin
