#pragma once
// The local stack as tests use it: `scripts/stack up` in a temporary run dir, the DIR/env file it
// writes, kubectl with the stack's admin identity, `scripts/stack down`; plus the shell helpers
// every stack test needs (run a command capturing its output, quote an argument).

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "files.hpp"  // slurp, TempDir

namespace faultline::testing {

namespace fs = std::filesystem;

// The repository and the build tree the tests were built from.
inline const fs::path kSource = FAULTLINE_SOURCE_DIR;
inline const fs::path kBinary = FAULTLINE_BINARY_DIR;

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not be run or was killed by a signal
  std::string output;  // stdout and stderr
};

// Runs `command` with /bin/sh, stdout and stderr captured together.
CommandResult run_command(const std::string& command);
// `s` as one single-quoted shell word.
std::string shell_quote(const std::string& s);
// KEY=VALUE lines (DIR/env of `scripts/stack up`); other lines are skipped.
std::map<std::string, std::string> read_env_file(const fs::path& path);
// The environment variable `name`, or `fallback` when it is unset or empty.
std::string env_or(const char* name, const std::string& fallback);
// <source>/scripts/stack.
std::string stack_script();
// kubectl of the stack (FAULTLINE_KUBECTL) with its admin kubeconfig, then `args`, as a command.
std::string admin_kubectl_command(const std::map<std::string, std::string>& env, const std::string& args);

// One local stack in the run dir <tmp>/<name>-<pid>, emptied before `up`. Not started until up().
class LocalStack {
 public:
  explicit LocalStack(const std::string& name);

  // `<env_prefix> scripts/stack up <args> --run-dir DIR`, then DIR/env is read. env_prefix sets
  // environment variables for the script, e.g. "FAULTLINE_PROXY_BIN='...'".
  const CommandResult& up(const std::string& args, const std::string& env_prefix = "");
  // `scripts/stack down --run-dir DIR`.
  CommandResult down() const;

  // `up` succeeded and wrote the env file.
  bool started() const { return up_.exit_code == 0 && !var("FAULTLINE_ADMIN_KUBECONFIG").empty(); }
  const std::string& log() const { return up_.output; }  // what `up` printed
  const fs::path& dir() const { return dir_; }
  fs::path env_file() const { return dir_ / "env"; }
  const std::map<std::string, std::string>& vars() const { return vars_; }
  std::string var(const std::string& name) const;  // "" when the env file has no such key
  std::string kubectl(const std::string& args) const { return admin_kubectl_command(vars_, args); }

 private:
  fs::path dir_;
  CommandResult up_;
  std::map<std::string, std::string> vars_;
};

// A LocalStack for a whole test program: up before the first test, down after the last. Tests
// check started() (and show log()) themselves, so a stack that did not start fails every test.
class LocalStackEnvironment : public ::testing::Environment {
 public:
  LocalStackEnvironment(const std::string& name, std::string up_args);
  void SetUp() override;
  void TearDown() override;

  LocalStack stack;

 private:
  std::string up_args_;
};

}  // namespace faultline::testing
