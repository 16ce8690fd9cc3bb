#include "faultline/proxy/headers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline::proxy {
namespace {

TEST(Headers, HopByHopIsCaseInsensitiveAndKeepsEndToEndHeaders) {
  for (const char* h : {"Connection", "keep-alive", "Proxy-Connection", "TE", "Trailer", "Upgrade",
                        "Proxy-Authorization", "Proxy-Authenticate"}) {
    EXPECT_TRUE(is_hop_by_hop(h)) << h;
  }
  for (const char* h : {"Authorization", "Content-Type", "Content-Length", "Transfer-Encoding", "Audit-Id", "Host"}) {
    EXPECT_FALSE(is_hop_by_hop(h)) << h;
  }
}

TEST(Headers, ConnectionTokens) {
  EXPECT_THAT(connection_tokens(" Upgrade , X-Custom,close"), ::testing::ElementsAre("upgrade", "x-custom", "close"));
  EXPECT_THAT(connection_tokens(""), ::testing::IsEmpty());
}

// The relay's one rule for both directions: hop-by-hop fields and those Connection names are
// dropped, end-to-end ones kept; an upgrade keeps Connection and Upgrade (even when named).
TEST(Headers, DropsHopByHopAndNamedFieldsAndAnUpgradeKeepsItsHandshake) {
  using boost::beast::http::field;
  const std::vector<std::string> named = connection_tokens("X-Named, upgrade");
  EXPECT_TRUE(drops_field(field::keep_alive, "Keep-Alive", {}, false));
  EXPECT_TRUE(drops_field(field::connection, "Connection", {}, false));
  EXPECT_TRUE(drops_field(field::unknown, "x-named", named, false));
  EXPECT_FALSE(drops_field(field::unknown, "X-Kept", named, false));
  EXPECT_FALSE(drops_field(field::content_length, "Content-Length", named, false));
  EXPECT_TRUE(drops_field(field::upgrade, "Upgrade", named, false));
  // An upgrade (a 101, or a request asking for one) keeps its handshake, and drops the rest.
  EXPECT_FALSE(drops_field(field::upgrade, "Upgrade", named, true));
  EXPECT_FALSE(drops_field(field::connection, "Connection", named, true));
  EXPECT_TRUE(drops_field(field::keep_alive, "Keep-Alive", named, true));
  EXPECT_TRUE(drops_field(field::unknown, "X-Named", named, true));
}

TEST(Headers, AcceptProtobufBecomesJson) {
  EXPECT_EQ(accept_json_instead_of_protobuf("application/vnd.kubernetes.protobuf, application/json"),
            "application/json");
  EXPECT_EQ(accept_json_instead_of_protobuf("application/vnd.kubernetes.protobuf;stream=watch"), "application/json");
  EXPECT_EQ(accept_json_instead_of_protobuf(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table"),
            "application/json;as=Table");
  EXPECT_EQ(accept_json_instead_of_protobuf("application/json, */*"), "application/json, */*");
}

TEST(Headers, JsonContentType) {
  EXPECT_TRUE(is_json_content_type("application/json"));
  EXPECT_TRUE(is_json_content_type("Application/JSON; charset=utf-8"));
  EXPECT_FALSE(is_json_content_type("application/vnd.kubernetes.protobuf;stream=watch"));
  EXPECT_FALSE(is_json_content_type(""));
}

}  // namespace
}  // namespace faultline::proxy
