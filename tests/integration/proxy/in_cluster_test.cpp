// faultline-proxy --upstream-in-cluster against the REAL kube-apiserver of the local stack, set up
// as a pod would see it: KUBERNETES_SERVICE_HOST/PORT in the environment, and a service-account
// directory (token + ca.crt) laid out as the kubelet lays it out (token -> ..data/token, ..data ->
// a timestamped directory, swapped atomically on rotation). The tokens are real ServiceAccount
// tokens of the stack's apiserver (`kubectl create token`), and the apiserver itself says whose
// token it saw (a SelfSubjectReview).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstdlib>
#include <optional>

#include "faultline/net/certs.hpp"
#include "proxy_test.hpp"

namespace faultline::testing {
namespace {

using ::testing::HasSubstr;

class InClusterTest : public ProxyTest {
 protected:
  // A real token of ServiceAccount `name` in this test's namespace (created here).
  std::string service_account_token(const std::string& name) {
    kubectl_direct("-n " + ns_ + " create serviceaccount " + name);
    std::string token = kubectl_direct("-n " + ns_ + " create token " + name + " --duration 1h");
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    return token;
  }

  // The kubelet's atomic writer: the files live in a new directory, `..data` is swapped to it with
  // a rename, and `token` / `ca.crt` are symlinks through `..data`.
  void project(const std::string& token) {
    const fs::path version = sa_dir_.path() / ("..v" + std::to_string(++versions_));
    net::write_file(version / "token", token + "\n", true);
    net::write_file(version / "ca.crt", net::read_file(env->var("FAULTLINE_CA_CERT")));
    const fs::path tmp = sa_dir_.path() / "..data_tmp";
    fs::create_directory_symlink(version.filename(), tmp);
    fs::rename(tmp, sa_dir_.path() / "..data");
    for (const char* file : {"token", "ca.crt"}) {
      if (!fs::is_symlink(sa_dir_.path() / file)) fs::create_symlink(fs::path("..data") / file, sa_dir_.path() / file);
    }
  }

  // faultline-proxy --upstream-in-cluster with the pod's environment (the apiserver's address).
  void start_proxy() {
    const auto upstream = net::parse_https_url(env->var("FAULTLINE_APISERVER_URL")).endpoint;
    ::setenv("KUBERNETES_SERVICE_HOST", upstream.host.c_str(), 1);
    ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(upstream.port).c_str(), 1);
    try {
      proxy_.emplace(env->dir(), "in-cluster",
                     std::vector<std::string>{"--upstream-in-cluster", "--service-account-dir", sa_dir_.path().string(),
                                              "--ca-cert", env->var("FAULTLINE_CA_CERT"), "--ca-key",
                                              env->var("FAULTLINE_CA_KEY"), "--log-level", "debug"});
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
  }

  // The user the apiserver authenticated for a SelfSubjectReview sent through the in-cluster
  // proxy by curl (HTTP/1.1 or HTTP/2), with `authorization` as the client's own header if given.
  std::string whoami(const std::string& protocol, const std::string& authorization = {}) {
    std::string cmd = "curl -sS " + protocol + " --cacert " + shell_quote(env->var("FAULTLINE_CA_CERT")) +
                      " -H 'Content-Type: application/json' -X POST --data " +
                      shell_quote(R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})");
    if (!authorization.empty()) cmd += " -H " + shell_quote("Authorization: " + authorization);
    cmd += " " + shell_quote("https://" + proxy_->listen() + "/apis/authentication.k8s.io/v1/selfsubjectreviews");
    CommandResult result = run_command(cmd);
    EXPECT_EQ(result.exit_code, 0) << cmd << "\n" << result.output;
    try {
      return std::string(
          boost::json::parse(result.output).at("status").at("userInfo").at("username").as_string().c_str());
    } catch (const std::exception&) {
      return "(no user in: " + result.output + ")";
    }
  }

  std::string user(const std::string& service_account) {
    return "system:serviceaccount:" + ns_ + ":" + service_account;
  }

  TempDir sa_dir_{"faultline-in-cluster-sa"};
  int versions_ = 0;
  std::optional<ProxyProcess> proxy_;
};

TEST_F(InClusterTest, TheRotatedServiceAccountTokenIsWhatTheApiserverSeesNext) {
  const std::string first = service_account_token("first");
  const std::string second = service_account_token("second");
  project(first);
  start_proxy();
  ASSERT_TRUE(proxy_.has_value());
  EXPECT_THAT(proxy_->log(), HasSubstr("in-cluster upstream https://127.0.0.1:"));

  EXPECT_EQ(whoami("--http1.1"), user("first"));
  EXPECT_EQ(whoami("--http2"), user("first"));

  project(second);  // the kubelet rotates the token while the proxy runs
  EXPECT_EQ(whoami("--http1.1"), user("second"));
  EXPECT_EQ(whoami("--http2"), user("second"));

  // A client's own Authorization passes through (the sidecar: the scheduler's own token).
  const std::string own = service_account_token("own");
  EXPECT_EQ(whoami("--http1.1", "Bearer " + own), user("own"));
  EXPECT_EQ(whoami("--http2", "Bearer " + own), user("own"));

  // The token file gone for a moment: the last token is kept, and the proxy says so.
  fs::remove(sa_dir_.path() / "..data");
  EXPECT_EQ(whoami("--http1.1"), user("second"));
  EXPECT_THAT(proxy_->log(), HasSubstr("still sending the token read before"));
  EXPECT_TRUE(proxy_->stop());
}

TEST_F(InClusterTest, WithoutThePodEnvironmentOrTokenTheProxyRefusesToStart) {
  // The proxy run with `env_args` in front; `timeout`: a proxy that started would never exit.
  auto start = [&](const std::string& env_args) {
    return run_command("timeout 30 env " + env_args + " " + shell_quote(proxy_binary().string()) +
                       " --upstream-in-cluster --service-account-dir " + shell_quote(sa_dir_.path().string()) +
                       " --listen 127.0.0.1:0 --admin 127.0.0.1:0");
  };
  // No KUBERNETES_SERVICE_HOST/PORT: not a pod.
  CommandResult no_env = start("-u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT");
  EXPECT_EQ(no_env.exit_code, 1) << no_env.output;
  EXPECT_THAT(no_env.output, HasSubstr("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"));

  // An empty token file.
  project("");
  CommandResult empty = start("KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=6443");
  EXPECT_EQ(empty.exit_code, 1) << empty.output;
  EXPECT_THAT(empty.output, HasSubstr("service-account token file is empty"));
}

}  // namespace
}  // namespace faultline::testing
