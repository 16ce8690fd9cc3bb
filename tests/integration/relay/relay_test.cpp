// Relay mechanics of the real faultline-proxy binary in front of an in-process HTTPS server:
// big bodies with bounded memory, backpressure from a slow reader, upgrades tunnelled, chunks
// relayed one by one, blackhole outages stalling open streams, and a Kubernetes Status answer
// when the upstream cannot be reached. No assertion depends on the machine being fast: waits are
// handshakes with the upstream, and the outage checks only bound times from below.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/parse.hpp>

#include <sys/socket.h>

#include <sstream>

#include "faultline/net/kubeconfig.hpp"
#include "faultline/net/tls.hpp"
#include "relay_fixture.hpp"

namespace faultline::relaytest {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;

constexpr std::uint64_t MiB = 1024 * 1024;
constexpr std::uint64_t kBigBody = 100 * MiB;
// Allowed growth of the proxy's peak RSS while 100 MB cross it: far below the body size, far
// above the relay's own buffers (64 KiB per direction per connection plus TLS records).
constexpr std::uint64_t kMemoryBoundKiB = 64 * 1024;
// Measured with ASan's quarantine off (MemoryMeasured), so the bound holds in every build.

struct BodyResult {
  std::uint64_t size = 0;
  std::string sha256;
};

void send_get(TlsClient& client, const std::string& target) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(client.tls_stream(), req);
}

// Reads the body of the response whose header `parser` holds, at most `limit` bytes.
void read_body(TlsClient& client, http::response_parser<http::buffer_body>& parser, BodyResult& out, Sha256& sha,
               std::uint64_t limit = UINT64_MAX) {
  std::vector<char> piece(64 * 1024);
  while (!parser.is_done() && out.size < limit) {
    auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), limit - out.size));
    parser.get().body().data = piece.data();
    parser.get().body().size = want;
    boost::system::error_code ec;
    http::read_some(client.tls_stream(), client.buffer(), parser, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "reading the response body");
    std::size_t got = want - parser.get().body().size;
    sha.update(piece.data(), got);
    out.size += got;
  }
}

// Reads the rest of the body and expects exactly the first `size` pattern bytes.
void expect_pattern_body(TlsClient& client, http::response_parser<http::buffer_body>& parser, std::uint64_t size) {
  BodyResult result;
  Sha256 sha;
  read_body(client, parser, result, sha);
  EXPECT_EQ(result.size, size);
  EXPECT_EQ(sha.hex(), pattern_sha256(size));
}

std::unique_ptr<http::response_parser<http::buffer_body>> read_header(TlsClient& client) {
  auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
  parser->body_limit(boost::none);
  http::read_header(client.tls_stream(), client.buffer(), *parser);
  return parser;
}

// Reads body bytes of a chunked stream until exactly `expected` more bytes have arrived.
std::string read_stream_bytes(TlsClient& client, http::response_parser<http::buffer_body>& parser,
                              std::size_t expected) {
  std::string got;
  std::vector<char> piece(expected);
  while (got.size() < expected && !parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = expected - got.size();
    boost::system::error_code ec;
    http::read_some(client.tls_stream(), client.buffer(), parser, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "reading the stream");
    got.append(piece.data(), expected - got.size() - parser.get().body().size);
  }
  return got;
}

// Exactly `n` raw bytes of an upgraded connection (first from what the HTTP parser read ahead).
std::string read_raw(TlsClient& client, std::size_t n) {
  std::string out;
  while (out.size() < n && client.buffer().size() > 0) {
    std::size_t take = std::min(n - out.size(), client.buffer().size());
    out.append(static_cast<const char*>(client.buffer().data().data()), take);
    client.buffer().consume(take);
  }
  if (out.size() < n) {
    std::string rest(n - out.size(), '\0');
    asio::read(client.tls_stream(), asio::buffer(rest));
    out += rest;
  }
  return out;
}

// Asks the test upstream's /echo for a connection upgrade (as exec/attach/port-forward do) and
// reads the response header into `parser`; the tunnel's bytes follow in client.buffer()/stream.
void ask_for_echo_tunnel(TlsClient& client, http::response_parser<http::empty_body>& parser) {
  http::request<http::empty_body> req{http::verb::post, "/echo", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::connection, "Upgrade");
  req.set(http::field::upgrade, "faultline-echo");
  http::write(client.tls_stream(), req);
  http::read_header(client.tls_stream(), client.buffer(), parser);
}

