// The harness's clients against servers that never stop talking: an endless body (chunked, with a
// huge Content-Length, or until the connection closes), an endless header field, an endless watch
// line, endless list pages, a pod watch that invents pods. An in-process server (Boost.Asio, HTTPS
// for the Kubernetes client, plain HTTP for http_call as YuniKorn and the proxy admin API are)
// writes them; the harness's own KubeClient, PodWatcher and http_call read them. Each call must
// end with a LimitError naming the URL, the limit and how to raise it, and the test process's
// peak memory must stay near the limit.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "faultline/harness/async.hpp"
#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/limits.hpp"
#include "faultline/harness/pod_watcher.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/tls.hpp"
#include "files.hpp"

namespace faultline::harness {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
constexpr std::uint64_t kMiB = 1024 * 1024;

// One answer: `head`, then piece(0), piece(1), ... `pieces` of them, then `tail`. The server stops
// writing (and closes every connection) once it has sent `cap` bytes in all, so that a client
// without a limit fails the test instead of taking the machine's memory.
struct Answer {
  std::string head;
  std::function<std::string(std::uint64_t)> piece;
  std::uint64_t pieces = 0;
  std::string tail;
};
using Handler = std::function<Answer(const std::string& target)>;

constexpr std::uint64_t kEndless = std::numeric_limits<std::uint64_t>::max();

std::string filler(std::size_t n, char c) { return std::string(n, c); }

// An HTTP/1.1 server on 127.0.0.1 (TLS or plain) on its own thread. Answers every request of a
// connection with handler(target) until it has sent `cap` bytes in all.
class TalkativeServer {
 public:
  TalkativeServer(bool tls, Handler handler, std::uint64_t cap = 128 * kMiB)
      : tls_on_(tls),
        handler_(std::move(handler)),
        cap_(cap),
        ca_(net::generate_ca("read-limits-test-ca")),
        tls_(net::make_server_context(net::mint_serving_cert(ca_, {"127.0.0.1"}))),
        acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TalkativeServer() {
    ioc_.stop();
    thread_.join();
  }
  std::string url() const {
    return fmt::format("{}://127.0.0.1:{}", tls_on_ ? "https" : "http", acceptor_.local_endpoint().port());
  }
  net::KubeconfigContext cluster() const {
    net::KubeconfigContext c;
    c.server = url();
    c.ca_pem = ca_.cert_pem;
    return c;
  }
  std::size_t connections() const { return connections_.load(); }
  std::size_t requests() const { return requests_.load(); }
  std::uint64_t bytes_sent() const { return sent_.load(); }

 private:
  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
      if (ec) co_return;
      ++connections_;
      if (tls_on_) {
        asio::co_spawn(ioc_, serve_tls(std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(ioc_, serve_plain(std::move(socket)), asio::detached);
      }
    }
  }
  asio::awaitable<void> serve_tls(tcp::socket socket) {
    asio::ssl::stream<tcp::socket> stream(std::move(socket), tls_);
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (!hec) co_await answer_requests(stream);
  }
  asio::awaitable<void> serve_plain(tcp::socket socket) { co_await answer_requests(socket); }
  template <class Stream>
  asio::awaitable<void> answer_requests(Stream& stream) {
    asio::streambuf request(64 * 1024);
    for (;;) {
      auto [rec, n] = co_await asio::async_read_until(stream, request, "\r\n\r\n", use_tuple);
      if (rec) co_return;
      std::string head(asio::buffers_begin(request.data()), asio::buffers_begin(request.data()) + n);
      request.consume(n);
      ++requests_;
      const auto first_space = head.find(' ');
      const std::string target = head.substr(first_space + 1, head.find(' ', first_space + 1) - first_space - 1);
      Answer answer = handler_(target);
      auto write = [&](const std::string& bytes) -> asio::awaitable<bool> {
        if (sent_ >= cap_) co_return false;
        auto [ec, written] = co_await asio::async_write(stream, asio::buffer(bytes), use_tuple);
        sent_ += written;
        co_return !ec;
      };
      if (!co_await write(answer.head)) co_return;
      for (std::uint64_t i = 0; i < answer.pieces; ++i) {
        if (!co_await write(answer.piece(i))) co_return;
      }
      if (!co_await write(answer.tail)) co_return;
    }
  }

