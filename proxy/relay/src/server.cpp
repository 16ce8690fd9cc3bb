// Accepting connections, the registry of live sessions, outage enforcement and shutdown.
#include "faultline/proxy/server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "connection.hpp"
#include "faultline/net/accept_failures.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/error_text.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {
namespace {

using net::use_tuple;

void reset_socket(tcp::socket& socket) {
  boost::system::error_code ec;
  socket.set_option(asio::socket_base::linger(true, 0), ec);
  socket.close(ec);
}

// Pauses after a failed accept (see faultline/net/accept_failures.hpp), logging when a report is due.
asio::awaitable<void> back_off_after_accept_error(Server::Impl& impl, net::AcceptFailures& failures,
                                                  const boost::system::error_code& ec) {
  if (auto count = failures.count(std::chrono::steady_clock::now())) {
    spdlog::error("accepting connections failed {} time(s): {}; retrying every {} ms", *count, ec.message(),
                  net::kAcceptRetry.count());
  }
  asio::steady_timer pause(impl.listener_strand, net::kAcceptRetry);
  co_await pause.async_wait(use_tuple);
}

// Connections refused at the limit, reported at most once every 10 s.
class RejectionReport {
 public:
  void count(std::size_t limit) {
    ++unreported_;
    auto now = std::chrono::steady_clock::now();
    if (last_ && now - *last_ < std::chrono::seconds(10)) return;
    spdlog::warn("{} connection(s) refused: {} client connections are open (--max-connections)", unreported_, limit);
    unreported_ = 0;
    last_ = now;
  }

 private:
  std::uint64_t unreported_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_;
};

asio::awaitable<void> accept_loop(std::shared_ptr<Server::Impl> impl) {
  net::AcceptFailures failures;
  RejectionReport rejections;
  for (;;) {
    if (!impl->acceptor || !impl->acceptor->is_open()) co_return;
    // The connection's executor: its own strand, or the io_context's when one thread runs it.
    boost::system::error_code ec;
    tcp::socket socket(impl->ioc);
    if (impl->options.relay_threads == 1) {
      auto [aec, accepted] = co_await impl->acceptor->async_accept(impl->ioc.get_executor(), use_tuple);
      ec = aec;
      socket = tcp::socket(std::move(accepted));
    } else {
      auto [aec, accepted] = co_await impl->acceptor->async_accept(asio::make_strand(impl->ioc), use_tuple);
      ec = aec;
      socket = tcp::socket(std::move(accepted));  // keeps the strand as its executor
    }
    if (ec == asio::error::operation_aborted || !impl->acceptor || !impl->acceptor->is_open()) co_return;
    if (ec) {
      co_await back_off_after_accept_error(*impl, failures, ec);
      continue;
    }
    if (impl->stopping) {
      reset_socket(socket);
      continue;
    }
    auto outage = impl->engine.outage(impl->clock.now());
    if (outage && outage->mode != faults::actions::Outage::Mode::blackhole) {
      reset_socket(socket);  // the "apiserver" is down: connections die at once
      continue;
    }
    if (impl->at_connection_limit()) {
      // Closed before any TLS work: a refused connection costs a descriptor for a moment, no memory.
      boost::system::error_code cec;
      socket.close(cec);
      rejections.count(impl->options.max_connections);
      if (impl->observer) impl->observer->connection_rejected();
      continue;
    }
    impl->probe_upstream_if_due();
    boost::system::error_code nec;
    socket.set_option(tcp::no_delay(true), nec);
    auto session = std::make_shared<TlsConnection>(impl, std::move(socket), impl->next_conn++);
    {
      std::lock_guard lock(impl->mutex);
      impl->sessions.emplace(session.get(), session);
    }
    session->start();
  }
}

}  // namespace

Server::Impl::Impl(asio::io_context& io, ServerOptions opts, faults::Engine& eng, const faults::Clock& clk,
                   Observer* obs)
    : ioc(io),
      options(std::move(opts)),
      engine(eng),
      clock(clk),
      observer(obs),
      offer_h2(options.http2),
      server_tls(net::make_server_context(options.serving, offer_h2)),
      upstream_tls(net::make_client_context(options.upstream.tls)),
      upstream_tls_h2(net::make_client_context(options.upstream.tls, net::Alpn::h2)),
      listener_strand(asio::make_strand(io)),
      reopen_timer(listener_strand),
      drain_timer(listener_strand),
      trim_timer(listener_strand),
      memory_timer(listener_strand) {}

