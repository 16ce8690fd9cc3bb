// The response relay of an HTTP/1.1 session: the response streamed piece by piece (watch events
// as they arrive), upgrades (101) as a raw byte tunnel.
#include "http1_relay.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <chrono>
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