  const bool tls_on_;
  Handler handler_;
  const std::uint64_t cap_;
  asio::io_context ioc_;
  net::CertifiedKey ca_;
  asio::ssl::context tls_;
  tcp::acceptor acceptor_;
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> requests_{0};
  std::atomic<std::uint64_t> sent_{0};
  std::thread thread_;
};

// Framings of a body that does not end.
const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
std::string chunk(const std::string& data) { return fmt::format("{:x}\r\n{}\r\n", data.size(), data); }

Answer endless_chunks() {
  const std::string piece = chunk(filler(64 * 1024, 'x'));  // no newline, ever
  return {kChunkedHead, [piece](std::uint64_t) { return piece; }, kEndless, ""};
}
Answer endless_declared_length() {
  const std::string piece = filler(64 * 1024, 'x');
  return {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1099511627776\r\n\r\n",
          [piece](std::uint64_t) { return piece; }, kEndless, ""};
}
Answer endless_until_close() {
  const std::string piece = filler(64 * 1024, 'x');
  return {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
          [piece](std::uint64_t) { return piece; }, kEndless, ""};
}
Answer endless_header_field() {
  const std::string piece = filler(64 * 1024, 'h');
  return {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Endless: ", [piece](std::uint64_t) { return piece; },
          kEndless, ""};
}

// Peak resident memory of this process, in KiB, since the last reset_peak().
void reset_peak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // resets VmHWM to the current RSS (Linux >= 4.0)
}
std::uint64_t peak_kib() { return testing::proc_status_kib(getpid(), "VmHWM"); }

// What the call threw: "LimitError: ..." or "<other>: ...", or "returned" when it did not throw.
template <class T>
std::string outcome_of(asio::io_context& ioc, asio::awaitable<T> task) {
  try {
    run_blocking(ioc, std::move(task));
    return "returned";
  } catch (const LimitError& e) {
    return std::string("LimitError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other exception: ") + e.what();
  }
}

// What the call threw and how much the peak memory of this process grew meanwhile, in KiB.
struct Measured {
  std::string outcome;
  std::uint64_t grown_kib;
};
template <class T>
Measured measure(asio::io_context& ioc, asio::awaitable<T> task) {
  reset_peak();
  const std::uint64_t before = peak_kib();
  std::string outcome = outcome_of(ioc, std::move(task));
  return {std::move(outcome), peak_kib() - before};
}

// Memory allowed above the limit under test: the client's buffers, TLS, the server's pieces.
constexpr std::uint64_t kSlackKiB = 48 * 1024;

struct KubeSide {
  KubeSide(const TalkativeServer& server, ReadLimits limits) : kube(ioc.get_executor(), options(server, limits)) {}
  static KubeClientOptions options(const TalkativeServer& server, ReadLimits limits) {
    KubeClientOptions o;
    o.cluster = server.cluster();
    o.limits = limits;
    o.retry.max_attempts = 3;
    o.retry.initial_backoff = std::chrono::milliseconds(10);
    o.request_timeout = std::chrono::seconds(60);
    return o;
  }
  asio::io_context ioc;
  KubeClient kube;
};

ReadLimits small_body(std::uint64_t bytes) {
  ReadLimits l;
  l.max_body_bytes = bytes;
  return l;
}

struct Framing {
  const char* name;
  Answer (*answer)();
};
class EndlessBody : public ::testing::TestWithParam<Framing> {};

TEST_P(EndlessBody, KubeClientStopsAtTheBodyLimitWithTheUrlTheLimitAndTheFlag) {
  auto answer = GetParam().answer;
  TalkativeServer server(true, [answer](const std::string&) { return answer(); });
  KubeSide client(server, small_body(4 * kMiB));
  const auto [outcome, grown] = measure(client.ioc, client.kube.get("/api/v1/namespaces/big/configmaps/one"));
  EXPECT_EQ(outcome, "LimitError: GET " + server.url() +
                         "/api/v1/namespaces/big/configmaps/one: the response body is over the limit of 4194304 bytes "
                         "(4 MiB); raise it with --max-response-mib");
  EXPECT_EQ(server.connections(), 1u) << "an answer over the limit is not asked for again";
  EXPECT_LT(server.bytes_sent(), 64 * kMiB) << "the client read on past the limit";
  EXPECT_LT(grown, 4 * 1024 + kSlackKiB) << "peak memory grew by " << grown << " KiB for a 4 MiB limit";
}

TEST_P(EndlessBody, HttpCallStopsAtTheBodyLimitWithTheUrlTheLimitAndTheFlag) {
  auto answer = GetParam().answer;
  TalkativeServer server(false, [answer](const std::string&) { return answer(); });
  asio::io_context ioc;
  const std::string url = server.url() + "/ws/v1/fullstatedump";
  const auto [outcome, grown] =
      measure(ioc, http_call("GET", url, {}, {}, {}, std::chrono::seconds(60), small_body(4 * kMiB)));
  EXPECT_EQ(outcome, "LimitError: GET " + url +
                         ": the response body is over the limit of 4194304 bytes (4 MiB); raise it with "
                         "--max-response-mib");
  EXPECT_LT(server.bytes_sent(), 64 * kMiB) << "the client read on past the limit";
  EXPECT_LT(grown, 4 * 1024 + kSlackKiB) << "peak memory grew by " << grown << " KiB for a 4 MiB limit";
}

