#pragma once
// The tests' blocking HTTPS/1.1 client: whole requests (what a client sees: status, headers, body,
// the error that ended the exchange, nothing interpreted), or the TLS stream itself for bytes
// written and read by hand. Each connection has a deadline: a watchdog shuts its socket down
// then, so a blocked read or write fails instead of hanging the test.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::testing {

// Shuts a socket down when a deadline passes, so a blocking read or write fails instead of
// hanging the test. `fired()` tells the failure message why.
class Watchdog {
 public:
  Watchdog(int fd, std::chrono::seconds limit);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  bool fired() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;
};

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
  using Stream = boost::beast::ssl_stream<boost::asio::ip::tcp::socket>;
  static constexpr std::chrono::seconds kDefaultLimit{180};

  // Not connected yet: connect() or the first request connects to `endpoint` (an IP literal),
  // with `tls`'s trust and verification. `limit`: each connection's deadline.
  TlsClient(net::Endpoint endpoint, const net::ClientTlsOptions& tls, std::chrono::seconds limit = kDefaultLimit);
  // Connected at once to 127.0.0.1:port, trusting `ca_pem` and verifying 127.0.0.1; throws
  // boost::system::system_error when TCP or TLS fails (a refused connection, a reset handshake).
  TlsClient(unsigned short port, const std::string& ca_pem, std::chrono::seconds limit = kDefaultLimit);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  // Connects (TCP + TLS), closing the current connection first; the error when it fails
  // (connection refused, reset, ...).
  boost::system::error_code connect();
  bool connected() const { return stream_.has_value(); }

  // One request on the current connection (connecting first when there is none).
  Reply request(boost::beast::http::verb method, const std::string& target, const std::string& body = {},
                const std::map<std::string, std::string>& headers = {});

  // Like request(), but hands every body piece to `on_data` as it arrives; returning false stops
  // reading and closes the connection (the body collected so far stays in Reply::body).
  Reply stream(boost::beast::http::verb method, const std::string& target,
               const std::function<bool(std::string_view)>& on_data, const std::string& body = {},
               const std::map<std::string, std::string>& headers = {});

  void close();

  // The current connection and its read buffer, for bytes written and read by hand (throws
  // std::logic_error when not connected).
  Stream& tls_stream();
  boost::beast::flat_buffer& buffer() { return buffer_; }
  // Whether the deadline of the current (or last) connection passed and shut it down.
  bool watchdog_fired() const;

 private:
  Reply& drop(Reply& reply);

  net::Endpoint endpoint_;
  boost::asio::io_context io_;
  boost::asio::ssl::context ctx_;
  bool verify_;
  std::chrono::seconds limit_;
  std::optional<Stream> stream_;
  boost::beast::flat_buffer buffer_;
  std::unique_ptr<Watchdog> watchdog_;  // of stream_'s socket; stopped before the socket closes
  bool fired_ = false;                  // the closed connection's watchdog fired
};

}  // namespace faultline::testing
