#include "faultline/net/certs.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "files.hpp"

namespace faultline::net {
namespace {

using ::testing::Contains;
using ::testing::UnorderedElementsAre;

std::string read_error(const std::filesystem::path& path) {
  try {
    read_file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(read)";
}

// Certificates, keys and kubeconfigs are named by the user: /dev/zero or a huge file is an error,
// not a hang or unbounded memory.
TEST(ReadFile, ReadsARegularFileAndRefusesDevicesAndFilesOverTheLimit) {
  faultline::testing::TempDir dir("faultline-read-file");
  write_file(dir.path() / "ca.crt", "PEM");
  EXPECT_EQ(read_file(dir.path() / "ca.crt"), "PEM");
  EXPECT_EQ(read_error("/dev/zero"),
            "/dev/zero: not a regular file (a character device): a certificate, key or kubeconfig is read from a "
            "regular file only");
  const auto big = dir.path() / "big";
  write_file(big, "");
  std::filesystem::resize_file(big, kMaxReadFileBytes + 1);  // sparse: no disk used
  EXPECT_EQ(read_error(big), big.string() + ": the file is 16777217 bytes; the maximum is 16777216 bytes (16 MiB)");
  EXPECT_NE(read_error(dir.path() / "missing").find("cannot read the file: No such file or directory"),
            std::string::npos);
}

// The key type and curve of a certificate's public key, e.g. "prime256v1".
std::string curve_of(const std::string& cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_PKEY* key = X509_get0_pubkey(cert);
  char name[64] = {};
  size_t len = 0;
  std::string out = EVP_PKEY_get_group_name(key, name, sizeof name, &len) == 1 ? name : "not-ec";
  X509_free(cert);
  return out;
}

TEST(Certs, DefaultSansCoverLocalAndInClusterNames) {
  EXPECT_THAT(default_sans(), UnorderedElementsAre("localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default",
                                                   "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"));
}

TEST(Certs, GeneratedCaIsSelfSignedP256) {
  CertifiedKey ca = generate_ca("test-ca");
  EXPECT_NE(ca.cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(ca.key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(curve_of(ca.cert_pem), "prime256v1");
  EXPECT_TRUE(verifies_against(ca.cert_pem, ca.cert_pem));
}

TEST(Certs, ServingCertCarriesRequestedSansAndChainsToCa) {
  CertifiedKey ca = generate_ca();
  CertifiedKey serving = mint_serving_cert(ca, {"localhost", "127.0.0.1", "::1", "proxy.example"});
  EXPECT_THAT(subject_alt_names(serving.cert_pem),
              UnorderedElementsAre("DNS:localhost", "IP:127.0.0.1", "IP:::1", "DNS:proxy.example"));
  EXPECT_EQ(curve_of(serving.cert_pem), "prime256v1");
  EXPECT_TRUE(verifies_against(serving.cert_pem, ca.cert_pem));
}

TEST(Certs, ServingCertDoesNotVerifyAgainstAnotherCa) {
  CertifiedKey serving = mint_serving_cert(generate_ca(), default_sans());
  EXPECT_FALSE(verifies_against(serving.cert_pem, generate_ca().cert_pem));
}

TEST(Certs, MintingRejectsMismatchedCaKeyAndEmptySans) {
  CertifiedKey ca = generate_ca();
  CertifiedKey other = generate_ca();
  EXPECT_THROW(mint_serving_cert({ca.cert_pem, other.key_pem}, default_sans()), std::runtime_error);
  EXPECT_THROW(mint_serving_cert(ca, {}), std::invalid_argument);
  EXPECT_THROW(mint_serving_cert(ca, {"bad,name"}), std::invalid_argument);
}

TEST(Certs, GarbagePemIsAClearError) {
  try {
    mint_serving_cert({"not a cert", "not a key"}, default_sans());
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("CA certificate"));
  }
}

}  // namespace
}  // namespace faultline::net
