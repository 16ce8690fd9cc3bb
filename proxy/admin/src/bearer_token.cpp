#include "bearer_token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <boost/beast/core/string.hpp>

#include <array>
#include <stdexcept>

namespace faultline::admin {

namespace {

using Digest = std::array<unsigned char, 32>;

Digest sha256(std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 || len != out.size()) {
    throw std::runtime_error("admin API: SHA-256 unavailable from OpenSSL");
  }
  return out;
}

}  // namespace

bool bearer_token_matches(std::string_view authorization, std::string_view expected) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size() ||
      !boost::beast::iequals(authorization.substr(0, kScheme.size()), kScheme)) {
    return false;
  }
  std::string_view presented = authorization.substr(kScheme.size());
  while (!presented.empty() && presented.front() == ' ') presented.remove_prefix(1);
  while (!presented.empty() && presented.back() == ' ') presented.remove_suffix(1);
  const Digest a = sha256(presented);
  const Digest b = sha256(expected);
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0 && !expected.empty();
}

}  // namespace faultline::admin
