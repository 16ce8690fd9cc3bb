#pragma once
// What the relay tests and the relay benchmark need besides the test upstream: the real
// faultline-proxy as a child process serving certificates of a given CA, the tests' TLS client
// (tls_client.hpp) and a tiny admin API client.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "faultline/net/certs.hpp"
#include "proxy_process.hpp"
#include "tls_client.hpp"

namespace faultline::relaytest {

namespace fs = std::filesystem;

using testing::proxy_binary;
using testing::ProxyProcess;
using testing::TempDir;
using testing::TlsClient;

// Polls `pred` every 20 ms until it holds (true) or `limit` has passed (false).
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Growth of the proxy's peak RSS. VmHWM can read lower later: the kernel folds the current RSS into
// it when read, but returning memory with madvise (malloc_trim) does not record the old peak, so a
// later reading may be a few KiB under an earlier one. That is no growth.
inline std::uint64_t growth(std::uint64_t before, std::uint64_t after) { return after > before ? after - before : 0; }

// faultline-proxy (tests/support/proxy_process.hpp) serving certificates minted from `ca`, written
// to <dir>/proxy-ca.crt and .key, with `extra_args` (upstream, log level, ...); its files are
// <dir>/proxy.log and <dir>/proxy-ready.json. Throws with the proxy's log when it does not start.
std::unique_ptr<ProxyProcess> start_proxy_process(const fs::path& dir, const net::CertifiedKey& ca,
                                                  const std::vector<std::string>& extra_args,
                                                  const fs::path& binary = proxy_binary());

// A plain HTTP request to the admin API: the status code and body.
struct AdminAnswer {
  int status = 0;
  std::string body;
};
AdminAnswer admin_request(unsigned short port, const std::string& method, const std::string& target,
                          const std::string& token = {});

// A scenario of the random-input tests (relay_h2.RandomFrameSequences*,
// relay_limits.RandomRequestSequences*): stream-level faults that fire at random (seed 7) on
// /headers (reset, close), /missing (respond 503), /hang (hang 200 ms) and /bytes (delay, drop-response,
// goaway abrupt and graceful, stall), so that faults meet broken input.
std::string random_faults_scenario();

// The seeded draws of the random-input tests. The environment's FAULTLINE_RANDOM_SEED and
// FAULTLINE_RANDOM_CONNECTIONS replace a test's seed and connection count (a search for crashes
// by hand). Draw once per statement: the order in which a compiler evaluates a call's arguments
// must not change the input (GCC's release tree and clang's ASan tree send the same).
class RandomInput {
 public:
  RandomInput(unsigned long seed, unsigned long connections)
      : seed_(from_env("FAULTLINE_RANDOM_SEED", seed)),
        connections_(from_env("FAULTLINE_RANDOM_CONNECTIONS", connections)),
        rng_(static_cast<std::mt19937::result_type>(seed_)) {}
  unsigned long seed() const { return seed_; }
  unsigned long connections() const { return connections_; }
  std::uint32_t draw() { return static_cast<std::uint32_t>(rng_()); }
  std::uint32_t pick(std::size_t n) { return n == 0 ? 0u : static_cast<std::uint32_t>(rng_() % n); }  // [0, n)
  bool chance(std::uint32_t percent) { return pick(100) < percent; }

 private:
  static unsigned long from_env(const char* name, unsigned long fallback);
  unsigned long seed_, connections_;
  std::mt19937 rng_;
};

// A free TCP port on 127.0.0.1 with nothing listening (bound, then released).
unsigned short unused_port();

// How many lines of `text` contain both `a` and `b` (log lines of one kind about one thing).
std::size_t count_lines_with(const std::string& text, const std::string& a, const std::string& b);

}  // namespace faultline::relaytest
