#include "local_stack.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

namespace faultline::testing {

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed for: " + command;
    return result;
  }
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::map<std::string, std::string> read_env_file(const fs::path& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (auto eq = line.find('='); eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string stack_script() { return std::string(FAULTLINE_SOURCE_DIR) + "/scripts/stack"; }

std::string admin_kubectl_command(const std::map<std::string, std::string>& env, const std::string& args) {
  auto value = [&env](const std::string& key) {
    auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
  };
  return shell_quote(value("FAULTLINE_KUBECTL")) + " --kubeconfig " + shell_quote(value("FAULTLINE_ADMIN_KUBECONFIG")) +
         " " + args;
}

LocalStack::LocalStack(const std::string& name)
    : dir_(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {}

const CommandResult& LocalStack::up(const std::string& args, const std::string& env_prefix) {
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  std::string command = shell_quote(stack_script()) + " up " + args + " --run-dir " + shell_quote(dir_.string());
  if (!env_prefix.empty()) command = env_prefix + " " + command;
  up_ = run_command(command);
  vars_ = read_env_file(env_file());
  return up_;
}

CommandResult LocalStack::down() const {
  CommandResult result = run_command(shell_quote(stack_script()) + " down --run-dir " + shell_quote(dir_.string()));
  // The run dir holds etcd's data (its write-ahead log alone is 64 MB, preallocated) and the
  // components' logs. Kept when the stack did not come down cleanly, when a test of this program
  // failed (the logs are the evidence) or with FAULTLINE_KEEP_TEST_DIRS set; removed otherwise:
  // every test program left one behind, and a few days of test runs filled this machine's disk.
  const auto* unit = ::testing::UnitTest::GetInstance();
  const bool failed = unit->Failed() || ::testing::Test::HasFailure();
  if (result.exit_code == 0 && !failed && std::getenv("FAULTLINE_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  } else {
    std::cerr << "[stack] run dir kept: " << dir_ << "\n";
  }
  return result;
}

std::string LocalStack::var(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? std::string() : it->second;
}

LocalStackEnvironment::LocalStackEnvironment(const std::string& name, std::string up_args)
    : stack(name), up_args_(std::move(up_args)) {}

void LocalStackEnvironment::SetUp() {
  std::cerr << "[stack] starting the local stack in " << stack.dir() << " ...\n";
  stack.up(up_args_);
}

void LocalStackEnvironment::TearDown() { stack.down(); }

}  // namespace faultline::testing
