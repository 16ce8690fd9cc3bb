#include "faultline/net/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>

#include <cstring>
#include <stdexcept>

#include "openssl_ptr.hpp"

namespace faultline::net {
namespace ssl = boost::asio::ssl;

std::string openssl_error() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "no OpenSSL error recorded";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  ERR_clear_error();
  return text;
}

namespace {

constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};

// Picks http/1.1 from the client's ALPN list; with no http/1.1 offered, no ALPN is negotiated
// (the client then speaks HTTP/1.1 by default).
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  for (unsigned int i = 0; i < inlen;) {
    unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kHttp11 && std::memcmp(in + i + 1, kHttp11, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

void modern_protocols_only(ssl::context& ctx) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  detail::check(SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION) == 1, "setting TLS 1.2 minimum");
}

void use_identity(ssl::context& ctx, const std::string& cert_pem, const std::string& key_pem, const char* what) {
  boost::system::error_code ec;
  ctx.use_certificate_chain(boost::asio::buffer(cert_pem), ec);
  if (ec) throw std::runtime_error(std::string(what) + ": certificate: " + ec.message());
  ctx.use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
  if (ec) throw std::runtime_error(std::string(what) + ": private key: " + ec.message());
  detail::check(SSL_CTX_check_private_key(ctx.native_handle()) == 1,
                (std::string(what) + ": the key does not match the certificate").c_str());
}

}  // namespace

ssl::context make_server_context(const CertifiedKey& serving) {
  ssl::context ctx(ssl::context::tls_server);
  modern_protocols_only(ctx);
  use_identity(ctx, serving.cert_pem, serving.key_pem, "serving identity");
  SSL_CTX_set_alpn_select_cb(ctx.native_handle(), select_http11, nullptr);
  return ctx;
}

ssl::context make_client_context(const ClientTlsOptions& options) {
  ssl::context ctx(ssl::context::tls_client);
  modern_protocols_only(ctx);
  if (options.insecure_skip_verify) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_verify_mode(ssl::verify_peer);
    boost::system::error_code ec;
    if (options.ca_pem.empty()) {
      ctx.set_default_verify_paths(ec);
    } else {
      ctx.add_certificate_authority(boost::asio::buffer(options.ca_pem), ec);
    }
    if (ec) throw std::runtime_error("upstream CA: " + ec.message());
  }
  if (options.client_cert_pem.empty() != options.client_key_pem.empty()) {
    throw std::invalid_argument("client identity needs both a certificate and a key");
  }
  if (!options.client_cert_pem.empty()) {
    use_identity(ctx, options.client_cert_pem, options.client_key_pem, "client identity");
  }
  static constexpr unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx.native_handle(), alpn, sizeof alpn);
  return ctx;
}

void prepare_client_ssl(SSL* ssl_handle, const std::string& host, bool verify) {
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  bool is_ip = !ec;
  if (!is_ip) {
    // SSL_set_tlsext_host_name is a macro with a C-style cast; call what it expands to.
    detail::check(SSL_ctrl(ssl_handle, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                           const_cast<char*>(host.c_str())) == 1,
                  "setting SNI");
  }
  if (!verify) return;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
  if (is_ip) {
    detail::check(X509_VERIFY_PARAM_set1_ip_asc(param, address.to_string().c_str()) == 1, "setting the expected IP");
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    detail::check(X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1, "setting the expected host");
  }
}

}  // namespace faultline::net
