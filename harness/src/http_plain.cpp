#include "faultline/harness/http_plain.hpp"

#include <boost/algorithm/string/case_conv.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <stdexcept>

#include "faultline/harness/async.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"

namespace faultline::harness {
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// The URL's step that failed, for the error message.
void throw_step(const std::string& method, const std::string& url, const char* step,
                const boost::system::error_code& ec) {
  if (ec) throw std::runtime_error(method + " " + url + ": " + step + ": " + ec.message());
}

}  // namespace

// One request and its answer on a connected stream (tcp_stream, or ssl_stream over one, whose
// lowest layer has the deadline).
template <class Stream>
asio::awaitable<PlainResponse> exchange(Stream& stream, const http::request<http::string_body>& req,
                                        const std::string& method, const std::string& url, ReadLimits limits) {
  auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
  throw_step(method, url, "write", wec);
  http::response_parser<http::string_body> parser;
  parser.body_limit(limits.max_body_bytes);
  parser.header_limit(limits.max_header_bytes);
  beast::flat_buffer buffer(read_buffer_bound(limits));
  auto [rdec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
  throw_if_limit(rdec, limits, method + " " + url);
  // A TLS server that closes without close_notify after a complete answer is not a failure.
  if (rdec == asio::ssl::error::stream_truncated && parser.is_done()) rdec = {};
  throw_step(method, url, "read", rdec);

  const auto& res = parser.get();
  PlainResponse out;
  out.status = static_cast<int>(res.result_int());
  out.body = res.body();
  for (const auto& field : res) {
    out.headers[boost::algorithm::to_lower_copy(std::string(field.name_string()))] = std::string(field.value());
  }
  co_return out;
}

asio::awaitable<PlainResponse> http_call(std::string method, std::string url, std::string body,
                                         std::string content_type, std::string bearer_token,
                                         std::chrono::seconds timeout, ReadLimits limits) {
  auto parsed = boost::urls::parse_uri(url);
  const bool tls = parsed && parsed->scheme() == "https";
  if (!parsed || (parsed->scheme() != "http" && !tls))
    throw std::runtime_error(url + ": expected an http:// or https:// URL");
  const std::string host = parsed->host();
  const std::string port = parsed->has_port() ? std::string(parsed->port()) : tls ? "443" : "80";
  std::string target = std::string(parsed->encoded_target());
  if (target.empty()) target = "/";

  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, host + ":" + port);
  req.set(http::field::user_agent, kHarnessUserAgent);
  if (!bearer_token.empty()) req.set(http::field::authorization, "Bearer " + bearer_token);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();

  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(executor);
  if (tls) {
    // The peer's certificate is not verified: the local services serve self-signed ones.
    net::ClientTlsOptions options;
    options.insecure_skip_verify = true;
    auto context = net::make_client_context(options);
    beast::ssl_stream<beast::tcp_stream> stream(executor, context);
    const net::Endpoint endpoint{host, parsed->has_port() ? parsed->port_number() : std::uint16_t{443}};
    // One deadline covers connect, handshake, write and read.
    const net::TlsConnectOptions connect{
        .verify_name = host, .verify = false, .timeout = timeout, .deadline_per_step = false, .no_delay = false};
    if (auto failure = co_await net::connect_tls(stream, resolver, endpoint, connect))
      throw std::runtime_error(method + " " + url + ": " + failure->message());
    co_return co_await exchange(stream, req, method, url, limits);
  }
  auto [rec, endpoints] = co_await resolver.async_resolve(host, port, use_tuple);
  throw_step(method, url, "resolve", rec);
  // One deadline covers connect, write and read.
  beast::tcp_stream stream(executor);
  stream.expires_after(timeout);
  auto [cec, connected] = co_await stream.async_connect(endpoints, use_tuple);
  throw_step(method, url, "connect", cec);
  co_return co_await exchange(stream, req, method, url, limits);
}

}  // namespace faultline::harness
