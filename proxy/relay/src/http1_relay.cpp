// The response relay of an HTTP/1.1 session: the response streamed piece by piece (watch events
// as they arrive), upgrades (101) as a raw byte tunnel.
#include "http1_relay.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include "connection.hpp"
#include "faultline/net/async.hpp"
#include "faultline/proxy/watch_stream.hpp"
#include "http1_session.hpp"

namespace faultline::proxy {

using net::use_tuple;

Http1ResponseRelay::Http1ResponseRelay(TlsConnection& conn, Http1Client& client, Http1Upstream& upstream)
    : conn_(conn), server_(conn.server()), options_(conn.options()), client_(client), upstream_(upstream) {}

asio::awaitable<bool> Http1ResponseRelay::stream_body(ResponseParser& parser, Exchange& ex, WatchFilter* filter) {
  const int status = parser.status();
  const bool upgrade = parser.upgrade();
  // The body is framed as the upstream's was: chunked stays chunked (re-chunked piece by piece),
  // a length stays that length; a 101, a HEAD answer, 204 and 304 have none.
  const bool has_body = !upgrade && !parser.is_done();
  const bool keep_alive = ex.client_keep_alive && !conn_.draining();
  Http1Framing framing(parser.finish_head(keep_alive), parser.chunked(), has_body);
  bool streaming = ex.request.info.is_watch();
  // When the first body bytes came in together with the header (a small GET, the start of a
  // LIST), header and body leave in one write: one TLS record and one send instead of two. A watch,
  // an upgrade, or a body that is not here yet gets its header at once.
  bool header_with_body = !streaming && !filter && has_body && upstream_.buffer().size() > 0;
  if (!header_with_body) co_await write_body_piece(framing, status, nullptr, 0, true, ex);
  if (upgrade) co_return false;

  if (streaming) {
    client_.phase = Http1Client::Phase::streaming;
    if (server_.observer) server_.observer->watch_opened();
  }
  struct WatchGuard {
    Http1ResponseRelay* s;
    bool on;
    ~WatchGuard() {
      if (on && s->server_.observer) s->server_.observer->watch_closed();
    }
  } guard{this, streaming};

  if (filter && ex.json_upstream && filter->holds_events()) {
    const bool keep_going = co_await relay_held_events(parser, ex, *filter, framing, status);
    co_return keep_going;
  }

  auto& up_tcp = upstream_.stream();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (filter && filter->deadline()) deadline = std::chrono::steady_clock::now() + *filter->deadline();
  JsonFrameSplitter splitter;
  WatchFilter::End end = WatchFilter::End::none;
  std::string out;
  auto apply = [&](WatchFilter::Step step) {
    for (auto& event : step.emit) out += event;
    end = step.end;
  };
  if (filter && ex.json_upstream) apply(filter->on_start());

  parser.eager(false);  // one piece per put: each is written before the buffer is read into again
  while (end == WatchFilter::End::none && !parser.is_done()) {
    if (deadline) up_tcp.expires_at(*deadline);
    else if (streaming) up_tcp.expires_never();
    else up_tcp.expires_after(options_.io_timeout);
    auto [ec, used] = co_await upstream_.parse_body_piece(parser);
    if (ec == beast::error::timeout && deadline) {
      filter->acted_by_deadline();
      end = filter->at_deadline();
      break;
    }
    if (ec) throw boost::system::system_error(ec, "reading the upstream body");
    // Without a filter the bytes go out from where they were read.
    std::string_view piece = parser.take_body();
    if (filter && ex.json_upstream) {
      for (auto& event : splitter.feed(piece)) {
        if (end == WatchFilter::End::none) apply(filter->on_event(event));
      }
      piece = out;
    }
    if (!piece.empty() || (parser.is_done() && end == WatchFilter::End::none)) {
      bool more = !parser.is_done() && end == WatchFilter::End::none;
      co_await write_body_piece(framing, status, piece.data(), piece.size(), more || end != WatchFilter::End::none, ex);
      out.clear();
    }
    upstream_.buffer().consume(used);
  }
  if (end == WatchFilter::End::reset) {
    if (!out.empty()) co_await write_body_piece(framing, status, out.data(), out.size(), true, ex);
    co_await wait_for_send_queue();  // a RST discards unsent data: let the last events leave first
    conn_.cut_now(Cut::reset);
    co_return false;
  }
  if (!framing.done()) co_await write_body_piece(framing, status, out.data(), out.size(), false, ex);
  if (!parser.is_done()) upstream_.close();  // the upstream response was abandoned mid-stream
  client_.phase = Http1Client::Phase::busy;
  co_return true;
}

// A watch whose filter holds events back (watch-delay, watch-coalesce): this coroutine reads the
// upstream and hands the events to the filter; emit_due() writes what the filter releases, when it is
// due, and is the only one that writes to the client until it ended. The upstream is read as fast
// as it sends: what the filter holds, and what it released that is not written yet, are bounded
// (past the bound the stream is cut).
struct Http1ResponseRelay::HeldRelay {
  explicit HeldRelay(const asio::any_io_executor& executor) : wake(executor), finished(executor) {
    finished.expires_at(std::chrono::steady_clock::time_point::max());
  }
  asio::steady_timer wake;      // emit_due sleeps on it until the next due time, or a poke
  asio::steady_timer finished;  // cancelled when emit_due ended
  std::string out;              // released by the filter, not written yet
  WatchFilter::End end = WatchFilter::End::none;
  bool stop = false;
  bool writer_done = false;
  std::exception_ptr write_error;
  void take(WatchFilter::Step step) {
    for (auto& event : step.emit) out += event;
    if (step.end != WatchFilter::End::none) end = step.end;
  }
};

asio::awaitable<bool> Http1ResponseRelay::relay_held_events(ResponseParser& parser, Exchange& ex, WatchFilter& filter,
                                                            Http1Framing& framing, int status) {
  auto held = std::make_shared<HeldRelay>(conn_.executor());
  asio::co_spawn(conn_.executor(), emit_due(conn_.shared_from_this(), this, held, ex, filter, framing, status),
                 asio::detached);
  JsonFrameSplitter splitter;
  std::exception_ptr failure;
  parser.eager(false);
  try {
    while (held->end == WatchFilter::End::none && !parser.is_done()) {
      upstream_.stream().expires_never();
      auto [ec, used] = co_await upstream_.parse_body_piece(parser);
      if (held->write_error) break;
      if (ec) throw boost::system::system_error(ec, "reading the upstream body");
      held->take(filter.advance(server_.clock.now()));
      for (auto& event : splitter.feed(parser.take_body())) {
        if (held->end == WatchFilter::End::none) held->take(filter.on_event(event));
      }
      upstream_.buffer().consume(used);
      if (held->end == WatchFilter::End::none && held->out.size() > WatchFilter::kMaxHeldBytes) {
        spdlog::error(
            "conn {}: {}: more than {} MiB of released events not yet taken by the client: the watch stream "
            "is cut (RST)",
            conn_.id(), ex.record.action.value_or(""), WatchFilter::kMaxHeldBytes >> 20);
        held->end = WatchFilter::End::reset;
      }
      held->wake.cancel();  // emit_due writes what is due now
    }
  } catch (...) {
    failure = std::current_exception();
  }
  held->stop = true;
  held->wake.cancel();
  if (!held->writer_done) co_await held->finished.async_wait(use_tuple);
  if (failure) std::rethrow_exception(failure);
  if (held->write_error) std::rethrow_exception(held->write_error);
  if (held->end == WatchFilter::End::reset) {
    // What the filter held, and what it released that is not out yet, is dropped with the stream.
    conn_.cut_now(Cut::reset);
    co_return false;
  }
  // A clean end: everything held goes out first.
  held->take(filter.flush());
  if (!framing.done()) co_await write_body_piece(framing, status, held->out.data(), held->out.size(), false, ex);
  if (!parser.is_done()) upstream_.close();
  client_.phase = Http1Client::Phase::busy;
  co_return true;
}

asio::awaitable<void> Http1ResponseRelay::emit_due(std::shared_ptr<TlsConnection>, Http1ResponseRelay* self,
                                                   std::shared_ptr<HeldRelay> held, Exchange& ex, WatchFilter& filter,
                                                   Http1Framing& framing, int status) {
  // `ex`, `filter` and `framing` live until relay_held_events returns, which it does only after
  // this coroutine ended: they are touched only while `stop` is not set.
  try {
    for (;;) {
      if (held->stop) break;
      if (held->out.empty()) {
        const auto due = filter.next_due();
        held->wake.expires_at(due ? *due : std::chrono::steady_clock::time_point::max());
        co_await held->wake.async_wait(use_tuple);
        if (held->stop) break;
        held->take(filter.advance(self->server_.clock.now()));
      }
      if (held->end != WatchFilter::End::none) break;
      if (held->out.empty()) continue;
      const std::string piece = std::move(held->out);
      held->out.clear();
      co_await self->write_body_piece(framing, status, piece.data(), piece.size(), true, ex);
    }
  } catch (...) {
    held->write_error = std::current_exception();
    self->upstream_.cut();  // wakes the reader
  }
  held->writer_done = true;
  held->finished.cancel();
}

asio::awaitable<void> Http1ResponseRelay::write_body_piece(Http1Framing& framing, int status, const char* data,
                                                           std::size_t size, bool more, Exchange& ex) {
  auto buffers = framing.next(data, size, more);
  if (buffers.empty()) co_return;
  if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
  client_.stream.expires_after(options_.io_timeout);
  auto [ec, n] = co_await net::write_all(client_.stream, buffers);
  if (ec) throw boost::system::system_error(ec, "writing the response");
  ex.record.status = status;  // the header went out (with the first piece, or before it)
  ex.record.bytes_out += size;
}

asio::awaitable<void> Http1ResponseRelay::wait_for_send_queue() {
  int fd = conn_.socket().native_handle();
  for (int i = 0; i < 100; ++i) {
    int unsent = 0;
    if (::ioctl(fd, SIOCOUTQ, &unsent) != 0 || unsent == 0) break;
    co_await conn_.sleep(std::chrono::milliseconds(5));
  }
}

// After a 101: bytes flow both ways untouched until either side closes; then both are closed.
asio::awaitable<void> Http1ResponseRelay::tunnel() {
  client_.phase = Http1Client::Phase::streaming;
  client_.stream.expires_never();
  upstream_.stream().expires_never();
  asio::co_spawn(conn_.executor(), pump(conn_.shared_from_this(), this, true), asio::detached);
  co_await pump(conn_.shared_from_this(), this, false);
}

asio::awaitable<void> Http1ResponseRelay::pump(std::shared_ptr<TlsConnection>, Http1ResponseRelay* self,
                                               bool client_to_upstream) {
  // Bytes already read past the HTTP header belong to the tunnel.
  beast::flat_buffer& leftover = client_to_upstream ? self->client_.buffer : self->upstream_.buffer();
  RelayBuffer& chunk = client_to_upstream ? self->client_.up_chunk() : self->client_.down_chunk();
  auto write_to = [&](auto buffers) -> asio::awaitable<boost::system::error_code> {
    if (self->conn_.blackholed()) co_await self->conn_.hold_while_blackholed();
    if (self->conn_.is_cut() || !self->upstream_.open()) co_return asio::error::operation_aborted;
    auto& to = client_to_upstream ? self->upstream_.stream() : self->client_.stream;
    auto [ec, n] = co_await net::write_all(to, buffers);
    co_return ec;
  };
  if (leftover.size() > 0) {
    auto ec = co_await write_to(leftover.data());
    leftover.consume(leftover.size());
    if (ec) {
      self->conn_.cut_now(Cut::close);
      co_return;
    }
  }
  for (;;) {
    if (self->conn_.is_cut() || !self->upstream_.open()) break;
    auto [ec, n] = client_to_upstream
                       ? co_await self->client_.stream.async_read_some(asio::buffer(chunk), use_tuple)
                       : co_await self->upstream_.stream().async_read_some(asio::buffer(chunk), use_tuple);
    if (ec) break;
    if (co_await write_to(asio::buffer(chunk.data(), n))) break;
  }
  self->conn_.cut_now(Cut::close);
}

}  // namespace faultline::proxy
