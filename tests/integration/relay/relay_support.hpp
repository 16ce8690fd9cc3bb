#pragma once
// What the relay tests and the relay benchmark need besides the test upstream: the real
// faultline-proxy as a child process (its ports, its log, its peak memory), a blocking TLS client
// whose reads cannot hang forever, and a tiny admin API client.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "faultline/net/certs.hpp"

namespace faultline::relaytest {

namespace fs = std::filesystem;

// A temporary directory removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// faultline-proxy (from the build tree) listening on 127.0.0.1:0, admin on 127.0.0.1:0, serving a
// certificate minted from `ca`; stdout and stderr go to <dir>/proxy.log.
class ProxyProcess {
 public:
  ProxyProcess(const fs::path& binary, const fs::path& dir, const net::CertifiedKey& ca,
               const std::vector<std::string>& extra_args);
  ~ProxyProcess();  // SIGTERM, then SIGKILL if it does not stop

  int pid() const { return pid_; }
  unsigned short port() const { return port_; }
  unsigned short admin_port() const { return admin_port_; }
  std::string log() const;
  // Peak resident set (VmHWM) so far, in KiB, from /proc/<pid>/status.
  std::uint64_t peak_rss_kib() const;
  // Stops the process with SIGTERM; true when it exited 0.
  bool stop();

 private:
  fs::path dir_;
  int pid_ = -1;
  unsigned short port_ = 0;
  unsigned short admin_port_ = 0;
};

// The default location of the proxy binary in this build tree.
fs::path proxy_binary();

// Shuts a socket down when a deadline passes, so a blocking read or write fails instead of
// hanging the test. `fired()` tells the failure message why.
class Watchdog {
 public:
  Watchdog(int fd, std::chrono::seconds limit);
  ~Watchdog();
  bool fired() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;
};

// A blocking HTTPS client connection that trusts `ca_pem` and verifies 127.0.0.1.
struct TlsClient {
  TlsClient(unsigned short port, const std::string& ca_pem, std::chrono::seconds limit = std::chrono::seconds(180));
  boost::asio::io_context ioc;
  boost::asio::ssl::context tls;
  boost::beast::ssl_stream<boost::asio::ip::tcp::socket> stream;
  boost::beast::flat_buffer buffer;
  std::unique_ptr<Watchdog> watchdog;
};

// A plain HTTP request to the admin API: the status code and body.
struct AdminAnswer {
  int status = 0;
  std::string body;
};
AdminAnswer admin_request(unsigned short port, const std::string& method, const std::string& target);

// A free TCP port on 127.0.0.1 with nothing listening (bound, then released).
unsigned short unused_port();

}  // namespace faultline::relaytest
