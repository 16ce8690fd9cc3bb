#pragma once
// A blocking HTTPS/1.1 client for the proxy's integration tests: what a client sees (status,
// headers, body, the error that ended the connection), nothing interpreted.

#include <boost/algorithm/string/case_conv.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <functional>
#include <map>
#include <string>

#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct Reply {
  int status = 0;
  std::multimap<std::string, std::string> headers;  // names lower-cased
  std::string body;
  boost::system::error_code error;  // what ended the exchange (empty: a complete response)
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class TlsClient {
 public:
  TlsClient(net::Endpoint endpoint, const net::ClientTlsOptions& tls)
      : endpoint_(std::move(endpoint)), ctx_(net::make_client_context(tls)), verify_(!tls.insecure_skip_verify) {}

  // Connects (TCP + TLS); the error when it fails (connection refused, reset, ...).
  boost::system::error_code connect() {
    stream_.emplace(io_, ctx_);
    boost::system::error_code ec;
    asio::ip::tcp::endpoint ep(asio::ip::make_address(endpoint_.host), endpoint_.port);
    beast::get_lowest_layer(*stream_).connect(ep, ec);
    if (ec) return ec;
    net::prepare_client_ssl(stream_->native_handle(), endpoint_.host, verify_);
    stream_->handshake(asio::ssl::stream_base::client, ec);
    return ec;
  }
  bool connected() const { return stream_.has_value(); }

  // One request on the current connection (connecting first when there is none).
  Reply request(http::verb method, const std::string& target, const std::string& body = {},
                const std::map<std::string, std::string>& headers = {}) {
    return stream(method, target, nullptr, body, headers);
  }

  // Like request(), but hands every body piece to `on_data` as it arrives; returning false stops
  // reading (the body collected so far stays in Reply::body).
  Reply stream(http::verb method, const std::string& target, const std::function<bool(std::string_view)>& on_data,
               const std::string& body = {}, const std::map<std::string, std::string>& headers = {}) {
    Reply reply;
    if (!stream_ && (reply.error = connect())) return reply;
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, endpoint_.to_string());
    req.set(http::field::user_agent, "faultline-proxy-integration-test");
    for (const auto& [name, value] : headers) req.set(name, value);
    if (!body.empty() || method == http::verb::post || method == http::verb::put) {
      req.body() = body;
      req.prepare_payload();
    }
    http::write(*stream_, req, reply.error);
    if (reply.error) return drop(reply);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    if (method == http::verb::head) parser.skip(true);
    http::read_header(*stream_, buffer_, parser, reply.error);
    if (reply.error) return drop(reply);
    reply.status = parser.get().result_int();
    for (const auto& field : parser.get()) {
      reply.headers.emplace(boost::algorithm::to_lower_copy(std::string(field.name_string())),
                            std::string(field.value()));
    }
    char chunk[64 * 1024];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      http::read_some(*stream_, buffer_, parser, reply.error);
      if (reply.error == http::error::need_buffer) reply.error = {};
      if (reply.error) return drop(reply);
      std::string_view piece(chunk, sizeof chunk - parser.get().body().size);
      reply.body.append(piece);
      if (on_data && !piece.empty() && !on_data(piece)) {
        close();
        return reply;
      }
    }
    if (!parser.get().keep_alive()) close();
    return reply;
  }

  void close() {
    if (!stream_) return;
    boost::system::error_code ec;
    beast::get_lowest_layer(*stream_).close(ec);
    stream_.reset();
    buffer_.clear();
  }

 private:
  Reply& drop(Reply& reply) {
    close();
    return reply;
  }

  net::Endpoint endpoint_;
  asio::io_context io_;
  asio::ssl::context ctx_;
  bool verify_;
  std::optional<beast::ssl_stream<asio::ip::tcp::socket>> stream_;
  beast::flat_buffer buffer_;
};

}  // namespace faultline::testing
