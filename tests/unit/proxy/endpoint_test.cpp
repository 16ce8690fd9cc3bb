#include "faultline/net/endpoint.hpp"

#include <gtest/gtest.h>

namespace faultline::net {
namespace {

TEST(Endpoint, ParsesHostPortForms) {
  Endpoint a = parse_host_port("127.0.0.1:6443");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6443);
  Endpoint b = parse_host_port("[::1]:0");
  EXPECT_EQ(b.host, "::1");
  EXPECT_EQ(b.port, 0);
  EXPECT_EQ(b.to_string(), "[::1]:0");
  EXPECT_EQ(parse_host_port("localhost:80").to_string(), "localhost:80");
}

TEST(Endpoint, RejectsBadHostPort) {
  EXPECT_THROW(parse_host_port("127.0.0.1"), std::invalid_argument);
  EXPECT_THROW(parse_host_port(":80"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("host:65536"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("host:8x"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("::1:80"), std::invalid_argument);
}

TEST(Endpoint, ParsesHttpsUrls) {
  HttpsUrl a = parse_https_url("https://127.0.0.1:6443");
  EXPECT_EQ(a.endpoint.host, "127.0.0.1");
  EXPECT_EQ(a.endpoint.port, 6443);
  EXPECT_EQ(a.base_path, "");
  HttpsUrl b = parse_https_url("https://kubernetes.default.svc/");
  EXPECT_EQ(b.endpoint.port, 443);
  EXPECT_EQ(b.base_path, "");
  HttpsUrl c = parse_https_url("https://[::1]:8443/prefix/");
  EXPECT_EQ(c.endpoint.host, "::1");
  EXPECT_EQ(c.base_path, "/prefix");
}

TEST(Endpoint, RejectsNonHttpsUrls) {
  EXPECT_THROW(parse_https_url("http://127.0.0.1:6443"), std::invalid_argument);
  EXPECT_THROW(parse_https_url("127.0.0.1:6443"), std::invalid_argument);
  EXPECT_THROW(parse_https_url("https://host:99999"), std::invalid_argument);
}

}  // namespace
}  // namespace faultline::net