template <class Pred>
void wait_until(Pred pred, std::chrono::seconds limit, const std::string& what) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("timed out waiting for " + what);
    std::this_thread::sleep_for(10ms);
  }
}

class relay : public RelayFixture {
 protected:
  relay() : RelayFixture("relay-test") {}

  // One relay thread, as the benchmarks run it: connections without a strand (the limits tests run
  // the default two threads, with strands).
  std::unique_ptr<ProxyProcess> start_proxy() { return RelayFixture::start_proxy({"--threads", "1"}); }

  // A small exchange first, so one-time allocations (TLS, loggers, thread stacks touched) are in
  // the baseline the memory bound is measured from.
  void warm_up(TlsClient& client) {
    send_get(client, "/bytes?size=65536");
    auto parser = read_header(client);
    BodyResult result;
    Sha256 sha;
    read_body(client, *parser, result, sha);
    ASSERT_EQ(result.size, 65536u);
  }
};

TEST_F(relay, HundredMegabyteResponsePassesIntactWithBoundedMemory) {
  testing::MemoryMeasured measured;
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  warm_up(client);
  auto baseline = proxy->peak_rss_kib();

  send_get(client, "/bytes?size=" + std::to_string(kBigBody));
  auto parser = read_header(client);
  ASSERT_EQ(parser->get().result_int(), 200);
  EXPECT_EQ(parser->get()[http::field::content_length], std::to_string(kBigBody));
  BodyResult result;
  Sha256 sha;
  read_body(client, *parser, result, sha);
  auto peak = proxy->peak_rss_kib();

  EXPECT_EQ(result.size, kBigBody);
  EXPECT_EQ(sha.hex(), pattern_sha256(kBigBody));
  std::cout << "[relay] 100 MiB response: proxy peak RSS " << baseline << " KiB before, " << peak << " KiB after\n";
  EXPECT_LT(growth(baseline, peak), kMemoryBoundKiB)
      << "the proxy's peak RSS grew by " << growth(baseline, peak) << " KiB";
  // The connection is still good for the next request (keep-alive after a streamed body).
  warm_up(client);
}

TEST_F(relay, HundredMegabyteRequestPassesIntactWithBoundedMemory) {
  testing::MemoryMeasured measured;
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  warm_up(client);
  auto baseline = proxy->peak_rss_kib();

  http::request<http::buffer_body> req{http::verb::post, "/digest", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/octet-stream");
  req.content_length(kBigBody);
  http::request_serializer<http::buffer_body> sr{req};
  http::write_header(client.tls_stream(), sr);
  std::vector<char> piece(256 * 1024);
  for (std::uint64_t offset = 0; offset < kBigBody; offset += piece.size()) {
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), kBigBody - offset));
    fill_pattern(piece.data(), offset, n);
    req.body().data = piece.data();
    req.body().size = n;
    req.body().more = offset + n < kBigBody;
    boost::system::error_code ec;
    http::write(client.tls_stream(), sr, ec);
    if (ec && ec != http::error::need_buffer) FAIL() << "sending the body: " << ec.message();
  }
  http::response<http::string_body> res;
  http::read(client.tls_stream(), client.buffer(), res);
  auto peak = proxy->peak_rss_kib();

  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(res.body(), std::to_string(kBigBody) + " " + pattern_sha256(kBigBody));
  std::cout << "[relay] 100 MiB request: proxy peak RSS " << baseline << " KiB before, " << peak << " KiB after\n";
  EXPECT_LT(growth(baseline, peak), kMemoryBoundKiB)
      << "the proxy's peak RSS grew by " << growth(baseline, peak) << " KiB";
}

TEST_F(relay, ChunkedRequestBodyPassesIntact) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  constexpr std::uint64_t size = 8 * MiB + 12345;
  http::request<http::buffer_body> req{http::verb::post, "/digest", 11};
  req.set(http::field::host, "127.0.0.1");
  req.chunked(true);
  http::request_serializer<http::buffer_body> sr{req};
  http::write_header(client.tls_stream(), sr);
  std::vector<char> piece(100000);
  for (std::uint64_t offset = 0; offset < size; offset += piece.size()) {
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - offset));
    fill_pattern(piece.data(), offset, n);
    req.body().data = piece.data();
    req.body().size = n;
    req.body().more = true;
    boost::system::error_code ec;
    http::write(client.tls_stream(), sr, ec);
    if (ec && ec != http::error::need_buffer) FAIL() << "sending the body: " << ec.message();
  }
  req.body().data = nullptr;
  req.body().size = 0;
  req.body().more = false;
  http::write(client.tls_stream(), sr);
  http::response<http::string_body> res;
  http::read(client.tls_stream(), client.buffer(), res);
  ASSERT_EQ(res.result_int(), 200) << res.body();
  EXPECT_EQ(res.body(), std::to_string(size) + " " + pattern_sha256(size));
}

