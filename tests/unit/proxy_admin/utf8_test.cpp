#include "faultline/audit/utf8.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <string>

namespace faultline::audit {
namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST(Utf8, WellFormedTextIsKeptAsItIs) {
  for (std::string text : {std::string(""), std::string("kubectl/v1.31.0 (linux/amd64)"), std::string("caf\xC3\xA9"),
                           std::string("\xE2\x82\xAC 20"), std::string("\xF0\x9F\x98\x80"),
                           std::string("\xEF\xBF\xBF\xF4\x8F\xBF\xBF"), std::string("nul\0byte", 8)}) {
    EXPECT_TRUE(is_valid_utf8(text)) << text;
    EXPECT_EQ(to_valid_utf8(text), text);
  }
}

// The Unicode Standard's examples of U+FFFD for maximal subparts (chapter 3, "U+FFFD Substitution").
TEST(Utf8, EachMaximalIllFormedSubpartBecomesOneReplacementCharacter) {
  EXPECT_EQ(to_valid_utf8("a\x80z"), "a" + R + "z");            // lone continuation byte
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), R + R);                  // overlong: C0 never starts one
  EXPECT_EQ(to_valid_utf8("\xE0\x80\xAF"), R + R + R);          // overlong three-byte form
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), R + R + R);          // a surrogate
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80"), R + R + R + R);  // above U+10FFFF
  EXPECT_EQ(to_valid_utf8("\xE2\x82"
                          "A"),
            R + "A");                           // truncated, then ASCII
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98"), R);  // truncated at the end
  EXPECT_EQ(to_valid_utf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + R + R + R + "b" + R + "c" + R + R + "d");  // the standard's table 3-8
  EXPECT_EQ(to_valid_utf8("\xFF\xFE"), R + R);
  EXPECT_FALSE(is_valid_utf8("\xC3"));
}

TEST(Utf8, EveryOneAndTwoByteInputBecomesTextThatJsonParsersAccept) {
  // Boost.JSON's parser rejects ill-formed UTF-8 (as the harness's decoder does); its serializer
  // writes string bytes unchecked.
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      std::string input(1, static_cast<char>(a));
      if (b >= 0) input += static_cast<char>(b);
      const std::string json = boost::json::serialize(boost::json::string(to_valid_utf8(input)));
      boost::system::error_code ec;
      boost::json::parse(json, ec);
      ASSERT_FALSE(ec) << "bytes " << a << " " << b << ": " << ec.message();
    }
  }
}

}  // namespace
}  // namespace faultline::audit
