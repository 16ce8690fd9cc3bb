#pragma once
// The upstream of a program running in a pod, found as client-go's rest.InClusterConfig finds it:
// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, verified with the service account's
// ca.crt, authenticated with its token (re-read when the kubelet rotates it).

#include <filesystem>
#include <memory>
#include <string>

#include "faultline/net/token_file.hpp"

namespace faultline::net {

// Where the kubelet mounts a pod's service-account token, CA and namespace.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterConfig {
  std::string server;                        // https://host:port (IPv6 host in brackets)
  std::string ca_pem;                        // <dir>/ca.crt
  std::shared_ptr<RotatingTokenFile> token;  // <dir>/token
};

// Reads the environment and `dir`. Throws std::runtime_error saying what is missing: either
// variable unset or empty, a port that is not 1..65535, an unreadable or empty ca.crt, a token
// file that yields no token (TokenFileError).
InClusterConfig load_in_cluster_config(const std::filesystem::path& dir = kServiceAccountDir);

}  // namespace faultline::net
