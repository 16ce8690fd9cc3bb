#pragma once
// The fixture of the relay tests: a test upstream serving a certificate of its own CA, and
// faultline-proxy started in front of it with certificates of another CA, files in a temporary
// directory.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "faultline/net/certs.hpp"
#include "faultline/net/tls.hpp"
#include "relay_support.hpp"
#include "test_upstream.hpp"

namespace faultline::relaytest {

class RelayFixture : public ::testing::Test {
 protected:
  // `name` prefixes the temporary directory and the CAs' names.
  explicit RelayFixture(const std::string& name)
      : dir("faultline-" + name),
        proxy_ca(net::generate_ca(name + "-proxy-ca")),
        upstream_ca(net::generate_ca(name + "-upstream-ca")) {}

  void SetUp() override {
    upstream = std::make_unique<TestUpstream>(net::mint_serving_cert(upstream_ca, {"127.0.0.1"}));
    net::write_file(dir.path() / "upstream-ca.crt", upstream_ca.cert_pem);
  }

  // The proxy in front of the test upstream, with `extra` arguments after the upstream's.
  std::unique_ptr<ProxyProcess> start_proxy(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--upstream", "https://127.0.0.1:" + std::to_string(upstream->port()),
                                     "--upstream-ca", (dir.path() / "upstream-ca.crt").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return start_proxy_process(dir.path(), proxy_ca, args);
  }

  // The proxy with exactly `args` (another upstream, or none).
  std::unique_ptr<ProxyProcess> start_proxy_with(const std::vector<std::string>& args) {
    return start_proxy_process(dir.path(), proxy_ca, args);
  }

  TempDir dir;
  net::CertifiedKey proxy_ca;
  net::CertifiedKey upstream_ca;
  std::unique_ptr<TestUpstream> upstream;
};

}  // namespace faultline::relaytest
