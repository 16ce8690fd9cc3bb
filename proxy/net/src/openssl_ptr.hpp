#pragma once
// unique_ptr aliases for OpenSSL objects (private to faultline::net).

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "faultline/net/tls.hpp"

namespace faultline::net::detail {

struct BioFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
struct StoreFree {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};
struct NamesFree {
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};

using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, ExtFree>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, StoreCtxFree>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, NamesFree>;

// Throws std::runtime_error("<what>: <openssl error>") when `ok` is false.
inline void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + openssl_error());
}

}  // namespace faultline::net::detail
