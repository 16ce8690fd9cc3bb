#include "files.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>

namespace faultline::testing {

TempDir::TempDir(const std::string& prefix, Keep keep) : keep_(keep) {
  std::random_device random;
  path_ = fs::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  if (keep_ == Keep::on_failure && ::testing::Test::HasFailure()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t proc_status_kib(pid_t pid, const std::string& field) {
  const std::string status_file = "/proc/" + std::to_string(pid) + "/status";
  const std::string prefix = field + ":";
  std::ifstream in(status_file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stoull(line.substr(prefix.size()));
  }
  throw std::runtime_error("no " + field + " in " + status_file);
}

}  // namespace faultline::testing
