#pragma once
// Server internals shared by the accept loop (server.cpp) and the sessions (http1_session.cpp, http2_session.cpp).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "faultline/proxy/effects.hpp"
#include "faultline/proxy/server.hpp"
#include "gate.hpp"

namespace faultline::proxy {

class TlsConnection;

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  Impl(boost::asio::io_context& ioc, ServerOptions options, faults::Engine& engine, const faults::Clock& clock,
       Observer* observer);

  boost::asio::io_context& ioc;
  const ServerOptions options;
  faults::Engine& engine;
  const faults::Clock& clock;
  Observer* const observer;
  // The upstream's protocol, as its ALPN said last: clients are offered h2 (`offer_h2`, read by
  // server_tls at each handshake) only while options.http2 and the upstream does not negotiate
  // http/1.1 only. Learned by a probe (probe_upstream_if_due) and from every upstream connection
  // of an HTTP/2 client (upstream_negotiated); upstream_alpn.cpp.
  enum class UpstreamProtocol { unknown, h2, http11 };
  std::atomic<bool> offer_h2;
  std::atomic<UpstreamProtocol> upstream_protocol{UpstreamProtocol::unknown};
  boost::asio::ssl::context server_tls;
  boost::asio::ssl::context upstream_tls;     // ALPN http/1.1
  boost::asio::ssl::context upstream_tls_h2;  // ALPN h2, http/1.1 (for HTTP/2 clients)

  // Listener (touched only on `listener_strand`).
  boost::asio::strand<boost::asio::io_context::executor_type> listener_strand;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  boost::asio::ip::tcp::endpoint bound;
  boost::asio::steady_timer reopen_timer;
  boost::asio::steady_timer drain_timer;
  boost::asio::steady_timer trim_timer;    // returns freed memory to the system after connections end
  boost::asio::steady_timer memory_timer;  // samples the process's memory (ServerOptions::max_memory)

  // Live sessions and outage bookkeeping.
  mutable std::mutex mutex;
  std::unordered_map<const TlsConnection*, std::weak_ptr<TlsConnection>> sessions;  // removed by ~TlsConnection
  std::optional<faults::Clock::time_point> enforced_until;
  bool listener_refused = false;
  bool trim_scheduled = false;
  std::mutex protocol_mutex;  // upstream_negotiated: offer_h2 and upstream_protocol change together
  // Probes of the upstream's ALPN (touched only on `listener_strand`).
  bool probing = false;
  std::optional<std::chrono::steady_clock::time_point> last_probe;
  std::function<void()> cancel_probe;  // set while a probe waits for the upstream
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> next_conn{1};
  // The batches of hold rules, shared by every connection (gate.hpp).
  Gates gates;

  // Decoded HTTP/2 request header bytes not yet sent upstream, over all connections
  // (ServerOptions::h2_header_memory_total).
  std::atomic<std::size_t> h2_header_bytes{0};
  // The process's resident memory as last sampled, and whether it is past max_memory.
  std::atomic<std::uint64_t> memory_bytes{0};
  std::atomic<bool> memory_over{false};
  // Why new work was refused to keep memory bounded.
  enum class Refusal { h2_header_memory, max_memory };
  // Counts a refusal (metric) and logs a summary at most once every 10 s. Any thread.
  void refused(Refusal why);
  std::optional<std::chrono::steady_clock::time_point> memory_crossing_logged;  // listener_strand
  std::mutex refusals_mutex;
  std::uint64_t refusals_unreported[2] = {0, 0};
  std::optional<std::chrono::steady_clock::time_point> refusals_logged;

  void open_listener();
  void start_accepting();
  void close_listener();
  void schedule_reopen(faults::Clock::duration after);
  void enforce_outage();
  void forget(const TlsConnection* session);
  bool at_connection_limit() const;
  void schedule_trim();
  // What the upstream's ALPN selected on a connection offering h2 and http/1.1 ("" for none):
  // any thread; logs a change.
  void upstream_negotiated(const std::string& alpn);
  bool upstream_speaks_http11_only() const { return upstream_protocol.load() == UpstreamProtocol::http11; }
  // On the listener strand, as connections are accepted: asks the upstream which protocol it
  // negotiates unless that is known to be h2, at most every second while it is not known (the
  // upstream did not answer yet) and every 10 s while it is http/1.1 only (it may gain h2).
  void probe_upstream_if_due();
  void sample_memory();  // on listener_strand, every options.memory_sample_interval until stop
  std::list<std::shared_ptr<TlsConnection>> live_sessions();
  void stop(std::chrono::milliseconds drain);
};

}  // namespace faultline::proxy
