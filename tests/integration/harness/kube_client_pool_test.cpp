// KubeClient's keep-alive pool against a server that closes connections the way real servers do
// after a quiet period: an in-process HTTPS server (Boost.Beast) that closes every connection
// idle for 1 s, or that drops a reused connection as the next request arrives on it. Many pooled
// connections go stale at once; the next request must still succeed.
#include "faultline/harness/kube_client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "faultline/harness/async.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::harness {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Stream = beast::ssl_stream<beast::tcp_stream>;

// How the server ends keep-alive connections.
enum class Closing {
  idle_timeout,  // close a connection idle for `idle` (like kube-apiserver's or nginx's idle timeout)
  on_reuse,      // answer one request per connection; close without answering when a second arrives
};

// An HTTPS/1.1 server on 127.0.0.1 that answers every request with 200 (GET) or 201 (POST) and
// a small JSON body. Until `barrier` requests are in flight at once it holds them, so that a
// burst of concurrent requests really opens `barrier` connections.
class ClosingServer {
 public:
  ClosingServer(Closing closing, std::size_t barrier, std::chrono::milliseconds idle = std::chrono::seconds(1))
      : closing_(closing),
        barrier_(barrier),
        idle_(idle),
        ca_(net::generate_ca("kube-client-pool-test-ca")),
        tls_(net::make_server_context(net::mint_serving_cert(ca_, {"127.0.0.1"}))),
        acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~ClosingServer() {
    ioc_.stop();
    thread_.join();
  }

  net::KubeconfigContext cluster() const {
    net::KubeconfigContext c;
    c.server = "https://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
    c.ca_pem = ca_.cert_pem;
    return c;
  }
  std::size_t accepted() const { return accepted_.load(); }
  std::size_t closed_by_server() const { return closed_.load(); }
  std::size_t answered() const { return answered_.load(); }

 private:
  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
      if (ec) co_return;
      ++accepted_;
      asio::co_spawn(ioc_, serve(Stream(beast::tcp_stream(std::move(socket)), tls_)), asio::detached);
    }
  }

  asio::awaitable<void> serve(Stream stream) {
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (hec) co_return;
    beast::flat_buffer buffer;
    for (std::size_t served = 0;; ++served) {
      http::request<http::string_body> req;
      if (closing_ == Closing::idle_timeout) beast::get_lowest_layer(stream).expires_after(idle_);
      else beast::get_lowest_layer(stream).expires_never();
      auto [ec, n] = co_await http::async_read(stream, buffer, req, use_tuple);
      if (ec == beast::error::timeout || (!ec && closing_ == Closing::on_reuse && served > 0)) {
        // Like a server's idle close: the TCP connection ends, no HTTP answer.
        beast::get_lowest_layer(stream).close();
        ++closed_;
        co_return;
      }
      if (ec) co_return;
      co_await wait_for_barrier();
      http::response<http::string_body> res{req.method() == http::verb::post ? http::status::created : http::status::ok,
                                            11};
      res.set(http::field::content_type, "application/json");
      res.body() = R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]})";
      res.keep_alive(true);
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
      if (wec) co_return;
      ++answered_;
    }
  }

  // Holds each of the first `barrier_` requests until all of them have arrived (at most 20 s).
  asio::awaitable<void> wait_for_barrier() {
    if (held_ >= barrier_) co_return;
    ++held_;
    asio::steady_timer timer(ioc_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (held_ < barrier_ && std::chrono::steady_clock::now() < deadline) {
      timer.expires_after(std::chrono::milliseconds(5));
      co_await timer.async_wait(use_tuple);
    }
  }

  const Closing closing_;
  const std::size_t barrier_;
  const std::chrono::milliseconds idle_;
  asio::io_context ioc_;
  net::CertifiedKey ca_;
  asio::ssl::context tls_;
  tcp::acceptor acceptor_;
  std::size_t held_ = 0;  // server thread only
  std::atomic<std::size_t> accepted_{0};
  std::atomic<std::size_t> closed_{0};
  std::atomic<std::size_t> answered_{0};
  std::thread thread_;
};

// More stale connections than the client has attempts (8 by default).
constexpr std::size_t kPooled = 16;

// The client's side of a test: one io_context on the test's thread.
struct Client {
  explicit Client(const ClosingServer& server) : kube(ioc.get_executor(), options(server)) {}
  static KubeClientOptions options(const ClosingServer& server) {
    KubeClientOptions o;
    o.cluster = server.cluster();
    return o;
  }
  HttpResult request(const std::string& method, const std::string& body = {}) {
    return run_blocking(ioc, kube.request(method, "/api/v1/nodes?limit=500", body));
  }
  asio::io_context ioc;
  KubeClient kube;
};

// kPooled concurrent GETs: each takes a connection of its own, which then waits in the idle pool.
void fill_pool(Client& client, ClosingServer& server) {
  int ok = 0;
  auto get = [&]() -> asio::awaitable<void> {
    if ((co_await client.kube.request("GET", "/api/v1/nodes?limit=500")).status == 200) ++ok;
  };
  std::vector<asio::awaitable<void>> gets;
  for (std::size_t i = 0; i < kPooled; ++i) gets.push_back(get());
  run_blocking(client.ioc, all_of(std::move(gets)));
  ASSERT_EQ(ok, static_cast<int>(kPooled));
  ASSERT_EQ(server.accepted(), kPooled) << "the burst must have opened one connection per request";
}

void wait_until_all_closed(const ClosingServer& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.closed_by_server() < kPooled && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(server.closed_by_server(), kPooled) << "the server did not close its idle connections";
}

class KubeClientPool : public ::testing::TestWithParam<std::string> {};

TEST_P(KubeClientPool, RequestAfterTheServerClosedEveryIdleConnectionSucceeds) {
  const std::string method = GetParam();
  ClosingServer server(Closing::idle_timeout, kPooled);
  Client client(server);
  ASSERT_NO_FATAL_FAILURE(fill_pool(client, server));
  ASSERT_NO_FATAL_FAILURE(wait_until_all_closed(server));

  HttpResult res;
  try {
    res = client.request(method, method == "POST" ? "{}" : "");
  } catch (const std::exception& e) {
    FAIL() << method << " after the idle timeout failed: " << e.what();
  }
  EXPECT_EQ(res.status, method == "POST" ? 201 : 200);
  EXPECT_EQ(server.accepted(), kPooled + 1) << "one new connection replaces the stale pool";
  // Connections a server closed while idle are not failures of the API.
  EXPECT_EQ(client.kube.retries().count("connection"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Methods, KubeClientPool, ::testing::Values("GET", "POST"));

TEST(KubeClientPoolReuse, ConnectionsThatDieAsTheRequestArrivesAreReplacedForIdempotentRequests) {
  // The server closes each connection when a second request arrives on it: the race in which an
  // idle timeout strikes just as the client reuses the connection.
  ClosingServer server(Closing::on_reuse, kPooled);
  Client client(server);
  ASSERT_NO_FATAL_FAILURE(fill_pool(client, server));

  HttpResult res;
  try {
    res = client.request("GET");
  } catch (const std::exception& e) {
    FAIL() << "GET on a pool of connections the server drops on reuse failed: " << e.what();
  }
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(server.closed_by_server(), 1u) << "only one stale connection is tried; its siblings are dropped";
  EXPECT_EQ(server.accepted(), kPooled + 1);
  EXPECT_EQ(client.kube.retries().count("connection"), 0u);
}

}  // namespace
}  // namespace faultline::harness
