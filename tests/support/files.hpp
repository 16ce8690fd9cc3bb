#pragma once
// Files for tests: a temporary directory removed at the end, a whole file read back, a figure from
// /proc/<pid>/status. A test that links faultline::net writes files with net::write_file (and
// reads one that must be there with net::read_file).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace faultline::testing {

namespace fs = std::filesystem;

// A temporary directory <tmp>/<prefix>-<pid>-<random>, removed with its contents at the end; with
// Keep::on_failure it stays when the test that made it has failed (its reports are the evidence,
// and the failure message names the path), so that passing runs leave nothing behind.
class TempDir {
 public:
  enum class Keep { never, on_failure };
  explicit TempDir(const std::string& prefix, Keep keep = Keep::never);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  Keep keep_;
};

// The whole file; "" when it cannot be read.
std::string slurp(const fs::path& path);

// A "<Field>: <n> kB" line of /proc/<pid>/status (VmRSS: resident now, VmHWM: peak), in KiB.
// Throws when the process or the field is not there.
std::uint64_t proc_status_kib(pid_t pid, const std::string& field);

}  // namespace faultline::testing
