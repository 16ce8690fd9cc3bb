#pragma once
// One local stack (etcd + kube-apiserver, `scripts/stack up --no-scheduler --no-proxy`) and one
// faultline-proxy process in front of it, for a whole test program. The proxy authenticates
// upstream with the stack's admin identity and serves a certificate minted from the stack's CA.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "local_stack.hpp"

namespace faultline::testing {

// A faultline-proxy process in front of the stack's apiserver, with its files in `dir`:
// <name>.kubeconfig (clients through the proxy), <name>.log, <name>-ready.json, and the audit log
// given. Stopped with SIGTERM by stop() or the destructor.
// RLIMIT_NOFILE the proxy process starts with.
struct OpenFilesLimit {
  rlim_t soft;
  rlim_t hard;
};

class ProxyProcess {
 public:
  ProxyProcess(const LocalStack& stack, const std::string& name, const std::string& audit_log,
               std::optional<OpenFilesLimit> open_files = std::nullopt)
      : dir_(stack.dir()), name_(name), open_files_(open_files) {
    std::vector<std::string> args = {binary(),
                                     "--listen", "127.0.0.1:0",
                                     "--admin", "127.0.0.1:0",
                                     "--upstream", stack.var("FAULTLINE_APISERVER_URL"),
                                     "--upstream-ca", stack.var("FAULTLINE_CA_CERT"),
                                     "--upstream-kubeconfig", stack.var("FAULTLINE_ADMIN_KUBECONFIG"),
                                     "--ca-cert", stack.var("FAULTLINE_CA_CERT"),
                                     "--ca-key", stack.var("FAULTLINE_CA_KEY"),
                                     "--write-kubeconfig", kubeconfig().string(),
                                     "--audit-log", audit_log,
                                     "--ready-file", (dir_ / (name_ + "-ready.json")).string(),
                                     "--log-level", "debug"};
    pid_ = ::fork();
    if (pid_ == 0) exec(args);
    wait_ready();
  }
  ~ProxyProcess() { stop(); }
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;

  // SIGTERM and wait; true when it exited with status 0.
  bool stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exit_clean_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      pid_ = -1;
    }
    return exit_clean_;
  }

  bool ready() const { return !listen_.empty() && !admin_.empty(); }
  pid_t pid() const { return pid_; }
  const std::string& listen() const { return listen_; }  // 127.0.0.1:P
  const std::string& admin() const { return admin_; }    // 127.0.0.1:Q
  fs::path kubeconfig() const { return dir_ / (name_ + ".kubeconfig"); }
  std::string log() const { return slurp(dir_ / (name_ + ".log")); }

 private:
  static std::string binary() { return std::string(FAULTLINE_BINARY_DIR) + "/proxy/faultline-proxy"; }

  [[noreturn]] void exec(std::vector<std::string>& args) {
    std::FILE* out = std::fopen((dir_ / (name_ + ".log")).c_str(), "w");
    ::dup2(::fileno(out), 1);
    ::dup2(::fileno(out), 2);
    if (open_files_) {
      rlimit limit{open_files_->soft, open_files_->hard};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) std::perror("setrlimit RLIMIT_NOFILE");
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("execv faultline-proxy");
    ::_exit(127);
  }

  void wait_ready() {
    for (int i = 0; i < 300 && !ready(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string ready_json = slurp(dir_ / (name_ + "-ready.json"));
      auto field = [&](const std::string& key) {
        auto at = ready_json.find("\"" + key + "\":\"");
        if (at == std::string::npos) return std::string();
        at += key.size() + 4;
        return ready_json.substr(at, ready_json.find('"', at) - at);
      };
      listen_ = field("listen");
      admin_ = field("admin");
    }
  }

  fs::path dir_;
  std::string name_;
  std::optional<OpenFilesLimit> open_files_;
  pid_t pid_ = -1;
  bool exit_clean_ = false;
  std::string listen_;
  std::string admin_;
};

class StackWithProxy : public LocalStackEnvironment {
 public:
  StackWithProxy() : LocalStackEnvironment("faultline-proxy-it", "--no-scheduler --no-proxy --nodes 0") {}

  void SetUp() override {
    LocalStackEnvironment::SetUp();
    if (stack.started()) proxy.emplace(stack, "proxy", audit_log().string());
  }

  void TearDown() override {
    if (proxy) proxy_exit_clean = proxy->stop();
    LocalStackEnvironment::TearDown();
  }

  bool ready() const { return stack.started() && proxy && proxy->ready(); }
  std::string why_not_ready() const {
    if (!stack.started()) return "the local stack did not start:\n" + stack.log();
    return "faultline-proxy did not become ready; its log:\n" + (proxy ? proxy->log() : std::string());
  }
  std::string var(const std::string& name) const { return stack.var(name); }
  std::string kubectl() const { return var("FAULTLINE_KUBECTL"); }
  const fs::path& dir() const { return stack.dir(); }
  fs::path audit_log() const { return stack.dir() / "proxy-audit.jsonl"; }
  const std::string& proxy_listen() const { return proxy->listen(); }
  const std::string& proxy_admin() const { return proxy->admin(); }

  std::optional<ProxyProcess> proxy;
  bool proxy_exit_clean = false;
};

}  // namespace faultline::testing
