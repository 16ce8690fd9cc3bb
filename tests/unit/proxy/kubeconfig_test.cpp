#include "faultline/net/kubeconfig.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "files.hpp"

namespace faultline::net {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class Kubeconfig : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = generate_ca();
    client_ = mint_serving_cert(ca_, {"client"});
  }
  void TearDown() override { unsetenv("KUBECONFIG"); }
  fs::path write(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return dir_ / name;
  }

  faultline::testing::TempDir tmp_{"faultline-kubeconfig"};
  const fs::path& dir_ = tmp_.path();
  CertifiedKey ca_;
  CertifiedKey client_;
};

TEST_F(Kubeconfig, InlineDataCurrentContext) {
  auto path = write("config", R"(apiVersion: v1
kind: Config
current-context: second
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
- name: c2
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: )" +
                                  base64_encode(ca_.cert_pem) + R"(
users:
- name: u2
  user:
    client-certificate-data: )" + base64_encode(client_.cert_pem) +
                                  R"(
    client-key-data: )" + base64_encode(client_.key_pem) +
                                  R"(
contexts:
- name: first
  context: {cluster: c1, user: u2}
- name: second
  context: {cluster: c2, user: u2, namespace: work}
)");
  KubeconfigContext k = load_kubeconfig(path);
  EXPECT_EQ(k.context_name, "second");
  EXPECT_EQ(k.server, "https://127.0.0.1:6443");
  EXPECT_EQ(k.ca_pem, ca_.cert_pem);
  EXPECT_EQ(k.client_cert_pem, client_.cert_pem);
  EXPECT_EQ(k.client_key_pem, client_.key_pem);
  EXPECT_EQ(k.namespace_name, "work");
  EXPECT_TRUE(k.has_client_cert());
  EXPECT_FALSE(k.insecure_skip_verify);

  KubeconfigContext first = load_kubeconfig(path, "first");
  EXPECT_EQ(first.server, "https://10.0.0.1:6443");
  EXPECT_TRUE(first.insecure_skip_verify);
}

TEST_F(Kubeconfig, FileReferencesAreRelativeToTheKubeconfig) {
  write("pki/ca.crt", ca_.cert_pem);
  write("pki/token", "s3cr3t-token\n");
  auto path = write("config", R"(clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", certificate-authority: pki/ca.crt}
users:
- name: u
  user: {tokenFile: pki/token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  KubeconfigContext k = load_kubeconfig(path);
  EXPECT_EQ(k.ca_pem, ca_.cert_pem);
  EXPECT_EQ(k.token, "s3cr3t-token");
  EXPECT_FALSE(k.has_client_cert());
}

TEST_F(Kubeconfig, KubeconfigEnvMergesFirstWins) {
  auto a = write("a", R"(current-context: ctx
contexts: [{name: ctx, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://a:1"}}]
)");
  auto b = write("b", R"(current-context: other
clusters: [{name: c, cluster: {server: "https://b:1"}}]
users: [{name: u, user: {token: from-b}}]
)");
  setenv("KUBECONFIG", (a.string() + ":" + (dir_ / "missing").string() + ":" + b.string()).c_str(), 1);
  KubeconfigContext k = load_kubeconfig();
  EXPECT_EQ(k.context_name, "ctx");
  EXPECT_EQ(k.server, "https://a:1");
  EXPECT_EQ(k.token, "from-b");
}

TEST_F(Kubeconfig, ErrorsNameFileLineAndProblem) {
  auto path = write("bad", R"(current-context: x
contexts:
- name: x
  context: {cluster: nope}
)");
  try {
    load_kubeconfig(path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string() + ":4:"));
    EXPECT_THAT(e.what(), HasSubstr("no cluster named 'nope'"));
  }
  auto syntax = write("syntax", "clusters: [\n");
  EXPECT_THROW(load_kubeconfig(syntax), std::runtime_error);
  EXPECT_THROW(load_kubeconfig(dir_ / "does-not-exist"), std::runtime_error);
  auto bad_b64 = write("b64", R"(current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "https://a:1", certificate-authority-data: "!!!"}}]
)");
  try {
    load_kubeconfig(bad_b64);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not valid base64"));
  }
}

TEST_F(Kubeconfig, WrittenKubeconfigLoadsBack) {
  KubeconfigSpec spec;
  spec.server = "https://127.0.0.1:7443";
  spec.ca_pem = ca_.cert_pem;
  spec.client_cert_pem = client_.cert_pem;
  spec.client_key_pem = client_.key_pem;
  spec.token = "tok";
  auto path = dir_ / "out" / "kubeconfig";
  write_kubeconfig(path, spec);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  KubeconfigContext k = load_kubeconfig(path);
  EXPECT_EQ(k.server, spec.server);
  EXPECT_EQ(k.ca_pem, spec.ca_pem);
  EXPECT_EQ(k.client_cert_pem, spec.client_cert_pem);
  EXPECT_EQ(k.token, "tok");
}

TEST(Base64, RoundTripsAndRejectsGarbage) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto decoded = base64_decode(base64_encode(s));
    ASSERT_TRUE(decoded.has_value()) << s;
    EXPECT_EQ(*decoded, s);
  }
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_FALSE(base64_decode("abc").has_value());
  EXPECT_FALSE(base64_decode("!!!!").has_value());
}

}  // namespace
}  // namespace faultline::net