TEST_F(relay, SlowReaderMakesTheUpstreamWriterWait) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  // A small receive buffer, as a busy client would have; the kernel no longer grows it.
  int rcvbuf = 256 * 1024;
  ::setsockopt(beast::get_lowest_layer(client.tls_stream()).native_handle(), SOL_SOCKET, SO_RCVBUF, &rcvbuf,
               sizeof rcvbuf);
  warm_up(client);
  auto baseline = proxy->peak_rss_kib();

  send_get(client, "/bytes?size=" + std::to_string(kBigBody));
  auto parser = read_header(client);
  BodyResult result;
  Sha256 sha;
  read_body(client, *parser, result, sha, MiB);  // then stop reading

  // Wait for the upstream writer to stop making progress (it blocks once every buffer between it
  // and the client is full), or to finish, which would mean the proxy took the whole body in.
  std::uint64_t last = 0;
  int unchanged = 0;
  wait_until(
      [&] {
        auto now = upstream->body_bytes_written();
        unchanged = now == last ? unchanged + 1 : 0;
        last = now;
        return upstream->body_complete() || (now > 0 && unchanged >= 200);  // 2 s without progress
      },
      180s, "the upstream writer to finish or block");
  auto written_while_paused = upstream->body_bytes_written();
  auto peak_paused = proxy->peak_rss_kib();
  std::cout << "[relay] slow reader: client read " << result.size << " bytes, upstream wrote " << written_while_paused
            << " bytes and then blocked; proxy peak RSS " << baseline << " -> " << peak_paused << " KiB\n";
  EXPECT_FALSE(upstream->body_complete()) << "the whole 100 MiB left the upstream while the client read 1 MiB";
  // What the upstream got rid of sits in socket buffers (two hops, each a send and a receive
  // buffer; Linux grows receive buffers up to net.ipv4.tcp_rmem's max) and in the proxy.
  EXPECT_LT(written_while_paused - result.size, 64 * MiB);
  EXPECT_LT(growth(baseline, peak_paused), kMemoryBoundKiB) << "the proxy buffered the body it could not deliver";

  read_body(client, *parser, result, sha);
  EXPECT_EQ(result.size, kBigBody);
  EXPECT_EQ(sha.hex(), pattern_sha256(kBigBody));
}

TEST_F(relay, UpgradeIsTunnelledBothWays) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  http::response_parser<http::empty_body> parser;
  ask_for_echo_tunnel(client, parser);
  auto& res = parser.get();
  ASSERT_EQ(res.result_int(), 101);
  EXPECT_EQ(res[http::field::upgrade], "faultline-echo");
  EXPECT_TRUE(beast::iequals(res[http::field::connection], "upgrade")) << res[http::field::connection];

  // Bytes the upstream sent right behind its 101, in the same write.
  EXPECT_EQ(read_raw(client, 6), "hello\n");
  // Small messages one at a time, then a larger block: every byte comes back in order.
  for (const std::string& message : std::vector<std::string>{"a", "ping\n", std::string(1000, 'x')}) {
    asio::write(client.tls_stream(), asio::buffer(message));
    EXPECT_EQ(read_raw(client, message.size()), message);
  }
  std::string block(256 * 1024, '\0');
  fill_pattern(block.data(), 0, block.size());
  asio::write(client.tls_stream(), asio::buffer(block));
  EXPECT_EQ(read_raw(client, block.size()), block);
  EXPECT_EQ(upstream->tunnel_bytes_received(), 1 + 5 + 1000 + block.size());
}

TEST_F(relay, ChunkReachesTheClientBeforeTheNextIsSent) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);
  send_get(client, "/chunks");
  auto parser = read_header(client);
  ASSERT_EQ(parser->get().result_int(), 200);
  ASSERT_TRUE(parser->get().chunked());
  // The upstream sends chunk i+1 only after the client has chunk i: a relay that held a chunk
  // back until more data came would leave this loop waiting (the watchdog then fails the read).
  // (The upstream's own chunk counter is not compared here: it goes up only after its write
  // completes, which can be after the client already has the chunk.)
  for (int i = 1; i <= 5; ++i) {
    std::string event = "{\"type\":\"ADDED\",\"n\":" + std::to_string(i) + "}\n";
    upstream->release_chunk(event);
    EXPECT_EQ(read_stream_bytes(client, *parser, event.size()), event);
  }
  upstream->finish_chunks();
  std::string rest = read_stream_bytes(client, *parser, 1);
  EXPECT_TRUE(rest.empty()) << "unexpected bytes after the last chunk: " << rest;
  EXPECT_TRUE(parser->is_done());
  EXPECT_FALSE(client.watchdog_fired());
}

