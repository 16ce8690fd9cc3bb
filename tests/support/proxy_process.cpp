#include "proxy_process.hpp"

#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "local_stack.hpp"

namespace faultline::testing {

namespace {

using Clock = std::chrono::steady_clock;

unsigned short port_of(const std::string& host_port) {
  return static_cast<unsigned short>(std::stoi(host_port.substr(host_port.rfind(':') + 1)));
}

// For the forked child: only async-signal-safe calls between fork and exec.
void write_stderr(const char* message) {
  std::size_t n = 0;
  while (message[n] != '\0') ++n;
  [[maybe_unused]] auto ignored = ::write(2, message, n);
}

std::atomic<int> memory_measured{0};

// The environment of a proxy about to start: ours, with ASan's quarantine off while a
// MemoryMeasured lives (a later option in ASAN_OPTIONS overrides an earlier one).
std::vector<std::string> proxy_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  if (memory_measured.load() == 0) return env;
  constexpr std::string_view kQuarantineOff = "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
  auto asan = std::find_if(env.begin(), env.end(), [](const std::string& v) { return v.starts_with("ASAN_OPTIONS="); });
  if (asan != env.end()) *asan += ":" + std::string(kQuarantineOff);
  else env.push_back("ASAN_OPTIONS=" + std::string(kQuarantineOff));
  return env;
}

}  // namespace

MemoryMeasured::MemoryMeasured() { ++memory_measured; }
MemoryMeasured::~MemoryMeasured() { --memory_measured; }

fs::path proxy_binary() {
  if (const char* env = std::getenv("FAULTLINE_PROXY_BIN"); env && *env) return env;
  return fs::path(FAULTLINE_BINARY_DIR) / "proxy" / "faultline-proxy";
}

ProxyProcess::ProxyProcess(const fs::path& dir, const std::string& name, const std::vector<std::string>& args,
                           std::optional<OpenFilesLimit> open_files, const fs::path& binary)
    : dir_(dir), name_(name) {
  const fs::path ready_file = dir_ / (name_ + "-ready.json");
  std::error_code ec;
  fs::remove(ready_file, ec);  // left by an earlier proxy of this name: not this one's

  std::vector<std::string> argv_strings = {binary.string(), "--listen",     "127.0.0.1:0",      "--admin",
                                           "127.0.0.1:0",   "--ready-file", ready_file.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = proxy_environment();
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string log_file = log_path().string();

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed for faultline-proxy " + name_);
  if (pid_ == 0) {
    int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (fd > 2) ::close(fd);
    }
    if (open_files) {
      rlimit limit{open_files->soft, open_files->hard};
      if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) write_stderr("setrlimit RLIMIT_NOFILE failed\n");
    }
    ::execve(argv[0], argv.data(), envp.data());
    write_stderr("execve faultline-proxy failed\n");
    ::_exit(127);
  }
  try {
    wait_ready(ready_file);
  } catch (...) {
    kill_now();
    throw;
  }
}

ProxyProcess::~ProxyProcess() { stop(); }

void ProxyProcess::wait_ready(const fs::path& ready_file) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(ready_file)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::string how = WIFEXITED(status) ? "with status " + std::to_string(WEXITSTATUS(status))
                                          : "by signal " + std::to_string(WTERMSIG(status));
      throw std::runtime_error("faultline-proxy " + name_ + " exited " + how + " before it was ready; its log (" +
                               log_path().string() + "):\n" + log());
    }
    if (Clock::now() > deadline) {
      throw std::runtime_error("faultline-proxy " + name_ + " not ready after 60 s; its log (" + log_path().string() +
                               "):\n" + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The proxy renames the finished file into place: it is complete once it exists.
  const std::string ready_json = slurp(ready_file);
  try {
    auto ready = boost::json::parse(ready_json).as_object();
    listen_ = std::string(ready.at("listen").as_string());
    admin_ = std::string(ready.at("admin").as_string());
    port_ = port_of(listen_);
    admin_port_ = port_of(admin_);
  } catch (const std::exception& e) {
    throw std::runtime_error("faultline-proxy " + name_ + ": unexpected ready file " + ready_file.string() + " (" +
                             e.what() + "): " + ready_json + "\nits log:\n" + log());
  }
}

bool ProxyProcess::stop() {
  if (pid_ <= 0) return exit_clean_;
  ::kill(pid_, SIGTERM);
  int status = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_clean_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      return exit_clean_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_now();
  return exit_clean_;
}

void ProxyProcess::kill_now() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_clean_ = false;
}

std::string ProxyProcess::log() const { return slurp(log_path()); }

std::uint64_t ProxyProcess::peak_rss_kib() const { return proc_status_kib(pid_, "VmHWM"); }

}  // namespace faultline::testing
