#include "faultline/admin/admin_server.hpp"

#include "admin_routes.hpp"
#include "faultline/net/accept_failures.hpp"
#include "faultline/net/async.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace faultline::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using net::use_tuple;

namespace {

// After answering a request whose body we did not read, keep reading (and discarding) a while
// before closing: closing with unread data makes the kernel send RST, which can destroy the
// answer before the client reads it.
constexpr std::size_t kDrainLimit = 1024 * 1024;
constexpr std::chrono::seconds kDrainTimeout{2};

std::string path_of(std::string_view target) {
  auto url = boost::urls::parse_origin_form(target);
  return url ? std::string(url->path()) : std::string("<unparseable target>");
}

// Errors of the HTTP parser itself (malformed request), as opposed to the connection ending.
bool is_malformed_request(const beast::error_code& ec) {
  static const auto& http_category = beast::error_code(http::error::bad_target).category();
  return ec.category() == http_category && ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// Only this host can reach a loopback address (127.0.0.0/8, ::1, or 127.x mapped into IPv6); the
// unspecified address (0.0.0.0, ::) listens on every interface.
bool is_loopback(const asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).is_loopback();
  }
  return address.is_loopback();
}

void log_request(const http::request_header<>& header, unsigned status) {
  // Method and path only: queries and headers may carry secrets.
  spdlog::debug("admin API: {} {} -> {}", std::string(header.method_string()), path_of(header.target()), status);
}

// Nothing is expected to escape a coroutine of the admin server (errors come back as values):
// whatever does ends that connection or the listener, never the thread running it.
auto report_escaped(const char* what) {
  return [what](std::exception_ptr error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("admin API: {} ended by an internal error: {}", what, e.what());
    } catch (...) {
      spdlog::error("admin API: {} ended by an internal error", what);
    }
  };
}

class Connection;

}  // namespace

struct AdminServer::Impl : std::enable_shared_from_this<AdminServer::Impl> {
  Impl(asio::io_context& ioc, AdminServerOptions opts, AdminBackend& be)
      : io(ioc),
        options(std::move(opts)),
        backend(be),
        acceptor(asio::make_strand(ioc)),
        retry_timer(acceptor.get_executor()) {}

  static asio::awaitable<void> accept_loop(std::shared_ptr<Impl> self);
  void refuse(tcp::socket& socket);
  void serve(tcp::socket socket);
  void forget(const Connection* connection);
  void close_all();

  asio::io_context& io;
  const AdminServerOptions options;
  AdminBackend& backend;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;  // the pause after a failed accept; on the acceptor's strand
  // Connections refused at options.max_connections and not yet reported (at most one warning
  // every 10 s), on the acceptor's strand.
  std::uint64_t refused_unreported = 0;
  std::optional<std::chrono::steady_clock::time_point> refused_reported;
  std::atomic<std::size_t> open_connections{0};  // Connections alive (each holds one descriptor)
  tcp::endpoint endpoint;
  std::mutex connections_mutex;
  // By address: a weak pointer locked under the mutex could become a connection's last owner and
  // run its destructor, which calls forget(), under the mutex.
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> connections;
  bool stopped = false;  // guarded by connections_mutex
};

