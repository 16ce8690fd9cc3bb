#include "faultline/net/in_cluster.hpp"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "faultline/net/certs.hpp"
#include "faultline/net/endpoint.hpp"

namespace faultline::net {

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

InClusterConfig load_in_cluster_config(const std::filesystem::path& dir) {
  const std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    throw std::runtime_error(
        "in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this a pod?)");
  }
  unsigned number = 0;
  const char* end = port.data() + port.size();
  auto [stop, ec] = std::from_chars(port.data(), end, number);
  if (ec != std::errc() || stop != end || number == 0 || number > 65535) {
    throw std::runtime_error("in-cluster configuration: KUBERNETES_SERVICE_PORT='" + port + "' is not a port");
  }
  const Endpoint endpoint{host, static_cast<std::uint16_t>(number)};

  InClusterConfig config;
  config.server = "https://" + endpoint.to_string();
  const std::filesystem::path ca = dir / "ca.crt";
  try {
    config.ca_pem = read_file(ca);
  } catch (const std::exception& e) {
    throw std::runtime_error("in-cluster configuration: " + std::string(e.what()));
  }
  if (config.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    throw std::runtime_error("in-cluster configuration: " + ca.string() + " holds no PEM certificate");
  }
  config.token = std::make_shared<RotatingTokenFile>(dir / "token", "service-account token file");
  return config;
}

}  // namespace faultline::net
