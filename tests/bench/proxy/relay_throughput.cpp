// relay_throughput_bench: 100 MB (by default) over HTTPS, directly to an in-process upstream and
// through a faultline-proxy child process, both directions (GET response body, POST request
// body). Prints seconds and MB/s per run and the proxy's peak RSS. Run it through
// tests/bench/proxy/bench-relay-throughput, which builds it in Release first.
//
// Usage: relay_throughput_bench [--proxy PATH] [--size-mb N] [--runs N]

#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <vector>

#include "relay_support.hpp"
#include "test_upstream.hpp"

using namespace faultline;
using namespace faultline::relaytest;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

namespace {

// GET /bytes?size=N; returns seconds; throws when the body is short.
double timed_get(TlsClient& client, std::uint64_t size) {
  auto start = Clock::now();
  http::request<http::empty_body> req{http::verb::get, "/bytes?size=" + std::to_string(size), 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(client.tls_stream(), req);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(client.tls_stream(), client.buffer(), parser);
  std::vector<char> piece(256 * 1024);
  std::uint64_t got = 0;
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    boost::system::error_code ec;
    http::read_some(client.tls_stream(), client.buffer(), parser, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "GET body");
    got += piece.size() - parser.get().body().size;
  }
  if (got != size) throw std::runtime_error("GET: short body");
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// POST /digest with N bytes (the upstream hashes them); returns seconds.
double timed_post(TlsClient& client, std::uint64_t size) {
  static std::vector<char> piece = [] {
    std::vector<char> p(256 * 1024);
    fill_pattern(p.data(), 0, p.size());
    return p;
  }();
  auto start = Clock::now();
  http::request<http::buffer_body> req{http::verb::post, "/digest", 11};
  req.set(http::field::host, "127.0.0.1");
  req.content_length(size);
  http::request_serializer<http::buffer_body> sr{req};
  http::write_header(client.tls_stream(), sr);
  for (std::uint64_t offset = 0; offset < size; offset += piece.size()) {
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), size - offset));
    req.body().data = piece.data();
    req.body().size = n;
    req.body().more = offset + n < size;
    boost::system::error_code ec;
    http::write(client.tls_stream(), sr, ec);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec, "POST body");
  }
  http::response<http::string_body> res;
  http::read(client.tls_stream(), client.buffer(), res);
  if (res.body().rfind(std::to_string(size) + " ", 0) != 0)
    throw std::runtime_error("POST: upstream got " + res.body());
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  fs::path proxy_path = proxy_binary();
  std::uint64_t size_mb = 100;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--proxy") proxy_path = argv[i + 1];
    else if (flag == "--size-mb") size_mb = std::stoull(argv[i + 1]);
    else if (flag == "--runs") runs = std::stoi(argv[i + 1]);
    else {
      std::cerr << "relay_throughput_bench: unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    const std::uint64_t size = size_mb * 1000 * 1000;
    TempDir dir("faultline-relay-bench");
    auto upstream_ca = net::generate_ca("bench-upstream-ca");
    auto proxy_ca = net::generate_ca("bench-proxy-ca");
    TestUpstream upstream(net::mint_serving_cert(upstream_ca, {"127.0.0.1"}));
    net::write_file(dir.path() / "upstream-ca.crt", upstream_ca.cert_pem);
    auto proxy =
        start_proxy_process(dir.path(), proxy_ca,
                            {"--upstream", "https://127.0.0.1:" + std::to_string(upstream.port()), "--upstream-ca",
                             (dir.path() / "upstream-ca.crt").string(), "--log-level", "warn"},
                            proxy_path);
    TlsClient direct(upstream.port(), upstream_ca.cert_pem, std::chrono::seconds(3600));
    TlsClient proxied(proxy->port(), proxy_ca.cert_pem, std::chrono::seconds(3600));
    auto rss_before = proxy->peak_rss_kib();

    std::printf("%-26s %10s %10s %10s\n", "", "direct", "proxy", "ratio");
    for (auto [name, op] :
         {std::pair{"GET (response body)", &timed_get}, std::pair{"POST (request body)", &timed_post}}) {
      std::vector<double> d, p;
      for (int r = 0; r < runs; ++r) {
        d.push_back(op(direct, size));
        p.push_back(op(proxied, size));
        std::fprintf(stderr, "  %s run %d: direct %.2f s, proxy %.2f s\n", name, r + 1, d.back(), p.back());
      }
      double md = median(d), mp = median(p);
      double mb = static_cast<double>(size) / 1e6;
      std::printf("%-26s %8.2f s %8.2f s %9.2fx   (median of %d, %llu MB)\n", name, md, mp, mp / md, runs,
                  static_cast<unsigned long long>(size_mb));
      std::printf("%-26s %6.0f MB/s %6.0f MB/s\n", "", mb / md, mb / mp);
    }
    std::printf("proxy peak RSS: %llu KiB before, %llu KiB after\n", static_cast<unsigned long long>(rss_before),
                static_cast<unsigned long long>(proxy->peak_rss_kib()));
  } catch (const std::exception& e) {
    std::cerr << "relay_throughput_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
