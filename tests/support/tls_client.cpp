#include "tls_client.hpp"

#include <boost/algorithm/string/case_conv.hpp>
#include <boost/beast/http.hpp>
#include <boost/system/system_error.hpp>

#include <sys/socket.h>

#include <stdexcept>

namespace faultline::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Watchdog::Watchdog(int fd, std::chrono::seconds limit) {
  thread_ = std::thread([this, fd, limit] {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
      fired_ = true;
      ::shutdown(fd, SHUT_RDWR);  // the blocked read/write returns with an error
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Watchdog::fired() const {
  std::lock_guard lock(mutex_);
  return fired_;
}

TlsClient::TlsClient(net::Endpoint endpoint, const net::ClientTlsOptions& tls, std::chrono::seconds limit)
    : endpoint_(std::move(endpoint)),
      ctx_(net::make_client_context(tls)),
      verify_(!tls.insecure_skip_verify),
      limit_(limit) {}

TlsClient::TlsClient(unsigned short port, const std::string& ca_pem, std::chrono::seconds limit)
    : TlsClient(net::Endpoint{"127.0.0.1", port}, net::ClientTlsOptions{ca_pem, false, "", ""}, limit) {
  if (auto ec = connect()) throw boost::system::system_error(ec, "connecting to " + endpoint_.to_string());
}

TlsClient::~TlsClient() { close(); }

boost::system::error_code TlsClient::connect() {
  close();
  fired_ = false;
  stream_.emplace(io_, ctx_);
  auto& socket = beast::get_lowest_layer(*stream_);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address(endpoint_.host), endpoint_.port), ec);
  if (!ec) socket.set_option(tcp::no_delay(true), ec);
  if (ec) {
    close();
    return ec;
  }
  net::prepare_client_ssl(stream_->native_handle(), endpoint_.host, verify_);
  watchdog_ = std::make_unique<Watchdog>(socket.native_handle(), limit_);
  stream_->handshake(asio::ssl::stream_base::client, ec);
  if (ec) close();
  return ec;
}

Reply TlsClient::request(http::verb method, const std::string& target, const std::string& body,
                         const std::map<std::string, std::string>& headers) {
  return stream(method, target, nullptr, body, headers);
}

Reply TlsClient::stream(http::verb method, const std::string& target,
                        const std::function<bool(std::string_view)>& on_data, const std::string& body,
                        const std::map<std::string, std::string>& headers) {
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

void TlsClient::close() {
  if (watchdog_) {
    fired_ = watchdog_->fired();
    watchdog_.reset();  // before the descriptor closes: it could be reused by then
  }
  if (!stream_) return;
  boost::system::error_code ec;
  beast::get_lowest_layer(*stream_).close(ec);
  stream_.reset();
  buffer_.clear();
}

TlsClient::Stream& TlsClient::tls_stream() {
  if (!stream_) throw std::logic_error("TlsClient: not connected to " + endpoint_.to_string());
  return *stream_;
}

bool TlsClient::watchdog_fired() const { return watchdog_ ? watchdog_->fired() : fired_; }

Reply& TlsClient::drop(Reply& reply) {
  close();
  return reply;
}

}  // namespace faultline::testing
