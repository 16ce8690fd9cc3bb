#pragma once
// Server internals shared by the accept loop (server.cpp) and the sessions (session.cpp).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "faultline/proxy/disposition.hpp"
#include "faultline/proxy/server.hpp"

namespace faultline::proxy {

class Session;

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  Impl(boost::asio::io_context& ioc, ServerOptions options, faults::Engine& engine, const faults::Clock& clock,
       Observer* observer);

  boost::asio::io_context& ioc;
  const ServerOptions options;
  faults::Engine& engine;
  const faults::Clock& clock;
  Observer* const observer;
  boost::asio::ssl::context server_tls;
  boost::asio::ssl::context upstream_tls;     // ALPN http/1.1
  boost::asio::ssl::context upstream_tls_h2;  // ALPN h2 (for HTTP/2 clients)

  // Listener (touched only on `listener_strand`).
  boost::asio::strand<boost::asio::io_context::executor_type> listener_strand;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  boost::asio::ip::tcp::endpoint bound;
  boost::asio::steady_timer reopen_timer;
  boost::asio::steady_timer drain_timer;
  boost::asio::steady_timer trim_timer;  // returns freed memory to the system after connections end

  // Live sessions and outage bookkeeping.
  mutable std::mutex mutex;
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions;  // removed by ~Session
  std::optional<faults::Clock::time_point> enforced_until;
  bool listener_refused = false;
  bool trim_scheduled = false;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> next_conn{1};

  void open_listener();
  void start_accepting();
  void close_listener();
  void schedule_reopen(faults::Clock::duration after);
  void enforce_outage();
  void forget(const Session* session);
  bool at_connection_limit() const;
  void schedule_trim();
  std::list<std::shared_ptr<Session>> live_sessions();
  void stop(std::chrono::milliseconds drain);
};

}  // namespace faultline::proxy
