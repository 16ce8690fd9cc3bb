#include "faultline/admin/admin_server.hpp"

#include "admin_routes.hpp"
#include "faultline/net/accept_failures.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/bind_handler.hpp>
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
#include <list>
#include <mutex>
#include <optional>
#include <system_error>

namespace faultline::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

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

class Session;

}  // namespace

struct AdminServer::Impl : std::enable_shared_from_this<AdminServer::Impl> {
  Impl(asio::io_context& ioc, AdminServerOptions opts, AdminBackend& be)
      : io(ioc),
        options(std::move(opts)),
        backend(be),
        acceptor(asio::make_strand(ioc)),
        retry_timer(acceptor.get_executor()) {}

  void accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void refuse(tcp::socket& socket);
  void track(const std::shared_ptr<Session>& session);
  void close_all();

  asio::io_context& io;
  const AdminServerOptions options;
  AdminBackend& backend;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;       // on the acceptor's strand
  net::AcceptFailures accept_failures;  // on the acceptor's strand
  // Connections refused at options.max_connections and not yet reported (at most one warning
  // every 10 s), on the acceptor's strand.
  std::uint64_t refused_unreported = 0;
  std::optional<std::chrono::steady_clock::time_point> refused_reported;
  std::atomic<std::size_t> open_connections{0};  // Sessions alive (each holds one descriptor)
  tcp::endpoint endpoint;
  std::mutex sessions_mutex;
  std::list<std::weak_ptr<Session>> sessions;
  bool stopped = false;  // guarded by sessions_mutex
};

namespace {

// One admin connection: read a request, answer it, repeat while keep-alive; all on one strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<AdminServer::Impl> server)
      : stream_(std::move(socket)), server_(std::move(server)) {
    ++server_->open_connections;
    server_->backend.admin_connection_opened();
  }
  ~Session() {
    --server_->open_connections;
    server_->backend.admin_connection_closed();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    asio::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::read_header, shared_from_this()));
  }

  // Called from any thread by AdminServer::stop().
  void close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.close();
    });
  }

 private:
  const AdminServerOptions& options() const { return server_->options; }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options().header_limit));
    parser_->body_limit(boost::none);  // checked against Content-Length by check_request_header
    // The first request's header must arrive soon after accept (its deadline runs from then).
    if (first_request_) {
      stream_.expires_after(
          std::min<std::chrono::steady_clock::duration>(options().timeout, options().first_request_timeout));
    } else {
      stream_.expires_after(options().timeout);
    }
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, std::size_t) {
    if (ec == http::error::header_limit) {
      return reply_and_close(
          error_response(http::status::request_header_fields_too_large,
                         "request header exceeds " + std::to_string(options().header_limit) + " bytes"));
    }
    if (is_malformed_request(ec)) {
      return reply_and_close(error_response(http::status::bad_request, "malformed HTTP request: " + ec.message()));
    }
    if (ec) return stream_.close();  // peer closed, timeout, reset: nothing to answer
    first_request_ = false;
    const auto& header = parser_->get().base();
    if (auto early = check_request_header(header, options())) {
      log(header, early->result_int());
      return reply_and_close(std::move(*early));
    }
    if (header[http::field::expect] == "100-continue") {
      // curl sends this before larger PUT bodies and would otherwise wait a second.
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, header.version());
      return http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code wec, std::size_t) {
        if (wec) return self->stream_.close();
        self->read_body();
      });
    }
    read_body();
  }

  void read_body() {
    parser_->body_limit(options().body_limit);  // chunked bodies have no Content-Length to check
    stream_.expires_after(options().timeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_body, shared_from_this()));
  }

  void on_body(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) {
      return reply_and_close(
          error_response(http::status::payload_too_large,
                         "body exceeds the limit of " + std::to_string(options().body_limit) + " bytes"));
    }
    if (ec) return stream_.close();
    AdminRequest request = parser_->release();
    AdminResponse response = handle_admin_request(request, server_->backend, options());
    log(request.base(), response.result_int());
    response.keep_alive(request.keep_alive());
    write(std::move(response), !request.keep_alive());
  }

  void reply_and_close(AdminResponse response) {
    response.keep_alive(false);
    write(std::move(response), true);
  }

  void write(AdminResponse response, bool close_after) {
    response.prepare_payload();
    response_ = std::move(response);
    stream_.expires_after(options().timeout);
    http::async_write(stream_, response_, [self = shared_from_this(), close_after](beast::error_code ec, std::size_t) {
      if (ec) return self->stream_.close();
      if (close_after) return self->drain_then_close();
      self->read_header();
    });
  }

  void drain_then_close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(drain_buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->drained_ += n;
                              if (ec || self->drained_ >= kDrainLimit) return self->stream_.close();
                              self->drain();
                            });
  }

  void log(const http::request_header<>& header, unsigned status) const {
    // Method and path only: queries and headers may carry secrets.
    spdlog::debug("admin API: {} {} -> {}", std::string(header.method_string()), path_of(header.target()), status);
  }

  beast::tcp_stream stream_;
  std::shared_ptr<AdminServer::Impl> server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  AdminResponse response_;
  std::array<char, 8192> drain_buffer_{};
  std::size_t drained_ = 0;
  bool first_request_ = true;
};

}  // namespace

void AdminServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), beast::bind_front_handler(&Impl::on_accept, shared_from_this()));
}

void AdminServer::Impl::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
  if (ec) {
    // E.g. out of file descriptors: the listener must survive it, without spinning (the same error
    // comes back at once) or flooding the log; descriptors free up as connections end.
    if (auto count = accept_failures.count(std::chrono::steady_clock::now())) {
      spdlog::error("admin API: accepting connections failed {} time(s): {}; retrying every {} ms", *count,
                    ec.message(), net::kAcceptRetry.count());
    }
    retry_timer.expires_after(net::kAcceptRetry);
    retry_timer.async_wait([self = shared_from_this()](beast::error_code wec) {
      if (!wec && self->acceptor.is_open()) self->accept();
    });
    return;
  }
  if (open_connections.load() >= options.max_connections) {
    refuse(socket);
  } else {
    auto session = std::make_shared<Session>(std::move(socket), shared_from_this());
    track(session);
    session->start();
  }
  accept();
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

void AdminServer::Impl::track(const std::shared_ptr<Session>& session) {
  std::lock_guard lock(sessions_mutex);
  sessions.remove_if([](const std::weak_ptr<Session>& w) { return w.expired(); });
  sessions.push_back(session);
  if (stopped) session->close();
}

void AdminServer::Impl::close_all() {
  std::lock_guard lock(sessions_mutex);
  stopped = true;
  for (auto& weak : sessions) {
    if (auto s = weak.lock()) s->close();
  }
  sessions.clear();
}

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
  asio::dispatch(acceptor.get_executor(), [impl = impl_] { impl->accept(); });
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
