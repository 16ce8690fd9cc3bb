// net::connect_tls over loopback: a verified handshake, and each failing step named with its
// endpoint, for both stream types that use it (the relay's TlsStream, Beast's ssl_stream).
#include "faultline/net/tls_connect.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <thread>

#include "faultline/net/tls_stream.hpp"

namespace faultline::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using ::testing::StartsWith;

// Runs connect_tls on a fresh `Stream` against 127.0.0.1:`port`: what failed (nullopt: connected).
template <class Stream>
std::optional<ConnectError> connect(asio::io_context& io, asio::ssl::context& ctx, std::uint16_t port,
                                    const TlsConnectOptions& options) {
  std::optional<ConnectError> out;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        Stream stream(io.get_executor(), ctx);
        tcp::resolver resolver(io);
        const Endpoint endpoint{"127.0.0.1", port};  // not a temporary in co_await (GCC 12)
        out = co_await connect_tls(stream, resolver, endpoint, options);
        done = true;
      },
      asio::detached);
  io.run();
  io.restart();
  EXPECT_TRUE(done);
  return out;
}

class TlsConnect : public ::testing::Test {
 protected:
  CertifiedKey ca_ = generate_ca();
  CertifiedKey serving_ = mint_serving_cert(ca_, default_sans());
  asio::io_context io_;
  asio::ssl::context client_ctx_ = make_client_context([this] {
    ClientTlsOptions options;
    options.ca_pem = ca_.cert_pem;
    return options;
  }());
  TlsConnectOptions options_{.verify_name = "127.0.0.1", .verify = true, .timeout = 5s};
};

// A TLS server for one connection on a loopback port.
struct OneHandshakeServer {
  explicit OneHandshakeServer(const CertifiedKey& serving)
      : ctx(make_server_context(serving, false)), acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    port = acceptor.local_endpoint().port();
    thread = std::thread([this] {
      asio::ssl::stream<tcp::socket> stream(io, ctx);
      acceptor.accept(stream.next_layer());
      boost::system::error_code ec;
      stream.handshake(asio::ssl::stream_base::server, ec);
      if (!ec) stream.shutdown(ec);
    });
  }
  ~OneHandshakeServer() { thread.join(); }
  asio::io_context io;
  asio::ssl::context ctx;
  tcp::acceptor acceptor;
  std::uint16_t port = 0;
  std::thread thread;
};

TEST_F(TlsConnect, ConnectsAndVerifiesBothStreamTypes) {
  {
    OneHandshakeServer server(serving_);
    auto failure = connect<TlsStream>(io_, client_ctx_, server.port, options_);
    EXPECT_FALSE(failure) << failure->describe();
  }
  {
    OneHandshakeServer server(serving_);
    auto failure = connect<beast::ssl_stream<beast::tcp_stream>>(io_, client_ctx_, server.port, options_);
    EXPECT_FALSE(failure) << failure->describe();
  }
}

TEST_F(TlsConnect, AWrongNameFailsTheHandshake) {
  OneHandshakeServer server(serving_);
  options_.verify_name = "elsewhere.example";
  auto failure = connect<TlsStream>(io_, client_ctx_, server.port, options_);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->step, ConnectError::Step::handshake);
  EXPECT_THAT(failure->message(), StartsWith("TLS handshake: "));
}

TEST_F(TlsConnect, ARefusedConnectionNamesTheStepAndTheEndpoint) {
  std::uint16_t port;
  {
    tcp::acceptor closed(io_, {asio::ip::make_address("127.0.0.1"), 0});
    port = closed.local_endpoint().port();
  }
  auto failure = connect<TlsStream>(io_, client_ctx_, port, options_);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->step, ConnectError::Step::connect);
  EXPECT_EQ(failure->ec, asio::error::connection_refused);
  EXPECT_EQ(failure->message(), "connecting: " + failure->ec.message());
  EXPECT_EQ(failure->describe(), "127.0.0.1:" + std::to_string(port) + ": connecting: " + failure->ec.message());
}

// A peer that takes the TCP connection and never answers the ClientHello: the deadline ends the
// handshake, on both stream types.
TEST_F(TlsConnect, ASilentPeerTimesOutInTheHandshake) {
  tcp::acceptor silent(io_, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = silent.local_endpoint().port();
  options_.timeout = 200ms;
  auto relay = connect<TlsStream>(io_, client_ctx_, port, options_);
  ASSERT_TRUE(relay);
  EXPECT_EQ(relay->step, ConnectError::Step::handshake);
  EXPECT_EQ(relay->ec, beast::error::timeout);
  options_.deadline_per_step = true;
  auto harness = connect<beast::ssl_stream<beast::tcp_stream>>(io_, client_ctx_, port, options_);
  ASSERT_TRUE(harness);
  EXPECT_EQ(harness->step, ConnectError::Step::handshake);
  EXPECT_EQ(harness->ec, beast::error::timeout);
}

TEST(ConnectError, NamesTheStep) {
  const Endpoint endpoint{"apiserver.example", 6443};
  const auto ec = make_error_code(asio::error::host_not_found);
  EXPECT_EQ((ConnectError{ConnectError::Step::resolve, endpoint, ec}.step_name()), "resolving apiserver.example");
  EXPECT_EQ((ConnectError{ConnectError::Step::connect, endpoint, ec}.step_name()), "connecting");
  EXPECT_EQ((ConnectError{ConnectError::Step::handshake, endpoint, ec}.step_name()), "TLS handshake");
  EXPECT_EQ((ConnectError{ConnectError::Step::resolve, endpoint, ec}.describe()),
            "apiserver.example:6443: resolving apiserver.example: " + ec.message());
}

}  // namespace
}  // namespace faultline::net
