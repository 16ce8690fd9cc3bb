#pragma once
// One local stack (etcd + kube-apiserver, `scripts/stack up --no-scheduler --no-proxy`) and one
// faultline-proxy process in front of it, for a whole test program. The proxy authenticates
// upstream with the stack's admin identity and serves a certificate minted from the stack's CA.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace faultline::testing {

namespace fs = std::filesystem;

// Runs a shell command; its stdout+stderr in *output, the exit code returned.
inline int run_shell(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) output->append(buffer.data(), n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class StackWithProxy : public ::testing::Environment {
 public:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("faultline-proxy-it-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    std::cerr << "[stack] starting the local stack in " << dir << " ...\n";
    stack_started = run_shell(script() + " up --no-scheduler --no-proxy --nodes 0 --run-dir " + dir.string(), &log) == 0;
    std::ifstream env(dir / "env");
    for (std::string line; std::getline(env, line);)
      if (auto eq = line.find('='); eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
    if (stack_started) start_proxy();
  }

  void TearDown() override {
    if (proxy_pid > 0) {
      ::kill(proxy_pid, SIGTERM);
      int status = 0;
      ::waitpid(proxy_pid, &status, 0);
      proxy_exit_clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    std::string ignored;
    run_shell(script() + " down --run-dir " + dir.string(), &ignored);
  }

  bool ready() const { return stack_started && proxy_ready; }
  std::string why_not_ready() const {
    if (!stack_started) return "the local stack did not start:\n" + log;
    return "faultline-proxy did not become ready; its log:\n" + slurp(dir / "proxy.log");
  }
  std::string var(const std::string& name) const {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  }
  std::string kubectl() const { return var("FAULTLINE_KUBECTL"); }

  fs::path dir;
  bool stack_started = false;
  bool proxy_ready = false;
  bool proxy_exit_clean = false;
  pid_t proxy_pid = -1;
  std::string log;
  std::map<std::string, std::string> vars;
  std::string proxy_listen;  // 127.0.0.1:P
  std::string proxy_admin;   // 127.0.0.1:Q

 private:
  static std::string script() { return std::string(FAULTLINE_SOURCE_DIR) + "/scripts/stack"; }
  static std::string proxy_binary() { return std::string(FAULTLINE_BINARY_DIR) + "/proxy/faultline-proxy"; }

  void start_proxy() {
    std::vector<std::string> args = {proxy_binary(),
                                     "--listen", "127.0.0.1:0",
                                     "--admin", "127.0.0.1:0",
                                     "--upstream", var("FAULTLINE_APISERVER_URL"),
                                     "--upstream-ca", var("FAULTLINE_CA_CERT"),
                                     "--upstream-kubeconfig", var("FAULTLINE_ADMIN_KUBECONFIG"),
                                     "--ca-cert", var("FAULTLINE_CA_CERT"),
                                     "--ca-key", var("FAULTLINE_CA_KEY"),
                                     "--write-kubeconfig", (dir / "proxy.kubeconfig").string(),
                                     "--audit-log", (dir / "proxy-audit.jsonl").string(),
                                     "--ready-file", (dir / "proxy-ready.json").string(),
                                     "--log-level", "debug"};
    proxy_pid = ::fork();
    if (proxy_pid == 0) {
      std::FILE* out = std::fopen((dir / "proxy.log").c_str(), "w");
      ::dup2(::fileno(out), 1);
      ::dup2(::fileno(out), 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::perror("execv faultline-proxy");
      ::_exit(127);
    }
    for (int i = 0; i < 300 && !proxy_ready; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string ready = slurp(dir / "proxy-ready.json");
      auto field = [&](const std::string& key) {
        auto at = ready.find("\"" + key + "\":\"");
        if (at == std::string::npos) return std::string();
        at += key.size() + 4;
        return ready.substr(at, ready.find('"', at) - at);
      };
      proxy_listen = field("listen");
      proxy_admin = field("admin");
      proxy_ready = !proxy_listen.empty() && !proxy_admin.empty();
    }
  }
};

}  // namespace faultline::testing
