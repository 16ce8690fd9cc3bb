#pragma once
// The proxy holds two descriptors per client connection (client + upstream), and a scheduler that
// binds a pod burst over HTTP/1.1 opens hundreds of connections at once: the usual soft limit of
// 1024 open files runs out long before the hard limit does.

#include <cstdint>

namespace faultline::app {

struct OpenFilesLimit {
  std::uint64_t before = 0;  // soft limit at start
  std::uint64_t now = 0;     // soft limit after raising it
  std::uint64_t hard = 0;
};

// Raises the soft RLIMIT_NOFILE to the hard limit (as Go programs such as kube-apiserver do at
// start). Never fails: when the kernel refuses, the limit stays as it was.
OpenFilesLimit raise_open_files_limit();

}  // namespace faultline::app
