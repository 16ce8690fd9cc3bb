#pragma once
// One local stack (etcd + kube-apiserver, `scripts/stack up --no-scheduler --no-proxy`) and one
// faultline-proxy process in front of it, for a whole test program. The proxy authenticates
// upstream with the stack's admin identity and serves a certificate minted from the stack's CA.

#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "local_stack.hpp"
#include "proxy_process.hpp"

namespace faultline::testing {

// The kubeconfig (clients through the proxy) that the stack proxy named `name` writes.
inline fs::path proxy_kubeconfig(const LocalStack& stack, const std::string& name) {
  return stack.dir() / (name + ".kubeconfig");
}

// The arguments of the stack proxy named `name`: upstream with the stack's admin identity, serving
// certificates minted from the stack's CA, proxy_kubeconfig(stack, name) written, audit log
// `audit_log`, debug logging.
inline std::vector<std::string> stack_proxy_args(const LocalStack& stack, const std::string& name,
                                                 const std::string& audit_log) {
  return {"--upstream",
          stack.var("FAULTLINE_APISERVER_URL"),
          "--upstream-ca",
          stack.var("FAULTLINE_CA_CERT"),
          "--upstream-kubeconfig",
          stack.var("FAULTLINE_ADMIN_KUBECONFIG"),
          "--ca-cert",
          stack.var("FAULTLINE_CA_CERT"),
          "--ca-key",
          stack.var("FAULTLINE_CA_KEY"),
          "--write-kubeconfig",
          proxy_kubeconfig(stack, name).string(),
          "--audit-log",
          audit_log,
          "--log-level",
          "debug"};
}

// A faultline-proxy process in front of the stack's apiserver, with its files in the stack's dir:
// <name>.kubeconfig (clients through the proxy), <name>.log, <name>-ready.json, and the audit log
// given. Throws (with the proxy's log) when it does not become ready; stopped with SIGTERM by
// stop() or the destructor.
class StackProxy : public ProxyProcess {
 public:
  StackProxy(const LocalStack& stack, const std::string& name, const std::string& audit_log,
             std::optional<OpenFilesLimit> open_files = std::nullopt, const std::vector<std::string>& extra_args = {})
      : ProxyProcess(stack.dir(), name, with(stack_proxy_args(stack, name, audit_log), extra_args), open_files),
        kubeconfig_(proxy_kubeconfig(stack, name)) {}

  const fs::path& kubeconfig() const { return kubeconfig_; }

 private:
  static std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& extra) {
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  fs::path kubeconfig_;
};

class StackWithProxy : public LocalStackEnvironment {
 public:
  StackWithProxy() : LocalStackEnvironment("faultline-proxy-it", "--no-scheduler --no-proxy --nodes 0") {}

  void SetUp() override {
    LocalStackEnvironment::SetUp();
    if (!stack.started()) return;
    try {
      proxy.emplace(stack, "proxy", audit_log().string());
    } catch (const std::exception& e) {
      proxy_error = e.what();
    }
  }

  void TearDown() override {
    if (proxy) proxy_exit_clean = proxy->stop();
    LocalStackEnvironment::TearDown();
  }

  bool ready() const { return stack.started() && proxy.has_value(); }
  std::string why_not_ready() const {
    if (!stack.started()) return "the local stack did not start:\n" + stack.log();
    if (!proxy) return "faultline-proxy did not become ready: " + proxy_error;
    return {};
  }
  std::string var(const std::string& name) const { return stack.var(name); }
  std::string kubectl() const { return var("FAULTLINE_KUBECTL"); }
  const fs::path& dir() const { return stack.dir(); }
  fs::path audit_log() const { return stack.dir() / "proxy-audit.jsonl"; }
  const std::string& proxy_listen() const { return proxy->listen(); }
  const std::string& proxy_admin() const { return proxy->admin(); }

  std::optional<StackProxy> proxy;
  std::string proxy_error;  // why `proxy` could not be started
  bool proxy_exit_clean = false;
};

}  // namespace faultline::testing
