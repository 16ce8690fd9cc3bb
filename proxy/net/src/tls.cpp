#include "faultline/net/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>

#include <atomic>
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

// ALPN protocol lists in wire format (length-prefixed names).
constexpr unsigned char kAlpnHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char kAlpnH2Http11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// Picks the first of `ours` (a wire-format list) that the client offers; with none in common, no
// ALPN is negotiated (the client then speaks HTTP/1.1 by default).
int select_from(const unsigned char* ours, unsigned int ours_len, const unsigned char** out, unsigned char* outlen,
                const unsigned char* in, unsigned int inlen) {
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, ours, ours_len, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// `arg`: one of the static lists above.
int select_protocol(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                    void* arg) {
  const auto* ours = static_cast<const unsigned char*>(arg);
  unsigned int ours_len = ours == kAlpnH2Http11 ? sizeof kAlpnH2Http11 : sizeof kAlpnHttp11;
  return select_from(ours, ours_len, out, outlen, in, inlen);
}

// `arg`: the std::atomic<bool> that says whether h2 is offered, read at each handshake.
int select_protocol_while(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                          unsigned int inlen, void* arg) {
  if (static_cast<const std::atomic<bool>*>(arg)->load(std::memory_order_relaxed)) {
    return select_from(kAlpnH2Http11, sizeof kAlpnH2Http11, out, outlen, in, inlen);
  }
  return select_from(kAlpnHttp11, sizeof kAlpnHttp11, out, outlen, in, inlen);
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

ssl::context make_server_context(const CertifiedKey& serving, bool offer_h2) {
  ssl::context ctx(ssl::context::tls_server);
  modern_protocols_only(ctx);
  use_identity(ctx, serving.cert_pem, serving.key_pem, "serving identity");
  // The callback's argument is one of the static lists above (it outlives every context).
  auto* ours = const_cast<unsigned char*>(offer_h2 ? kAlpnH2Http11 : kAlpnHttp11);
  SSL_CTX_set_alpn_select_cb(ctx.native_handle(), select_protocol, ours);
  return ctx;
}

ssl::context make_server_context(const CertifiedKey& serving, const std::atomic<bool>& offer_h2) {
  ssl::context ctx(ssl::context::tls_server);
  modern_protocols_only(ctx);
  use_identity(ctx, serving.cert_pem, serving.key_pem, "serving identity");
  SSL_CTX_set_alpn_select_cb(ctx.native_handle(), select_protocol_while, const_cast<std::atomic<bool>*>(&offer_h2));
  return ctx;
}

ssl::context make_client_context(const ClientTlsOptions& options, Alpn alpn) {
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
  if (alpn == Alpn::h2) {
    SSL_CTX_set_alpn_protos(ctx.native_handle(), kAlpnH2Http11, sizeof kAlpnH2Http11);
  } else {
    SSL_CTX_set_alpn_protos(ctx.native_handle(), kAlpnHttp11, sizeof kAlpnHttp11);
  }
  return ctx;
}

std::string alpn_selected(const SSL* ssl_handle) {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_handle, &data, &len);
  return data ? std::string(reinterpret_cast<const char*>(data), len) : std::string();
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
