#pragma once
// faultline-proxy as a child process of a test: started on 127.0.0.1:0 (serving and admin), ready
// once it has written its ready file, stopped with SIGTERM (SIGKILL when it does not stop). Used
// by the proxy tests against the local stack, the relay tests and the relay benchmark; each passes
// its own arguments (upstream, CA, audit log, ...).

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "files.hpp"  // TempDir, for the proxy's files

namespace faultline::testing {

// The faultline-proxy binary: $FAULTLINE_PROXY_BIN when set, else the one in this build tree.
fs::path proxy_binary();

// RLIMIT_NOFILE the proxy process starts with.
struct OpenFilesLimit {
  rlim_t soft;
  rlim_t hard;
};

// Under AddressSanitizer freed memory waits in a quarantine (256 MB by default) instead of being
// reused, so a sanitized proxy's resident size measures the quarantine, not the proxy. While an
// object of this type lives, the proxies a test starts run with the quarantine off (ASAN_OPTIONS
// quarantine_size_mb=0): their RSS then measures what they hold (100 MB relayed: peak RSS +76 KiB,
// against +157 MiB with the quarantine). ASan still checks everything else. No effect on a proxy
// built without AddressSanitizer. For the tests that bound the proxy's memory.
class MemoryMeasured {
 public:
  MemoryMeasured();
  ~MemoryMeasured();
  MemoryMeasured(const MemoryMeasured&) = delete;
  MemoryMeasured& operator=(const MemoryMeasured&) = delete;
};

// `binary --listen 127.0.0.1:0 --admin 127.0.0.1:0 --ready-file <dir>/<name>-ready.json <args>`,
// stdout and stderr to <dir>/<name>.log. The constructor returns once the ready file is there and
// throws std::runtime_error (with the proxy's log) when the process exits first or is not ready
// within 60 s. Stopped by stop() or the destructor.
class ProxyProcess {
 public:
  ProxyProcess(const fs::path& dir, const std::string& name, const std::vector<std::string>& args,
               std::optional<OpenFilesLimit> open_files = std::nullopt, const fs::path& binary = proxy_binary());
  ~ProxyProcess();  // stop()
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;

  // SIGTERM, SIGKILL after 30 s; true when it exited with status 0. Later calls return the same.
  bool stop();

  pid_t pid() const { return pid_; }                     // -1 once stopped
  const std::string& listen() const { return listen_; }  // 127.0.0.1:P
  const std::string& admin() const { return admin_; }    // 127.0.0.1:Q
  unsigned short port() const { return port_; }
  unsigned short admin_port() const { return admin_port_; }
  const fs::path& dir() const { return dir_; }
  const std::string& name() const { return name_; }
  fs::path log_path() const { return dir_ / (name_ + ".log"); }
  std::string log() const;  // what it has printed so far
  // Peak resident set (VmHWM) so far, in KiB, from /proc/<pid>/status; throws once stopped.
  std::uint64_t peak_rss_kib() const;

 private:
  void wait_ready(const fs::path& ready_file);
  void kill_now();

  fs::path dir_;
  std::string name_;
  pid_t pid_ = -1;
  bool exit_clean_ = false;
  std::string listen_;
  std::string admin_;
  unsigned short port_ = 0;
  unsigned short admin_port_ = 0;
};

}  // namespace faultline::testing
