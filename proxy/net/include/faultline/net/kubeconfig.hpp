#pragma once
// kubeconfig loading (the parts a client needs to reach an apiserver) and writing.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "faultline/net/tls.hpp"

namespace faultline::net {

// The resolved connection settings of one kubeconfig context. File references are already read:
// every *_pem field holds PEM text, `token` holds the token itself.
struct KubeconfigContext {
  std::string context_name;
  std::string cluster_name;
  std::string user_name;
  std::string namespace_name;  // empty when the context sets none
  std::string server;          // https://host:port[/path]
  std::string ca_pem;          // empty => system trust store
  bool insecure_skip_verify = false;
  std::string tls_server_name;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;

  bool has_client_cert() const { return !client_cert_pem.empty() && !client_key_pem.empty(); }
  ClientTlsOptions tls_options() const;
};

// Loads `path` (or, when empty, $KUBECONFIG — a ':'-separated list merged first-wins like kubectl —
// or ~/.kube/config) and resolves `context` (empty => current-context). Throws std::runtime_error
// with the file (and line:column where known) and what is wrong.
KubeconfigContext load_kubeconfig(const std::filesystem::path& path = {}, const std::string& context = {});

// What write_kubeconfig() writes: one cluster, one user, one context, current.
struct KubeconfigSpec {
  std::string name = "faultline";
  std::string server;
  std::string ca_pem;
  std::string client_cert_pem;  // optional
  std::string client_key_pem;   // optional
  std::string token;            // optional
  std::string namespace_name;   // optional
};
std::string render_kubeconfig(const KubeconfigSpec& spec);
void write_kubeconfig(const std::filesystem::path& path, const KubeconfigSpec& spec);

// Base64 (standard alphabet, padding), as kubeconfig *-data fields use.
std::string base64_encode(const std::string& data);
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace faultline::net
