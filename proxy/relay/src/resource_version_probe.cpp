// The current resourceVersion, learned upstream for stale-read rules.
#include "resource_version_probe.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>

#include <spdlog/spdlog.h>

#include "faultline/faults/actions/stale_read.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/net/tls_stream.hpp"

// GCC 12 reports a mismatched new/delete on this file's coroutine frames: a false positive (Asio's
// awaitable frames allocate and free through the same pair of its own operators), as
// harness/include/faultline/harness/gcc12_coroutine_frames.hpp says for the harness.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace faultline::proxy {

namespace http = boost::beast::http;
using net::use_tuple;

boost::asio::awaitable<std::string> current_resource_version(Server::Impl& server,
                                                             const boost::asio::any_io_executor& executor,
                                                             const std::optional<std::string>& authorization,
                                                             std::string& failure) {
  const ServerOptions& options = server.options;
  const UpstreamOptions& up = options.upstream;
  net::TlsStream stream(executor, server.upstream_tls);
  boost::asio::ip::tcp::resolver resolver(executor);
  const net::TlsConnectOptions connect{.verify_name = up.endpoint.host,
                                       .verify = !up.tls.insecure_skip_verify,
                                       .timeout = options.connect_timeout,
                                       .no_delay = true};
  if (auto error = co_await net::connect_tls(stream, resolver, up.endpoint, connect)) {
    failure = error->message();
    co_return std::string();
  }
  http::request<http::empty_body> req{http::verb::get, up.base_path + "/api/v1/namespaces?limit=1", 11};
  req.set(http::field::host, up.endpoint.to_string());
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, "faultline-proxy (stale-read)");
  if (up.replace_identity) {
    if (!up.token.empty()) req.set(http::field::authorization, "Bearer " + up.token);
  } else if (authorization) {
    req.set(http::field::authorization, *authorization);
  } else if (up.fallback_token) {
    req.set(http::field::authorization, "Bearer " + up.fallback_token->current());
  }
  req.keep_alive(false);
  stream.expires_after(options.connect_timeout);
  auto [wec, written] = co_await http::async_write(stream, req, use_tuple);
  if (wec) {
    failure = "sending the request: " + wec.message();
    co_return std::string();
  }
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kProbeBodyLimit);
  auto [rec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
  if (rec) {
    failure = "reading the answer: " + rec.message();
    co_return std::string();
  }
  const auto& res = parser.get();
  if (res.result_int() != 200) {
    failure = "kube-apiserver answered " + std::to_string(res.result_int());
    co_return std::string();
  }
  boost::system::error_code jec;
  auto json = boost::json::parse(res.body(), jec);
  const boost::json::value* rv = nullptr;
  if (!jec && json.is_object()) {
    if (const auto* meta = json.get_object().if_contains("metadata"); meta && meta->is_object())
      rv = meta->get_object().if_contains("resourceVersion");
  }
  if (!rv || !rv->is_string() || !faults::actions::is_resource_version(rv->get_string())) {
    failure = "the answer carries no metadata.resourceVersion";
    co_return std::string();
  }
  co_return std::string(rv->get_string());
}

boost::asio::awaitable<void> record_resource_version(Server::Impl& server, boost::asio::any_io_executor executor,
                                                     std::vector<int> rules, std::optional<std::string> authorization,
                                                     std::uint64_t conn) {
  std::string failure;
  const std::string rv = co_await current_resource_version(server, executor, authorization, failure);
  if (rv.empty()) {
    spdlog::error(
        "conn {}: stale-read: could not learn the current resourceVersion upstream ({}); its rules go on "
        "without one and forward their requests as they are",
        conn, failure);
    co_return;
  }
  const auto scenario = server.engine.scenario();
  for (int rule : rules) {
    server.engine.record_resource_version(rule, rv);
    const bool named = scenario && rule >= 0 && static_cast<std::size_t>(rule) < scenario->faults.size();
    spdlog::info("conn {}: rule '{}' (stale-read) records resourceVersion {}", conn,
                 named ? scenario->faults[static_cast<std::size_t>(rule)].name : std::string("?"), rv);
  }
}

}  // namespace faultline::proxy