namespace {

// One admin connection: read a request, answer it, repeat while keep-alive; one coroutine on the
// connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<AdminServer::Impl> server)
      : stream_(std::move(socket)), server_(std::move(server)), options_(server_->options) {
    ++server_->open_connections;
    server_->backend.admin_connection_opened();
  }
  ~Connection() {
    server_->forget(this);
    --server_->open_connections;
    server_->backend.admin_connection_closed();
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  static asio::awaitable<void> run(std::shared_ptr<Connection> self) {
    co_await self->serve();
    self->stream_.close();
  }

  // Called from any thread by AdminServer::stop(): the pending read, write or drain ends at once.
  void close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.close();
    });
  }

  asio::any_io_executor executor() { return stream_.get_executor(); }

 private:
  // Requests one after another while the client keeps the connection alive; the last answer
  // (an error, or the one to a request that asked to close) is followed by drain().
  asio::awaitable<void> serve() {
    AdminResponse last;
    for (bool first = true;; first = false) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(options_.header_limit));
      parser.body_limit(boost::none);  // checked against Content-Length by check_request_header
      // The first request's header must arrive soon after accept (its deadline runs from then).
      stream_.expires_after(
          first ? std::min<std::chrono::steady_clock::duration>(options_.timeout, options_.first_request_timeout)
                : options_.timeout);
      auto [ec, header_bytes] = co_await http::async_read_header(stream_, buffer_, parser, use_tuple);
      if (ec == http::error::header_limit) {
        last = error_response(http::status::request_header_fields_too_large,
                              "request header exceeds " + std::to_string(options_.header_limit) + " bytes");
        break;
      }
      if (is_malformed_request(ec)) {
        last = error_response(http::status::bad_request, "malformed HTTP request: " + ec.message());
        break;
      }
      if (ec) co_return;  // peer closed, timeout, reset: nothing to answer
      const auto& header = parser.get().base();
      if (auto early = check_request_header(header, options_)) {
        log_request(header, early->result_int());
        last = std::move(*early);
        break;
      }
      if (header[http::field::expect] == "100-continue") {
        // curl sends this before larger PUT bodies and would otherwise wait a second.
        http::response<http::empty_body> cont{http::status::continue_, header.version()};
        auto [wec, written] = co_await http::async_write(stream_, cont, use_tuple);
        if (wec) co_return;
      }
      parser.body_limit(options_.body_limit);  // chunked bodies have no Content-Length to check
      stream_.expires_after(options_.timeout);
      auto [bec, body_bytes] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
      if (bec == http::error::body_limit) {
        last = error_response(http::status::payload_too_large,
                              "body exceeds the limit of " + std::to_string(options_.body_limit) + " bytes");
        break;
      }
      if (bec) co_return;
      const AdminRequest request = parser.release();
      AdminResponse response = handle_admin_request(request, server_->backend, options_);
      log_request(request.base(), response.result_int());
      if (!request.keep_alive()) {
        last = std::move(response);
        break;
      }
      response.keep_alive(true);
      const bool sent = co_await write(response);
      if (!sent) co_return;
    }
    last.keep_alive(false);
    const bool sent = co_await write(last);
    if (sent) co_await drain();
  }

  // Whether the whole response went out.
  asio::awaitable<bool> write(AdminResponse& response) {
    response.prepare_payload();
    stream_.expires_after(options_.timeout);
    auto [ec, n] = co_await http::async_write(stream_, response, use_tuple);
    co_return !ec;
  }

  // Ends our side, then reads and discards what the client still sends, up to a bound.
  asio::awaitable<void> drain() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    std::array<char, 8192> discard{};
    for (std::size_t drained = 0; drained < kDrainLimit;) {
      auto [ec, n] = co_await stream_.async_read_some(asio::buffer(discard), use_tuple);
      drained += n;
      if (ec) break;
    }
  }

  beast::tcp_stream stream_;
  std::shared_ptr<AdminServer::Impl> server_;
  const AdminServerOptions& options_;
  beast::flat_buffer buffer_;
};

}  // namespace

asio::awaitable<void> AdminServer::Impl::accept_loop(std::shared_ptr<Impl> self) {
  auto& acceptor = self->acceptor;
  net::AcceptFailures failures;
  for (;;) {
    // Each connection on a strand of its own.
    auto [ec, accepted] = co_await acceptor.async_accept(asio::make_strand(self->io), use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // E.g. out of file descriptors: the listener must survive it, without spinning (the same
      // error comes back at once) or flooding the log; descriptors free up as connections end.
      if (auto count = failures.count(std::chrono::steady_clock::now())) {
        spdlog::error("admin API: accepting connections failed {} time(s): {}; retrying every {} ms", *count,
                      ec.message(), net::kAcceptRetry.count());
      }
      self->retry_timer.expires_after(net::kAcceptRetry);
      co_await self->retry_timer.async_wait(use_tuple);  // stop() cancels it and closes the acceptor
      if (!acceptor.is_open()) co_return;
      continue;
    }
    tcp::socket socket(std::move(accepted));  // keeps the strand as its executor
    if (self->open_connections.load() >= self->options.max_connections) {
      self->refuse(socket);
    } else {
      self->serve(std::move(socket));
    }
  }
}

