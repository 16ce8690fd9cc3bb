#pragma once
// Certificate minting: a self-signed CA, and ECDSA P-256 serving certificates signed by a CA
// (generated here or loaded from PEM files, e.g. a cluster CA). Everything is PEM in memory;
// write_file() puts it on disk with owner-only permissions for keys.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace faultline::net {

// A certificate and its private key, both PEM.
struct CertifiedKey {
  std::string cert_pem;
  std::string key_pem;
};

// The SANs a serving certificate gets when none are asked for: the names clients use for an
// apiserver (in-cluster and local).
std::vector<std::string> default_sans();

// A new self-signed CA (ECDSA P-256, basicConstraints CA:TRUE, keyCertSign).
CertifiedKey generate_ca(const std::string& common_name = "faultline-ca",
                         std::chrono::hours validity = std::chrono::hours(24 * 365));

// A serving certificate for `sans` (each an IP literal or a DNS name), ECDSA P-256, signed by
// `ca` (whose key may be RSA or EC). serverAuth and clientAuth extended key usage.
CertifiedKey mint_serving_cert(const CertifiedKey& ca, const std::vector<std::string>& sans,
                               const std::string& common_name = "faultline-proxy",
                               std::chrono::hours validity = std::chrono::hours(24 * 365));

// The subjectAltName entries of a PEM certificate as "DNS:name" / "IP:addr" strings.
std::vector<std::string> subject_alt_names(const std::string& cert_pem);

// True when `cert_pem` verifies against `ca_pem` (signature and validity, no host check).
bool verifies_against(const std::string& cert_pem, const std::string& ca_pem);

// Largest certificate, key, CA bundle or kubeconfig read_file reads.
inline constexpr std::size_t kMaxReadFileBytes = 16 * 1024 * 1024;

// Reads a whole regular file of at most kMaxReadFileBytes; throws faults::FileError (a
// std::runtime_error) naming the path and the problem when it cannot (faults/file.hpp).
std::string read_file(const std::filesystem::path& path);

// Writes a whole file (creating parent directories). `private_data` => mode 0600.
void write_file(const std::filesystem::path& path, const std::string& content, bool private_data = false);

}  // namespace faultline::net