// The two other framings an upstream may use arrive whole: many small chunks written at once
// (several of them in each read of the proxy), and a body without a length that ends when the
// upstream closes (the client's connection then closes after it: nothing else tells it the end).
TEST_F(relay, ManySmallChunksInOneWriteArriveWhole) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  constexpr int kChunks = 2000;
  std::uint64_t size = 0;
  for (int i = 0; i < kChunks; ++i) size += static_cast<std::uint64_t>(i % 300 + 1);
  send_get(client, "/raw/many-chunks?count=" + std::to_string(kChunks));
  auto parser = read_header(client);
  ASSERT_EQ(parser->get().result_int(), 200);
  expect_pattern_body(client, *parser, size);
}

TEST_F(relay, BodyEndingWithTheUpstreamConnectionArrivesWholeAndEndsTheClientConnection) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem);
  constexpr std::uint64_t size = 3 * MiB + 777;
  send_get(client, "/raw/until-close?count=" + std::to_string(size));
  auto parser = read_header(client);
  ASSERT_EQ(parser->get().result_int(), 200);
  EXPECT_FALSE(parser->get().keep_alive());
  expect_pattern_body(client, *parser, size);
  EXPECT_TRUE(parser->is_done());
}

// The outage checks bound times from below only: a loaded machine makes everything later, never
// earlier, so they cannot fail for want of speed.
constexpr auto kOutage = 4s;

TEST_F(relay, BlackholeOutageStallsAnOpenStreamUntilItEnds) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);
  send_get(client, "/chunks");
  auto parser = read_header(client);
  upstream->release_chunk("one\n");
  ASSERT_EQ(read_stream_bytes(client, *parser, 4), "one\n");

  auto outage_requested = std::chrono::steady_clock::now();
  auto answer = admin_request(proxy->admin_port(), "POST", "/v1/outage?duration=4s&mode=blackhole");
  ASSERT_EQ(answer.status, 200) << answer.body;
  upstream->release_chunk("two\n");
  wait_until([&] { return upstream->chunks_written() == 2; }, 30s, "the upstream to send chunk two");
  auto sent = std::chrono::steady_clock::now();
  ASSERT_LT(sent - outage_requested, kOutage) << "inconclusive: chunk two left the upstream after the outage";

  EXPECT_EQ(read_stream_bytes(client, *parser, 4), "two\n");
  auto received = std::chrono::steady_clock::now();
  EXPECT_GE(received - outage_requested, kOutage)
      << "chunk two reached the client "
      << std::chrono::duration_cast<std::chrono::milliseconds>(received - outage_requested).count()
      << " ms after the blackhole outage began";

  // The stream carries on once the outage is over.
  upstream->release_chunk("three\n");
  EXPECT_EQ(read_stream_bytes(client, *parser, 6), "three\n");
  upstream->finish_chunks();
  read_stream_bytes(client, *parser, 1);
  EXPECT_TRUE(parser->is_done());
}

TEST_F(relay, BlackholeOutageStallsAnUpgradedTunnelInBothDirections) {
  auto proxy = start_proxy();
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);
  http::response_parser<http::empty_body> parser;
  ask_for_echo_tunnel(client, parser);
  ASSERT_EQ(parser.get().result_int(), 101);
  ASSERT_EQ(read_raw(client, 6), "hello\n");
  asio::write(client.tls_stream(), asio::buffer(std::string("before\n")));
  ASSERT_EQ(read_raw(client, 7), "before\n");

  auto outage_requested = std::chrono::steady_clock::now();
  auto answer = admin_request(proxy->admin_port(), "POST", "/v1/outage?duration=4s&mode=blackhole");
  ASSERT_EQ(answer.status, 200) << answer.body;
  asio::write(client.tls_stream(), asio::buffer(std::string("during\n")));
  EXPECT_EQ(read_raw(client, 7), "during\n");
  auto echoed = std::chrono::steady_clock::now();

  // Client to upstream: the upstream got "during" only once the outage was over.
  EXPECT_EQ(upstream->tunnel_bytes_received(), 14u);
  EXPECT_GE(upstream->tunnel_last_received() - outage_requested, kOutage)
      << "the tunnel carried bytes to the upstream during the blackhole outage";
  EXPECT_GE(echoed - outage_requested, kOutage);
}