INSTANTIATE_TEST_SUITE_P(Framings, EndlessBody,
                         ::testing::Values(Framing{"Chunked", endless_chunks},
                                           Framing{"DeclaredLength", endless_declared_length},
                                           Framing{"UntilClose", endless_until_close}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(EndlessHeader, KubeClientStopsAtTheHeaderLimit) {
  TalkativeServer server(true, [](const std::string&) { return endless_header_field(); });
  KubeSide client(server, ReadLimits{});
  const auto [outcome, grown] = measure(client.ioc, client.kube.get("/version"));
  EXPECT_EQ(outcome, "LimitError: GET " + server.url() +
                         "/version: the response header is over the limit of 65536 bytes (64 KiB) (a fixed limit)");
  EXPECT_EQ(server.connections(), 1u) << "an answer over the limit is not asked for again";
  EXPECT_LT(grown, kSlackKiB) << "peak memory grew by " << grown << " KiB";
}

TEST(EndlessHeader, HttpCallStopsAtTheHeaderLimit) {
  TalkativeServer server(false, [](const std::string&) { return endless_header_field(); });
  asio::io_context ioc;
  const std::string url = server.url() + "/v1/rules";
  const auto [outcome, grown] = measure(ioc, http_call("GET", url));
  EXPECT_EQ(outcome, "LimitError: GET " + url +
                         ": the response header is over the limit of 65536 bytes (64 KiB) (a fixed limit)");
  EXPECT_LT(grown, kSlackKiB) << "peak memory grew by " << grown << " KiB";
}

// A watch whose stream never sends a newline: one event that never ends.
TEST(EndlessWatchLine, WatchStopsAtTheLineLimitAndDoesNotReconnect) {
  TalkativeServer server(true, [](const std::string&) { return endless_chunks(); });
  ReadLimits limits;
  limits.max_watch_line_bytes = 1 * kMiB;
  KubeSide client(server, limits);
  int events = 0;
  std::optional<std::string> outcome;
  asio::cancellation_signal give_up;  // a watch that reconnects would go on for ever
  asio::co_spawn(client.ioc, client.kube.watch("/api/v1/namespaces/w/pods", "7", [&](const WatchEvent&) { ++events; }),
                 asio::bind_cancellation_slot(give_up.slot(), [&](std::exception_ptr e, WatchEnd) {
                   outcome = "returned";
                   if (!e) return;
                   try {
                     std::rethrow_exception(e);
                   } catch (const LimitError& limit) {
                     outcome = std::string("LimitError: ") + limit.what();
                   } catch (const std::exception& other) {
                     outcome = std::string("other exception: ") + other.what();
                   }
                 }));
  reset_peak();
  const std::uint64_t before = peak_kib();
  run_blocking(client.ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 600 && !outcome && server.connections() < 2; ++i) {
      co_await sleep_for(std::chrono::milliseconds(100));
    }
    if (!outcome) give_up.emit(asio::cancellation_type::terminal);
    for (int i = 0; i < 100 && !outcome; ++i) co_await sleep_for(std::chrono::milliseconds(100));
  }());
  const std::uint64_t grown = peak_kib() - before;
  EXPECT_EQ(outcome, "LimitError: GET " + server.url() +
                         "/api/v1/namespaces/w/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=240&"
                         "resourceVersion=7: a watch event (one line of the stream) is over the limit of 1048576 "
                         "bytes (1 MiB) (a fixed limit)");
  EXPECT_EQ(events, 0);
  EXPECT_EQ(server.connections(), 1u) << "the same endless line must not be asked for again";
  EXPECT_LT(server.bytes_sent(), 64 * kMiB) << "the watch read on past the limit";
  EXPECT_LT(grown, 1024 + kSlackKiB) << "peak memory grew by " << grown << " KiB for a 1 MiB line limit";
}

// A list page: `items` objects of about `item_bytes` each, and a continue token (or none).
std::string list_page(int items, std::size_t item_bytes, const std::string& token) {
  boost::json::array array;
  for (int i = 0; i < items; ++i) {
    array.push_back(boost::json::object{{"metadata", {{"name", fmt::format("item-{}", i)}}},
                                        {"data", {{"pad", filler(item_bytes, 'p')}}}});
  }
  boost::json::object meta{{"resourceVersion", "1"}};
  if (!token.empty()) meta["continue"] = token;
  const std::string body = boost::json::serialize(
      boost::json::object{{"kind", "List"}, {"apiVersion", "v1"}, {"metadata", meta}, {"items", array}});
  return fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", body.size(),
                     body);
}