void Server::Impl::open_listener() {
  tcp::acceptor a(listener_strand);
  auto endpoint =
      bound.port() != 0 ? bound : tcp::endpoint(asio::ip::make_address(options.listen.host), options.listen.port);
  a.open(endpoint.protocol());
  a.set_option(asio::socket_base::reuse_address(true));
  a.bind(endpoint);
  a.listen(asio::socket_base::max_listen_connections);
  bound = a.local_endpoint();
  acceptor.emplace(std::move(a));
}

void Server::Impl::start_accepting() {
  asio::co_spawn(listener_strand, accept_loop(shared_from_this()), [](std::exception_ptr error) {
    // Never silently: a proxy that stopped accepting looks like an apiserver outage to clients.
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::critical("the proxy stopped accepting connections: {}", net::error_text(e));
    }
  });
}

void Server::Impl::close_listener() {
  boost::system::error_code ec;
  if (acceptor) acceptor->close(ec);
}

void Server::Impl::schedule_reopen(faults::Clock::duration after) {
  reopen_timer.expires_after(after);
  reopen_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec) return;
    self->enforce_outage();  // reopens when the outage is over, re-arms the timer otherwise
  });
}

std::list<std::shared_ptr<TlsConnection>> Server::Impl::live_sessions() {
  std::list<std::shared_ptr<TlsConnection>> out;
  std::lock_guard lock(mutex);
  for (auto& [raw, weak] : sessions) {
    if (auto s = weak.lock()) out.push_back(std::move(s));
  }
  return out;  // released by the caller, outside the mutex (a release may run ~TlsConnection -> forget)
}

void Server::Impl::forget(const TlsConnection* session) {
  std::lock_guard lock(mutex);
  // By address, never by locking the weak pointers: a shared_ptr made here could become a
  // session's last owner and run its destructor, which calls forget() again, under this mutex.
  sessions.erase(session);
  if (stopping && sessions.empty()) {
    asio::post(listener_strand, [self = shared_from_this()] { self->drain_timer.cancel(); });
  }
  if (!trim_scheduled && !stopping) {
    trim_scheduled = true;
    asio::post(listener_strand, [self = shared_from_this()] { self->schedule_trim(); });
  }
}

bool Server::Impl::at_connection_limit() const {
  if (options.max_connections == 0) return false;
  std::lock_guard lock(mutex);
  return sessions.size() >= options.max_connections;
}

namespace {

// The allocator actually serving malloc, found at run time: jemalloc's control interface where the
// binary links jemalloc (faultline-proxy of the release tree), the sanitizer runtime's where one
// replaces malloc (the ASan/UBSan and TSan trees); otherwise both are null and glibc's is in use.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp, std::size_t newlen)
    __attribute__((weak));
extern "C" void __sanitizer_purge_allocator() __attribute__((weak));

// Gives what the allocator holds free back to the system. jemalloc returns free pages by itself
// only as it allocates and frees (its decay runs on those events), so an idle proxy kept its peak,
// and glibc's malloc_trim does nothing for it: "arena.4096.purge" (4096: MALLCTL_ARENAS_ALL)
// returns them from every arena now. Freed blocks in the relay threads' caches stay (jemalloc's
// tcache: a few MiB per thread at most).
void release_free_memory() {
  if (mallctl != nullptr) {
    if (int rv = mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0); rv != 0)
      spdlog::warn("returning free memory to the system: jemalloc's arena.4096.purge failed ({})", rv);
    return;
  }
  if (__sanitizer_purge_allocator != nullptr) {
    __sanitizer_purge_allocator();
    return;
  }
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

}  // namespace

// The allocator keeps freed memory for reuse: after a burst of connections the process held
// hundreds of MB it no longer used. A second after connections end (once per second at most, as
// long as they keep ending), what is free goes back to the system.
void Server::Impl::schedule_trim() {
  if (stopping) {
    std::lock_guard lock(mutex);
    trim_scheduled = false;
    return;
  }
  trim_timer.expires_after(std::chrono::seconds(1));
  trim_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    {
      std::lock_guard lock(self->mutex);
      self->trim_scheduled = false;
    }
    if (ec) return;
    release_free_memory();
  });
}

