#include "relay_support.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>

#include <cstdlib>
#include <optional>
#include <sstream>

namespace faultline::relaytest {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::unique_ptr<ProxyProcess> start_proxy_process(const fs::path& dir, const net::CertifiedKey& ca,
                                                  const std::vector<std::string>& extra_args, const fs::path& binary) {
  net::write_file(dir / "proxy-ca.crt", ca.cert_pem);
  net::write_file(dir / "proxy-ca.key", ca.key_pem, true);
  std::vector<std::string> args = {"--ca-cert", (dir / "proxy-ca.crt").string(), "--ca-key",
                                   (dir / "proxy-ca.key").string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<ProxyProcess>(dir, "proxy", args, std::nullopt, binary);
}

AdminAnswer admin_request(unsigned short port, const std::string& method, const std::string& target,
                          const std::string& token) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  req.keep_alive(false);
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{256} * 1024 * 1024);  // the audit ring's whole 64 MiB, and more
  http::read(socket, buffer, parser);
  auto res = parser.release();
  return {static_cast<int>(res.result_int()), std::move(res.body())};
}

unsigned short unused_port() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

std::size_t count_lines_with(const std::string& text, const std::string& a, const std::string& b) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);)
    n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
  return n;
}

unsigned long RandomInput::from_env(const char* name, unsigned long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::stoul(value) : fallback;
}

std::string random_faults_scenario() {
  return "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: random-faults}\nseed: 7\nfaults:\n"
         "  - {name: reset, match: {paths: [/headers]}, when: {probability: 0.2},\n"
         "     action: {type: reset}}\n"
         "  - {name: close, match: {paths: [/headers]}, when: {probability: 0.2},\n"
         "     action: {type: close}}\n"
         "  - {name: respond, match: {paths: [/missing]}, when: {probability: 0.5},\n"
         "     action: {type: respond, code: 503}}\n"
         "  - {name: hang, match: {paths: [/hang]},\n"
         "     action: {type: hang, duration: 200ms}}\n"
         "  - {name: delay, match: {paths: [/bytes]}, when: {probability: 0.3},\n"
         "     action: {type: delay, latency: 20ms, jitter: 20ms}}\n"
         "  - {name: drop, match: {paths: [/bytes]}, when: {probability: 0.1},\n"
         "     action: {type: drop-response}}\n"
         "  - {name: goaway-abrupt, match: {paths: [/bytes]}, when: {probability: 0.05},\n"
         "     action: {type: goaway, mode: abrupt}}\n"
         "  - {name: goaway, match: {paths: [/bytes]}, when: {probability: 0.05},\n"
         "     action: {type: goaway}}\n"
         "  - {name: stall, match: {paths: [/bytes]}, when: {probability: 0.02},\n"
         "     action: {type: stall, duration: 100ms}}\n"
         "  - {name: hold, match: {paths: [/bytes]}, when: {probability: 0.05},\n"
         "     action: {type: hold, count: 2, duration: 50ms}}\n";
}

}  // namespace faultline::relaytest