// Status body checks shared by the unreachable-upstream tests; `upstream_name` must be named.
void expect_unavailable_status(TlsClient& client, const std::string& upstream_name,
                               const std::vector<std::string>& secrets) {
  http::response<http::string_body> res;
  http::read(client.tls_stream(), client.buffer(), res);
  EXPECT_EQ(res.result_int(), 503);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  auto status = boost::json::parse(res.body()).as_object();
  EXPECT_EQ(status.at("kind").as_string(), "Status");
  EXPECT_EQ(status.at("apiVersion").as_string(), "v1");
  EXPECT_EQ(status.at("status").as_string(), "Failure");
  EXPECT_EQ(status.at("reason").as_string(), "ServiceUnavailable");
  EXPECT_EQ(status.at("code").as_int64(), 503);
  std::string message(status.at("message").as_string());
  EXPECT_NE(message.find(upstream_name), std::string::npos) << message;
  for (const auto& secret : secrets) EXPECT_EQ(res.body().find(secret), std::string::npos) << res.body();
}

TEST_F(relay, RefusedUpstreamAnswers503StatusWithoutSecrets) {
  const std::string proxy_token = "relay-test-upstream-token-8c1f";
  const std::string client_token = "relay-test-client-token-77ad";
  std::string upstream_name = "127.0.0.1:" + std::to_string(unused_port());
  net::KubeconfigSpec kubeconfig;
  kubeconfig.server = "https://" + upstream_name;
  kubeconfig.ca_pem = upstream_ca.cert_pem;
  kubeconfig.token = proxy_token;
  net::write_kubeconfig(dir.path() / "upstream.kubeconfig", kubeconfig);
  auto proxy = start_proxy_with({"--upstream-kubeconfig", (dir.path() / "upstream.kubeconfig").string()});
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);

  http::request<http::empty_body> get{http::verb::get, "/api/v1/namespaces/default/pods", 11};
  get.set(http::field::host, "127.0.0.1");
  get.set(http::field::authorization, "Bearer " + client_token);
  http::write(client.tls_stream(), get);
  expect_unavailable_status(client, upstream_name, {proxy_token, client_token});

  // The connection stays usable; a request body is read and dropped, not left on the wire.
  http::request<http::string_body> post{http::verb::post, "/api/v1/namespaces/default/pods", 11};
  post.set(http::field::host, "127.0.0.1");
  post.body() = std::string(MiB, 'p');
  post.prepare_payload();
  http::write(client.tls_stream(), post);
  expect_unavailable_status(client, upstream_name, {proxy_token, client_token});

  ASSERT_TRUE(proxy->stop());
  auto log = proxy->log();
  EXPECT_EQ(count_lines_with(log, " warning ", upstream_name), 2u) << "one warning per failed request:\n" << log;
  EXPECT_EQ(log.find(proxy_token), std::string::npos) << log;
  EXPECT_EQ(log.find(client_token), std::string::npos) << log;
}

TEST_F(relay, UntrustedUpstreamCertificateAnswers503Status) {
  auto other_ca = net::generate_ca("relay-test-other-ca");
  net::write_file(dir.path() / "other-ca.crt", other_ca.cert_pem);
  std::string upstream_name = "127.0.0.1:" + std::to_string(upstream->port());
  auto proxy = start_proxy_with(
      {"--upstream", "https://" + upstream_name, "--upstream-ca", (dir.path() / "other-ca.crt").string()});
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);
  send_get(client, "/api");
  expect_unavailable_status(client, upstream_name, {});
  ASSERT_TRUE(proxy->stop());
  EXPECT_EQ(count_lines_with(proxy->log(), " warning ", upstream_name), 1u) << proxy->log();
}

TEST_F(relay, UnresolvableUpstreamAnswers503Status) {
  std::string upstream_name = "faultline-relay-test.invalid:6443";
  auto proxy = start_proxy_with(
      {"--upstream", "https://" + upstream_name, "--upstream-ca", (dir.path() / "upstream-ca.crt").string()});
  TlsClient client(proxy->port(), proxy_ca.cert_pem, 60s);
  send_get(client, "/api");
  expect_unavailable_status(client, upstream_name, {});
  ASSERT_TRUE(proxy->stop());
  EXPECT_EQ(count_lines_with(proxy->log(), " warning ", upstream_name), 1u) << proxy->log();
}