namespace {

// The process's resident memory: jemalloc's stats.resident (refreshed by "epoch"; pages it maps
// for the heap and its metadata) where it serves malloc, else VmRSS from /proc/self/statm.
std::uint64_t resident_bytes() {
  if (mallctl != nullptr) {
    std::uint64_t epoch = 1;
    std::size_t size = sizeof epoch;
    std::size_t resident = 0;
    std::size_t resident_size = sizeof resident;
    if (mallctl("epoch", &epoch, &size, &epoch, size) == 0 &&
        mallctl("stats.resident", &resident, &resident_size, nullptr, 0) == 0)
      return resident;
  }
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  int fields = std::fscanf(statm, "%llu %llu", &size, &resident);
  std::fclose(statm);
  return fields == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

constexpr std::uint64_t kMiB = 1024 * 1024;

}  // namespace

// Every memory_sample_interval: the gauge, and --max-memory's verdict that the relay reads
// (an atomic) before it takes new work. Crossings are logged, at most one every 10 s.
void Server::Impl::sample_memory() {
  if (stopping) return;
  const std::uint64_t bytes = resident_bytes();
  memory_bytes.store(bytes, std::memory_order_relaxed);
  if (observer) observer->memory_sampled(bytes);
  if (options.max_memory > 0) {
    const bool over = bytes > options.max_memory;
    if (over != memory_over.exchange(over, std::memory_order_relaxed)) {
      auto now = std::chrono::steady_clock::now();
      auto& last = memory_crossing_logged;
      if (!last || now - *last >= std::chrono::seconds(10)) {
        if (over) {
          spdlog::warn(
              "memory {} MiB is past --max-memory {} MiB: refusing new HTTP/2 streams (REFUSED_STREAM) "
              "and HTTP/1.1 requests (503) until it is back under",
              bytes / kMiB, options.max_memory / kMiB);
        } else {
          spdlog::info("memory {} MiB is back under --max-memory {} MiB", bytes / kMiB, options.max_memory / kMiB);
        }
        last = now;
      }
    }
  }
  memory_timer.expires_after(options.memory_sample_interval);
  memory_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->sample_memory();
  });
}

void Server::Impl::refused(Refusal why) {
  const bool header_memory = why == Refusal::h2_header_memory;
  if (observer) observer->memory_refused(header_memory ? "h2-header-memory" : "max-memory");
  std::lock_guard lock(refusals_mutex);
  auto& unreported = refusals_unreported;
  auto& last = refusals_logged;
  ++unreported[header_memory ? 0 : 1];
  auto now = std::chrono::steady_clock::now();
  if (last && now - *last < std::chrono::seconds(10)) return;
  if (unreported[0] > 0) {
    spdlog::warn(
        "{} HTTP/2 stream(s) refused (REFUSED_STREAM): decoded request headers waiting to go upstream reached "
        "{} KiB on a connection or {} KiB in the proxy (now {} KiB)",
        unreported[0], options.h2_header_memory_per_connection / 1024, options.h2_header_memory_total / 1024,
        h2_header_bytes.load(std::memory_order_relaxed) / 1024);
  }
  if (unreported[1] > 0) {
    spdlog::warn("{} HTTP/2 stream(s) and HTTP/1.1 request(s) refused: memory {} MiB past --max-memory {} MiB",
                 unreported[1], memory_bytes.load(std::memory_order_relaxed) / kMiB, options.max_memory / kMiB);
  }
  unreported[0] = unreported[1] = 0;
  last = now;
}

// Runs on any thread; listener changes are posted to the listener strand.
void Server::Impl::enforce_outage() {
  auto now = clock.now();
  auto outage = engine.outage(now);
  bool cut_live = false;
  {
    std::lock_guard lock(mutex);
    if (outage && enforced_until == outage->until) return;
    enforced_until = outage ? std::optional(outage->until) : std::nullopt;
    cut_live = outage && outage->mode != faults::actions::Outage::Mode::blackhole;
  }
  if (cut_live) {
    spdlog::warn("outage ({}, rule '{}'): resetting live connections for {} ms",
                 faults::actions::to_string(outage->mode), outage->rule,
                 std::chrono::duration_cast<std::chrono::milliseconds>(outage->until - now).count());
    for (auto& session : live_sessions()) session->abort(Cut::reset);
  }
  bool refuse = outage && outage->mode == faults::actions::Outage::Mode::refuse;
  auto remaining = outage ? outage->until - now : faults::Clock::duration{};
  asio::post(listener_strand, [self = shared_from_this(), refuse, remaining] {
    if (self->stopping) return;
    if (refuse && !self->listener_refused) {
      self->listener_refused = true;
      self->close_listener();
      spdlog::warn("outage (refuse): listener closed");
    } else if (!refuse && self->listener_refused) {
      self->listener_refused = false;
      try {
        self->open_listener();
        self->start_accepting();
        spdlog::info("outage over: listening again on {}", self->bound.port());
      } catch (const std::exception& e) {
        spdlog::error("outage over but the listener could not be reopened on port {}: {}", self->bound.port(),
                      net::error_text(e));
      }
    }
    if (refuse) self->schedule_reopen(remaining);
  });
}

