// TLS handshakes between the proxy's server and client contexts over loopback.
#include "faultline/net/tls.hpp"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>

#include <future>
#include <thread>

namespace faultline::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct HandshakeResult {
  bool ok = false;
  std::string alpn;
  std::string error;
};

// Runs one handshake: a server with `serving` on a loopback port, a client with `client_options`
// expecting the peer to be `host`, offering `client_alpn` (wire format).
HandshakeResult handshake(const CertifiedKey& serving, const ClientTlsOptions& client_options, const std::string& host,
                          const std::string& client_alpn = std::string("\x08http/1.1", 9), bool offer_h2 = false) {
  asio::io_context io;
  auto server_ctx = make_server_context(serving, offer_h2);
  auto client_ctx = make_client_context(client_options);
  SSL_CTX_set_alpn_protos(client_ctx.native_handle(), reinterpret_cast<const unsigned char*>(client_alpn.data()),
                          static_cast<unsigned>(client_alpn.size()));
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  auto port = acceptor.local_endpoint().port();

  std::thread server([&] {
    asio::ssl::stream<tcp::socket> stream(io, server_ctx);
    acceptor.accept(stream.next_layer());
    boost::system::error_code ec;
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (!ec) stream.shutdown(ec);
  });

  HandshakeResult result;
  asio::ssl::stream<tcp::socket> client(io, client_ctx);
  client.next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
  prepare_client_stream(client, host, !client_options.insecure_skip_verify);
  boost::system::error_code ec;
  client.handshake(asio::ssl::stream_base::client, ec);
  result.ok = !ec;
  result.error = ec.message();
  if (result.ok) {
    const unsigned char* alpn = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(client.native_handle(), &alpn, &len);
    result.alpn.assign(reinterpret_cast<const char*>(alpn), len);
    client.shutdown(ec);
  }
  client.next_layer().close();
  server.join();
  return result;
}

ClientTlsOptions trusting(const std::string& ca_pem) {
  ClientTlsOptions options;
  options.ca_pem = ca_pem;
  return options;
}

class Tls : public ::testing::Test {
 protected:
  CertifiedKey ca_ = generate_ca();
  CertifiedKey serving_ = mint_serving_cert(ca_, default_sans());
};

TEST_F(Tls, VerifiedHandshakeByIpAndNameNegotiatesHttp11) {
  auto by_ip = handshake(serving_, trusting(ca_.cert_pem), "127.0.0.1");
  EXPECT_TRUE(by_ip.ok) << by_ip.error;
  EXPECT_EQ(by_ip.alpn, "http/1.1");
  auto by_name = handshake(serving_, trusting(ca_.cert_pem), "localhost");
  EXPECT_TRUE(by_name.ok) << by_name.error;
}

TEST_F(Tls, ServerNeverAgreesToHttp2) {
  auto h2_only = handshake(serving_, trusting(ca_.cert_pem), "127.0.0.1", std::string("\x02h2", 3));
  EXPECT_TRUE(h2_only.ok) << h2_only.error;
  EXPECT_EQ(h2_only.alpn, "");
  auto both = handshake(serving_, trusting(ca_.cert_pem), "127.0.0.1", std::string("\x02h2\x08http/1.1", 12));
  EXPECT_TRUE(both.ok) << both.error;
  EXPECT_EQ(both.alpn, "http/1.1");
}

TEST_F(Tls, ServerOfferingH2PicksItWhenTheClientOffersIt) {
  const auto trust = trusting(ca_.cert_pem);
  auto both = handshake(serving_, trust, "127.0.0.1", std::string("\x08http/1.1\x02h2", 12), true);
  EXPECT_TRUE(both.ok) << both.error;
  EXPECT_EQ(both.alpn, "h2");
  auto h1 = handshake(serving_, trust, "127.0.0.1", std::string("\x08http/1.1", 9), true);
  EXPECT_EQ(h1.alpn, "http/1.1");
  auto other = handshake(serving_, trust, "127.0.0.1", std::string("\x08spdy/3.1", 9), true);
  EXPECT_TRUE(other.ok) << other.error;
  EXPECT_EQ(other.alpn, "");
}

TEST_F(Tls, WrongCaOrWrongHostFailsUnlessInsecure) {
  auto wrong_ca = handshake(serving_, trusting(generate_ca().cert_pem), "127.0.0.1");
  EXPECT_FALSE(wrong_ca.ok);
  auto wrong_host = handshake(serving_, trusting(ca_.cert_pem), "apiserver.example");
  EXPECT_FALSE(wrong_host.ok);
  auto wrong_ip = handshake(serving_, trusting(ca_.cert_pem), "127.0.0.2");
  EXPECT_FALSE(wrong_ip.ok);
  ClientTlsOptions insecure;
  insecure.insecure_skip_verify = true;
  auto skipped = handshake(serving_, insecure, "apiserver.example");
  EXPECT_TRUE(skipped.ok) << skipped.error;
}

TEST_F(Tls, ClientIdentityNeedsCertAndKey) {
  ClientTlsOptions half;
  half.ca_pem = ca_.cert_pem;
  half.client_cert_pem = serving_.cert_pem;
  EXPECT_THROW(make_client_context(half), std::invalid_argument);
  half.client_key_pem = generate_ca().key_pem;  // not the certificate's key
  EXPECT_THROW(make_client_context(half), std::runtime_error);
}

}  // namespace
}  // namespace faultline::net