// ---- many connections --------------------------------------------------------------------------

using AsyncTls = beast::ssl_stream<beast::tcp_stream>;

// Counts of what the client coroutines saw.
struct Exchanges {
  int ok = 0;
  std::vector<std::string> failures;
  std::string summary() const {
    return std::to_string(failures.size()) + " failed" + (failures.empty() ? "" : ", first: " + failures.front());
  }
};

// One GET of 16 bytes over a new connection, each step bounded by `limit`. The connection is kept
// in `kept` (open, idle) when given, closed otherwise.
asio::awaitable<void> exchange_once(asio::ssl::context& tls, asio::ip::tcp::endpoint proxy, Exchanges& seen,
                                    std::vector<std::unique_ptr<AsyncTls>>* kept, std::chrono::seconds limit) {
  auto stream = std::make_unique<AsyncTls>(co_await asio::this_coro::executor, tls);
  auto& tcp = beast::get_lowest_layer(*stream);
  auto fail = [&](const char* step, const boost::system::error_code& ec) {
    seen.failures.push_back(std::string(step) + ": " + ec.message());
  };
  constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
  tcp.expires_after(limit);
  if (auto [ec] = co_await tcp.async_connect(proxy, tuple); ec) co_return fail("connect", ec);
  net::prepare_client_ssl(stream->native_handle(), "127.0.0.1", true);
  if (auto [ec] = co_await stream->async_handshake(asio::ssl::stream_base::client, tuple); ec)
    co_return fail("handshake", ec);
  http::request<http::empty_body> req{http::verb::get, "/bytes?size=16", 11};
  req.set(http::field::host, "127.0.0.1");
  if (auto [ec, n] = co_await http::async_write(*stream, req, tuple); ec) co_return fail("write", ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (auto [ec, n] = co_await http::async_read(*stream, buffer, res, tuple); ec) co_return fail("read", ec);
  if (res.result_int() != 200 || res.body().size() != 16) {
    seen.failures.push_back("answer: " + std::to_string(res.result_int()) + " with " +
                            std::to_string(res.body().size()) + " bytes");
    co_return;
  }
  ++seen.ok;
  if (kept) {
    tcp.expires_never();
    kept->push_back(std::move(stream));
  }
}

asio::awaitable<void> exchange_repeatedly(asio::ssl::context& tls, asio::ip::tcp::endpoint proxy, Exchanges& seen,
                                          int times) {
  for (int i = 0; i < times; ++i) co_await exchange_once(tls, proxy, seen, nullptr, 30s);
}

// Sessions register and unregister in the server's registry from both relay threads at once; with
// hundreds of connections open, a burst of connections ending must never wedge the proxy (a
// session destroyed while the registry's lock was held did: every thread stopped, the admin API
// and SIGTERM went unanswered).
TEST_F(relay, ManyConnectionsEndingAtOnceNeverWedgeTheProxy) {
  auto proxy = start_proxy();
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), proxy->port());
  asio::io_context io;
  auto tls = net::make_client_context(net::ClientTlsOptions{proxy_ca.cert_pem, false, "", ""});
  Exchanges held;
  std::vector<std::unique_ptr<AsyncTls>> open;
  for (int i = 0; i < 250; ++i) asio::co_spawn(io, exchange_once(tls, endpoint, held, &open, 60s), asio::detached);
  io.run();
  ASSERT_EQ(held.ok, 250) << held.summary();

  Exchanges churn;
  io.restart();
  for (int worker = 0; worker < 64; ++worker)
    asio::co_spawn(io, exchange_repeatedly(tls, endpoint, churn, 25), asio::detached);
  io.run();
  EXPECT_EQ(churn.ok, 64 * 25) << churn.summary();
  open.clear();

  Exchanges after;
  io.restart();
  asio::co_spawn(io, exchange_once(tls, endpoint, after, nullptr, 10s), asio::detached);
  io.run();
  EXPECT_EQ(after.ok, 1) << "the proxy no longer answers: " << after.summary();
  EXPECT_TRUE(proxy->stop()) << "faultline-proxy did not exit cleanly on SIGTERM:\n" << proxy->log().substr(0, 4000);
}

}  // namespace
}  // namespace faultline::relaytest
