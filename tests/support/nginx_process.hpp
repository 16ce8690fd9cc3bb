#pragma once
// nginx as a child process of a test: a real HTTPS server on 127.0.0.1 whose ALPN offers
// "h2, http/1.1" (`listen ... ssl http2`) or only "http/1.1" (`listen ... ssl`, an HTTP/1.1-only
// server, as an nginx without http2 or an HTTP/1.1 load balancer in front of kube-apiserver).
// One process (no master, no worker switching users), its config, certificate, logs and temp
// directories in the test's directory; stopped by stop() or the destructor.

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "files.hpp"

namespace faultline::testing {

struct NginxOptions {
  unsigned short port = 0;  // 0: a free one
  bool http2 = false;       // ALPN offers h2 too
  std::string cert_pem;     // serving certificate (for 127.0.0.1) and its key
  std::string key_pem;
  std::string server_block;  // directives inside `server { }` (locations, proxy_pass, ...)
};

class NginxProcess {
 public:
  // Starts nginx and returns once it accepts connections on its port; throws (with its error log)
  // when nginx is not installed, exits, or does not listen within 30 s.
  NginxProcess(const fs::path& dir, const std::string& name, const NginxOptions& options);
  ~NginxProcess();  // stop()
  NginxProcess(const NginxProcess&) = delete;
  NginxProcess& operator=(const NginxProcess&) = delete;

  // SIGTERM (nginx's fast stop), SIGKILL after 10 s; returns once it has exited (its port can
  // be listened on again at once: nginx listens with SO_REUSEADDR).
  void stop();

  unsigned short port() const { return port_; }
  std::string log() const;  // its error log

 private:
  fs::path dir_;
  std::string name_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
};

// A free TCP port on 127.0.0.1 (bound, then released).
unsigned short free_loopback_port();

}  // namespace faultline::testing