void Server::Impl::stop(std::chrono::milliseconds drain) {
  if (stopping.exchange(true)) return;
  asio::post(listener_strand, [self = shared_from_this(), drain] {
    self->close_listener();
    self->reopen_timer.cancel();
    self->trim_timer.cancel();
    if (self->cancel_probe) self->cancel_probe();
    self->memory_timer.cancel();
    auto live = self->live_sessions();
    spdlog::info("stopping: {} open connections, draining up to {} ms", live.size(), drain.count());
    for (auto& session : live) session->drain();
    if (live.empty()) return;
    self->drain_timer.expires_after(drain);
    self->drain_timer.async_wait([self](boost::system::error_code ec) {
      if (ec) return;
      auto left = self->live_sessions();
      if (!left.empty()) spdlog::warn("drain bound reached: resetting {} connections", left.size());
      for (auto& session : left) session->abort(Cut::reset);
    });
  });
}

Server::Server(asio::io_context& ioc, ServerOptions options, faults::Engine& engine, const faults::Clock& clock,
               Observer* observer)
    : impl_(std::make_shared<Impl>(ioc, std::move(options), engine, clock, observer)) {}

Server::~Server() = default;

void Server::start() {
  try {
    impl_->open_listener();
  } catch (const boost::system::system_error& e) {
    throw std::system_error(e.code(), "listening on " + impl_->options.listen.to_string());
  }
  impl_->start_accepting();
  asio::post(impl_->listener_strand, [impl = impl_] { impl->probe_upstream_if_due(); });
  asio::post(impl_->listener_strand, [impl = impl_] { impl->sample_memory(); });
}

tcp::endpoint Server::local_endpoint() const { return impl_->bound; }

void Server::enforce_outage() { impl_->enforce_outage(); }

void Server::stop(std::chrono::milliseconds drain) { impl_->stop(drain); }

namespace {
std::atomic<std::uint64_t> escaped_exceptions{0};
std::mutex escaped_report_mutex;
std::optional<std::chrono::steady_clock::time_point> escaped_last_report;
std::uint64_t escaped_reported = 0;

void report_escaped(const char* what) {
  auto total = ++escaped_exceptions;
  std::lock_guard lock(escaped_report_mutex);
  auto now = std::chrono::steady_clock::now();
  if (escaped_last_report && now - *escaped_last_report < std::chrono::seconds(10)) return;
  spdlog::error(
      "internal error in the relay: {} ({} such error(s) so far, {} since the last report; the affected "
      "connection was dropped, the proxy carries on)",
      what, total, total - escaped_reported);
  escaped_reported = total;
  escaped_last_report = now;
}

// io_context::run, except that a thread that has run out of ready handlers keeps polling the
// reactor (epoll_wait with a zero timeout) for up to `spin` before it sleeps in it.
void run_polling(asio::io_context& ioc, std::chrono::microseconds spin) {
  if (spin <= std::chrono::microseconds::zero()) return static_cast<void>(ioc.run());
  using clock = std::chrono::steady_clock;
  auto busy = clock::now();  // when the thread last ran a handler
  while (!ioc.stopped()) {
    if (ioc.poll() > 0) {
      busy = clock::now();
    } else if (clock::now() - busy >= spin) {
      ioc.run_one();  // sleeps until a handler is ready (or the context runs out of work)
      busy = clock::now();
    }
  }
}
}  // namespace

void run_relay_thread(asio::io_context& ioc, std::chrono::microseconds spin) {
  for (;;) {
    try {
      run_polling(ioc, spin);
      return;
    } catch (const std::exception& e) {
      report_escaped(e.what());
    } catch (...) {
      report_escaped("unknown exception");
    }
  }
}

std::uint64_t escaped_handler_exceptions() { return escaped_exceptions.load(); }

}  // namespace faultline::proxy
