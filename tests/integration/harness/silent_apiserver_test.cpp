// An apiserver that accepts connections and never answers (a stopped process behind a live socket,
// a port that belongs to something else): a loopback socket that listens and never accepts, so
// the kernel completes every TCP handshake and nobody reads. The harness must say within 30 s
// which host:port does not answer, in words, without the library's error category or source
// location.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "faultline/harness/async.hpp"
#include "faultline/harness/kube_client.hpp"
#include "files.hpp"

namespace faultline::harness {
namespace {

namespace fs = std::filesystem;

// Listens on 127.0.0.1:<ephemeral> and never accepts.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd_, 64) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { ::close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  unsigned short port_ = 0;
};

void expect_no_library_location(const std::string& text) {
  EXPECT_EQ(text.find("boost"), std::string::npos) << text;
  EXPECT_EQ(text.find("/usr/include"), std::string::npos) << text;
  EXPECT_EQ(text.find(".hpp"), std::string::npos) << text;
}

TEST(SilentApiserver, KubeClientNamesTheServerAndTheStep) {
  SilentListener silent;
  KubeClientOptions options;
  options.cluster.server = silent.url();
  options.cluster.insecure_skip_verify = true;
  options.request_timeout = std::chrono::seconds(1);
  options.retry.max_attempts = 2;
  options.retry.initial_backoff = std::chrono::milliseconds(10);
  asio::io_context ioc;
  KubeClient client(ioc.get_executor(), options);
  std::string outcome = "returned";
  try {
    run_blocking(ioc, client.get("/version"));
  } catch (const TransportError& e) {
    outcome = e.what();
  }
  EXPECT_EQ(outcome, "GET " + silent.url() + "/version: TLS handshake: no answer within 1s (after 2 attempts)");
  expect_no_library_location(outcome);
}

fs::path harness_binary() {
  if (const char* env = std::getenv("FAULTLINE_HARNESS_BIN"); env && *env) return env;
  return fs::path(FAULTLINE_BINARY_DIR) / "harness" / "faultline-harness";
}

TEST(SilentApiserver, HarnessRunSaysWhichHostDoesNotAnswerWithinThirtySeconds) {
  SilentListener silent;
  testing::TempDir dir("faultline-silent-apiserver");
  const fs::path kubeconfig = dir.path() / "kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: silent\n"
                               "clusters: [{name: silent, cluster: {server: \""
                            << silent.url()
                            << "\", insecure-skip-tls-verify: true}}]\n"
                               "users: [{name: u, user: {token: t}}]\n"
                               "contexts: [{name: silent, context: {cluster: silent, user: u}}]\n";
  const std::string command = harness_binary().string() + " run " + FAULTLINE_SOURCE_DIR +
                              "/harness/scenarios/no-faults.yaml --scheduler kube-scheduler --kubeconfig " +
                              kubeconfig.string() + " --out " + (dir.path() / "report").string() + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(status, 0) << output;
  EXPECT_LT(seconds, 30.0) << output;
  EXPECT_NE(output.find("kube-apiserver at " + silent.url() + " does not answer: GET " + silent.url() +
                        "/version: TLS handshake: no answer within 10s"),
            std::string::npos)
      << output;
  expect_no_library_location(output);
}

}  // namespace
}  // namespace faultline::harness