// Beyond the cap: closed before reading a byte (a bare connection costs a descriptor only this
// long), counted, and reported at most every 10 s.
void AdminServer::Impl::refuse(tcp::socket& socket) {
  beast::error_code ignored;
  socket.close(ignored);
  backend.admin_connection_refused();
  ++refused_unreported;
  const auto now = std::chrono::steady_clock::now();
  if (refused_reported && now - *refused_reported < std::chrono::seconds(10)) return;
  spdlog::warn("admin API: {} connection(s) refused: {} admin connections are open (--admin-max-connections)",
               refused_unreported, options.max_connections);
  refused_unreported = 0;
  refused_reported = now;
}

void AdminServer::Impl::serve(tcp::socket socket) {
  auto connection = std::make_shared<Connection>(std::move(socket), shared_from_this());
  bool stopping = false;
  {
    std::lock_guard lock(connections_mutex);
    connections.emplace(connection.get(), connection);
    stopping = stopped;
  }
  if (stopping) connection->close();  // accepted while stop() ran: closed like the others
  auto executor = connection->executor();
  asio::co_spawn(executor, Connection::run(std::move(connection)), report_escaped("a connection"));
}

void AdminServer::Impl::forget(const Connection* connection) {
  std::lock_guard lock(connections_mutex);
  connections.erase(connection);
}

void AdminServer::Impl::close_all() {
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(connections_mutex);
    stopped = true;
    for (auto& [raw, weak] : connections) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->close();
}  // `open` is released outside the mutex (a release may run ~Connection -> forget)

AdminServer::AdminServer(asio::io_context& ioc, AdminServerOptions options, AdminBackend& backend)
    : impl_(std::make_shared<Impl>(ioc, std::move(options), backend)) {}

AdminServer::~AdminServer() { stop(); }

void AdminServer::start() {
  const std::string& a = impl_->options.address;
  const std::string where =
      (a.find(':') != std::string::npos ? "[" + a + "]" : a) + ":" + std::to_string(impl_->options.port);
  beast::error_code ec;
  const auto address = asio::ip::make_address(impl_->options.address, ec);
  if (ec) throw std::system_error(ec, "admin API: invalid listen address " + impl_->options.address);
  const tcp::endpoint endpoint{address, impl_->options.port};
  auto& acceptor = impl_->acceptor;
  auto check = [&](const char* step) {
    if (ec) throw std::system_error(ec, std::string("admin API: cannot ") + step + " " + where);
  };
  acceptor.open(endpoint.protocol(), ec);
  check("open a socket for");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  check("set SO_REUSEADDR for");
  acceptor.bind(endpoint, ec);
  check("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  check("listen on");
  impl_->endpoint = acceptor.local_endpoint();
  const auto& bound = impl_->endpoint;
  const std::string host =
      bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  spdlog::info("admin API listening on http://{}:{}{}", host, bound.port(),
               impl_->options.token.empty() ? "" : " (bearer token required)");
  if (impl_->options.token.empty() && !is_loopback(bound.address())) {
    // Whoever reaches this address can load scenarios, start outages and read the audit log.
    spdlog::warn(
        "admin API listens on {} (not loopback) WITHOUT authentication: anyone who can reach it can "
        "change the faults the proxy injects; give a token (--admin-token-file) or listen on 127.0.0.1",
        host);
  }
  asio::co_spawn(acceptor.get_executor(), Impl::accept_loop(impl_), report_escaped("accepting connections"));
}

tcp::endpoint AdminServer::local_endpoint() const { return impl_->endpoint; }

void AdminServer::stop() {
  asio::post(impl_->acceptor.get_executor(), [impl = impl_] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry_timer.cancel();
  });
  impl_->close_all();
}

}  // namespace faultline::admin
