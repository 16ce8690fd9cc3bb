#pragma once
// TLS contexts for both sides of the proxy (and for any client of kube-apiserver, e.g. the harness).

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <atomic>
#include <string>

#include "faultline/net/certs.hpp"

namespace faultline::net {

// Serving side: TLS 1.2+, the given certificate (optionally followed by chain certificates in the
// same PEM) and key. ALPN picks h2 when the client offers it and `offer_h2` is set, else
// http/1.1 (with `offer_h2` false, HTTP/2-capable clients such as client-go fall back to HTTP/1.1).
boost::asio::ssl::context make_server_context(const CertifiedKey& serving, bool offer_h2 = false);
// The same, offering h2 while `offer_h2` holds (read at each handshake; it must outlive the
// context): the proxy offers clients h2 only while its upstream negotiates h2.
boost::asio::ssl::context make_server_context(const CertifiedKey& serving, const std::atomic<bool>& offer_h2);

// Client side (towards kube-apiserver). Peer verification is on unless `insecure_skip_verify` is
// set explicitly; `ca_pem` empty means the system trust store.
struct ClientTlsOptions {
  std::string ca_pem;
  bool insecure_skip_verify = false;
  std::string client_cert_pem;  // optional client identity (both or neither)
  std::string client_key_pem;
};
// ALPN the client side offers: http/1.1 only, or h2 first and http/1.1 after it (the proxy's
// upstream connection for an HTTP/2 client, so the apiserver sees the protocol the client chose; a
// server that speaks only HTTP/1.1 completes the handshake choosing http/1.1, instead of failing
// it with no_application_protocol, and the caller sees what it chose in alpn_selected).
enum class Alpn { http11, h2 };
boost::asio::ssl::context make_client_context(const ClientTlsOptions& options, Alpn alpn = Alpn::http11);

// The protocol ALPN selected on an established connection ("" when none).
std::string alpn_selected(const SSL* ssl);

// Per-connection setup of a client stream before the handshake: SNI (DNS names only, as RFC 6066
// asks) and host name / IP verification against `host`. Throws on OpenSSL failure.
void prepare_client_ssl(SSL* ssl, const std::string& host, bool verify);

template <class Stream>
void prepare_client_stream(boost::asio::ssl::stream<Stream>& stream, const std::string& host, bool verify) {
  prepare_client_ssl(stream.native_handle(), host, verify);
}

// The last OpenSSL error as text (for messages).
std::string openssl_error();

}  // namespace faultline::net
