#include "faultline/net/certs.hpp"

#include "faultline/faults/file.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <boost/asio/ip/address.hpp>

#include <fstream>

#include "openssl_ptr.hpp"

namespace faultline::net {
namespace {

using namespace detail;

PkeyPtr generate_p256_key() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "generating an ECDSA P-256 key");
  return key;
}

X509Ptr parse_cert(const std::string& pem, const char* what) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  check(cert != nullptr, what);
  return cert;
}

PkeyPtr parse_key(const std::string& pem, const char* what) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  check(key != nullptr, what);
  return key;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string cert_to_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(bio.get(), cert) == 1, "encoding a certificate");
  return bio_text(bio.get());
}

std::string key_to_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1, "encoding a private key");
  return bio_text(bio.get());
}

void set_random_serial(X509* cert) {
  unsigned char bytes[16];
  check(RAND_bytes(bytes, sizeof bytes) == 1, "generating a serial number");
  bytes[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  check(bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr, "setting a serial");
  BN_free(bn);
}

void set_subject_cn(X509* cert, const std::string& common_name) {
  X509_NAME* name = X509_get_subject_name(cert);
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) == 1,
        "setting the subject");
}

// A fresh X509 v3 with serial, subject CN, validity (backdated 5 minutes for clock skew), key.
X509Ptr new_cert(const std::string& common_name, std::chrono::hours validity, EVP_PKEY* key) {
  X509Ptr cert(X509_new());
  check(cert != nullptr, "allocating a certificate");
  check(X509_set_version(cert.get(), 2) == 1, "setting the version");
  set_random_serial(cert.get());
  set_subject_cn(cert.get(), common_name);
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300) != nullptr, "setting notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(std::chrono::seconds(validity).count())) !=
            nullptr,
        "setting notAfter");
  check(X509_set_pubkey(cert.get(), key) == 1, "setting the public key");
  return cert;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  check(ext != nullptr, ("building extension " + value).c_str());
  check(X509_add_ext(cert, ext.get(), -1) == 1, "adding an extension");
}

bool is_ip_literal(const std::string& name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

std::string san_extension_value(const std::vector<std::string>& sans) {
  std::string value;
  for (const auto& san : sans) {
    if (san.empty()) continue;
    if (san.find_first_of(",\n") != std::string::npos) throw std::invalid_argument("invalid SAN: " + san);
    if (!value.empty()) value += ',';
    value += (is_ip_literal(san) ? "IP:" : "DNS:") + san;
  }
  if (value.empty()) throw std::invalid_argument("a serving certificate needs at least one SAN");
  return value;
}

}  // namespace

std::vector<std::string> default_sans() {
  return {"localhost",
          "127.0.0.1",
          "::1",
          "kubernetes",
          "kubernetes.default",
          "kubernetes.default.svc",
          "kubernetes.default.svc.cluster.local"};
}

CertifiedKey generate_ca(const std::string& common_name, std::chrono::hours validity) {
  PkeyPtr key = generate_p256_key();
  X509Ptr cert = new_cert(common_name, validity, key.get());
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) == 1, "setting the issuer");
  add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "self-signing the CA");
  return {cert_to_pem(cert.get()), key_to_pem(key.get())};
}

CertifiedKey mint_serving_cert(const CertifiedKey& ca, const std::vector<std::string>& sans,
                               const std::string& common_name, std::chrono::hours validity) {
  X509Ptr ca_cert = parse_cert(ca.cert_pem, "reading the CA certificate");
  PkeyPtr ca_key = parse_key(ca.key_pem, "reading the CA key");
  check(X509_check_private_key(ca_cert.get(), ca_key.get()) == 1, "the CA key does not match the CA certificate");
  PkeyPtr key = generate_p256_key();
  X509Ptr cert = new_cert(common_name, validity, key.get());
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) == 1, "setting the issuer");
  add_extension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_extension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  add_extension(cert.get(), ca_cert.get(), NID_subject_alt_name, san_extension_value(sans));
  add_extension(cert.get(), ca_cert.get(), NID_subject_key_identifier, "hash");
  add_extension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
  check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0, "signing the serving certificate");
  return {cert_to_pem(cert.get()), key_to_pem(key.get())};
}

std::vector<std::string> subject_alt_names(const std::string& cert_pem) {
  X509Ptr cert = parse_cert(cert_pem, "reading a certificate");
  NamesPtr names(static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> out;
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING* s = name->d.dNSName;
      out.push_back("DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                         static_cast<std::size_t>(ASN1_STRING_length(s))));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = name->d.iPAddress;
      const unsigned char* p = ASN1_STRING_get0_data(s);
      if (ASN1_STRING_length(s) == 4) {
        boost::asio::ip::address_v4::bytes_type b;
        std::copy(p, p + 4, b.begin());
        out.push_back("IP:" + boost::asio::ip::address_v4(b).to_string());
      } else if (ASN1_STRING_length(s) == 16) {
        boost::asio::ip::address_v6::bytes_type b;
        std::copy(p, p + 16, b.begin());
        out.push_back("IP:" + boost::asio::ip::address_v6(b).to_string());
      }
    }
  }
  return out;
}

bool verifies_against(const std::string& cert_pem, const std::string& ca_pem) {
  X509Ptr cert = parse_cert(cert_pem, "reading a certificate");
  X509Ptr ca = parse_cert(ca_pem, "reading a CA certificate");
  StorePtr store(X509_STORE_new());
  check(store && X509_STORE_add_cert(store.get(), ca.get()) == 1, "building a trust store");
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  check(ctx && X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) == 1, "initialising verification");
  bool ok = X509_verify_cert(ctx.get()) == 1;
  ERR_clear_error();
  return ok;
}

std::string read_file(const std::filesystem::path& path) {
  return faults::read_regular_file(path, kMaxReadFileBytes, "a certificate, key or kubeconfig");
}

void write_file(const std::filesystem::path& path, const std::string& content, bool private_data) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  // Create with restrictive permissions before writing secrets into it.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  }
  if (private_data) {
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error(path.string() + ": write error");
}

}  // namespace faultline::net
