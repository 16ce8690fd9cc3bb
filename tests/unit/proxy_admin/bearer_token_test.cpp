#include "bearer_token.hpp"

#include <gtest/gtest.h>

namespace faultline::admin {
namespace {

TEST(BearerToken, MatchesOnlyTheExactTokenWithTheBearerScheme) {
  EXPECT_TRUE(bearer_token_matches("Bearer abc123", "abc123"));
  EXPECT_TRUE(bearer_token_matches("BEARER abc123", "abc123"));
  EXPECT_TRUE(bearer_token_matches("Bearer  abc123 ", "abc123"));  // stray spaces are not the token
  EXPECT_FALSE(bearer_token_matches("Bearer abc1234", "abc123"));
  EXPECT_FALSE(bearer_token_matches("Bearer abc12", "abc123"));
  EXPECT_FALSE(bearer_token_matches("Bearer ABC123", "abc123"));
  EXPECT_FALSE(bearer_token_matches("Basic abc123", "abc123"));
  EXPECT_FALSE(bearer_token_matches("abc123", "abc123"));
  EXPECT_FALSE(bearer_token_matches("", "abc123"));
  EXPECT_FALSE(bearer_token_matches("Bearer ", "")) << "an empty expected token must never match";
}

}  // namespace
}  // namespace faultline::admin