// Pages of 1 MiB, each with a continue token: a list that never ends.
TEST(EndlessList, ListStopsWhenItsPagesTogetherReachTheBodyLimit) {
  const std::string page = list_page(1, 1 * kMiB, "more");
  TalkativeServer server(true, [&page](const std::string&) { return Answer{page, {}, 0, ""}; });
  KubeSide client(server, small_body(8 * kMiB));
  const auto [outcome, grown] = measure(client.ioc, client.kube.list("/api/v1/nodes"));
  EXPECT_EQ(outcome, "LimitError: list " + server.url() +
                         "/api/v1/nodes?limit=500&continue=more: the pages of the list together are over the limit of "
                         "8388608 bytes (8 MiB); raise it with --max-response-mib");
  // What six pages hold once parsed, the seventh's text and its parsed values: over 8 MiB.
  EXPECT_EQ(server.requests(), 7u) << "pages read: the seventh takes the list over 8 MiB";
  EXPECT_LT(grown, 3 * 8 * 1024 + kSlackKiB) << "peak memory grew by " << grown << " KiB for an 8 MiB limit";
}

// Pages of small items, each with a continue token: parsed, such a page takes several times the
// memory of its text (each 0 of "[0,0,...]" is two bytes sent and a 16-byte value held). The list
// is bounded by what its items hold, so peak memory stays near the limit, not a multiple of it.
TEST(EndlessList, AListOfSmallItemsStaysNearTheLimit) {
  std::string zeros = "[0";
  for (int i = 1; i < 1000; ++i) zeros += ",0";
  zeros += "]";
  std::string items;
  for (int i = 0; i < 500; ++i) items += (i == 0 ? "" : ",") + zeros;
  const std::string body = R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"more"},)"
                           R"("items":[)" +
                           items + "]}";
  const std::string page = fmt::format(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", body.size(), body);
  TalkativeServer server(true, [&page](const std::string&) { return Answer{page, {}, 0, ""}; });
  KubeSide client(server, small_body(16 * kMiB));
  const auto [outcome, grown] = measure(client.ioc, client.kube.list("/api/v1/nodes"));
  EXPECT_EQ(outcome, "LimitError: list " + server.url() +
                         "/api/v1/nodes?limit=500&continue=more: the pages of the list together are over the limit of "
                         "16777216 bytes (16 MiB); raise it with --max-response-mib");
  EXPECT_LT(grown, 2 * 16 * 1024 + kSlackKiB) << "peak memory grew by " << grown << " KiB for a 16 MiB limit";
}

TEST(EndlessList, AListWithinTheLimitIsReadWhole) {
  int served = 0;
  TalkativeServer server(true, [&served](const std::string&) {
    ++served;
    return Answer{list_page(3, 100, served < 4 ? "more" : ""), {}, 0, ""};
  });
  KubeSide client(server, small_body(8 * kMiB));
  ListResult all = run_blocking(client.ioc, client.kube.list("/api/v1/nodes"));
  EXPECT_EQ(all.items.size(), 12u);
}

// One ADDED event of a pod named p-<i>, with UID uid-<i>, as a chunk of a watch stream.
std::string pod_event(std::uint64_t i) {
  boost::json::object meta{{"name", fmt::format("p-{}", i)}, {"uid", fmt::format("uid-{}", i)}, {"namespace", "w"}};
  boost::json::object pod{{"metadata", std::move(meta)}};
  return chunk(boost::json::serialize(boost::json::object{{"type", "ADDED"}, {"object", std::move(pod)}}) + "\n");
}

// A pod watch whose server invents a new pod in every event.
TEST(InventedPods, PodWatchEndsWithAnErrorPastItsPodLimit) {
  TalkativeServer server(true, [](const std::string& target) {
    if (target.find("watch=1") == std::string::npos) return Answer{list_page(0, 0, ""), {}, 0, ""};
    return Answer{kChunkedHead, pod_event, 100'000, ""};
  });
  KubeSide client(server, ReadLimits{});
  PodWatcher watcher(client.kube, "w", "faultline.io/workload", 50);
  run_blocking(client.ioc, watcher.start());
  run_blocking(client.ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < 600 && watcher.error().empty(); ++i) co_await sleep_for(std::chrono::milliseconds(100));
  }());
  EXPECT_EQ(watcher.error(),
            "pod watch failed: pod watch of namespace w, label faultline.io/workload: more than 50 pods, far more than "
            "the workload creates: something else creates pods with its label");
  EXPECT_EQ(watcher.counts().pods, 50);
  run_blocking(client.ioc, watcher.stop());
}

}  // namespace
}  // namespace faultline::harness
