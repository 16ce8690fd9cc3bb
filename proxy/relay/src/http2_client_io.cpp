// The read and write loops of an HTTP/2 client connection (see http2_client_io.hpp).
#include "http2_client_io.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "connection.hpp"
#include "faultline/net/async.hpp"

namespace faultline::proxy {

using net::use_tuple;
using namespace asio::experimental::awaitable_operators;

Http2ClientIo::Http2ClientIo(TlsConnection& conn, std::function<bool()> idle)
    : conn_(conn),
      idle_(std::move(idle)),
      wake_(conn.executor()),
      closed_(conn.executor(), asio::steady_timer::time_point::max()),
      last_activity_(std::chrono::steady_clock::now()),
      header_clock_(last_activity_) {}

nghttp2_session* Http2ClientIo::open(nghttp2_session_callbacks* callbacks, void* user) {
  const auto& options = conn_.options();
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);
  // Rapid reset (CVE-2023-44487: HEADERS then RST_STREAM in a loop, each stream started and
  // opened upstream, never more than one open): RST_STREAM frames from a client are bounded by a
  // token bucket, a burst of 1000 and 33 a second; past it nghttp2 ends the connection with GOAWAY
  // (INTERNAL_ERROR). Debian's nghttp2 1.52.0-1+deb12u1 and later carry this (upstream 1.57) with
  // these defaults; set here so the bound is the proxy's, stated and tested.
  nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33);
  // CONTINUATION flood (CVE-2024-28182: a header block that never ends, each frame decoded):
  // at most 8 CONTINUATION frames per header block (nghttp2's default since the fix, which
  // Debian's 1.52.0-1+deb12u2 and later carry), set here so the bound is the proxy's.
  nghttp2_option_set_max_continuations(option, 8);
  // Streams whose request the proxy refused still count; the default (100) is far above the
  // few a client can have closing at once.
  nghttp2_option_set_max_send_header_block_length(option, kResponseHeaderLimit * 4);
  int rv = nghttp2_session_server_new2(&session_, callbacks, user, option);
  nghttp2_option_del(option);
  if (rv != 0) throw std::runtime_error(std::string("nghttp2 server session: ") + nghttp2_strerror(rv));
  // nghttp2 ends the connection (GOAWAY PROTOCOL_ERROR) when a client opens more streams than
  // the SETTINGS it acknowledged allow; RFC 9113 5.1.2 makes that a stream error, and clients
  // that overshoot (a race with stream closes) lose every stream of the connection. So nghttp2 is
  // given twice the limit, the client is told the limit itself (the writer rewrites the value
  // in this first SETTINGS frame on its way out), and the session's on_begin_headers refuses a stream past it
  // with RST_STREAM REFUSED_STREAM. (It must come first in the frame: see patch_max_streams.)
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams_with_slack(options.h2_max_streams)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options.h2_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(options.header_limit)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  auto window = static_cast<int32_t>(
      std::min<std::uint64_t>(std::uint64_t{options.h2_max_streams} * options.h2_stream_window, 0x7fffffff));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, window);
  return session_;
}

Http2ClientIo::~Http2ClientIo() {
  if (session_) nghttp2_session_del(session_);
}

void Http2ClientIo::close() {
  closing_ = true;
  closed_.cancel();
  wake_.cancel();
}

asio::awaitable<void> Http2ClientIo::reader() {
  auto& buf = in_;
  auto& client = conn_.stream();
  while (!closing_ && nghttp2_session_want_read(session_)) {
    co_await hold_while_stalled();
    auto [ec, n] = co_await client.async_read_some(asio::buffer(buf), use_tuple);
    if (ec || closing_) break;
    // Not the idle timer's business: only streams are activity (a PING every minute does not
    // keep an idle connection); the header timeout's.
    header_clock_.scan(buf.data(), n);
    if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
    co_await hold_while_stalled();
    if (closing_) break;
    auto rv = nghttp2_session_mem_recv(session_, buf.data(), n);
    if (rv < 0) {
      // nghttp2 gives up on the input without a word to the client (a header list past four
      // times the limit, more CONTINUATION frames than it takes, a failed callback): the
      // connection ends with a GOAWAY that says why, not with a bare close.
      const bool flood = header_flood_ || rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
      spdlog::debug("conn {}: h2: {}", conn_.id(), nghttp2_strerror(static_cast<int>(rv)));
      nghttp2_session_terminate_session(session_, flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_INTERNAL_ERROR);
      break;
    }
    // The callbacks woke the writers for what they submitted; this is for nghttp2's own frames
    // (SETTINGS and PING acknowledgements, GOAWAY) and the end of the connection.
    if (writer_has_work(session_)) kick();
  }
  reading_done_ = true;
  kick();
}

asio::awaitable<void> Http2ClientIo::writer() {
  auto& out = out_;  // send_response_body appends DATA frames here too
  const auto max_streams = conn_.options().h2_max_streams;
  out.reserve(kWriteBatch);
  auto& client = conn_.stream();
  for (;;) {
    write_pending_ = false;
    out.clear();
    if (closing_) break;
    if (!collect_output(session_, out, conn_.id())) break;
    if (!settings_patched_ && !out.empty()) {
      settings_patched_ = true;
      if (!patch_max_streams(out, max_streams))
        spdlog::error("conn {}: h2: the first frame is not the SETTINGS expected; the client is told {} streams",
                      conn_.id(), max_streams_with_slack(max_streams));
    }
    if (!out.empty()) {
      if (conn_.blackholed()) co_await conn_.hold_while_blackholed();
      co_await hold_while_stalled();
      if (closing_) break;
      writing_ = true;
      write_started_ = std::chrono::steady_clock::now();
      auto [ec, n] = co_await net::write_all(client, asio::buffer(out));
      writing_ = false;
      if (ec) break;
      continue;
    }
    bool wants = nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_);
    if (!wants || (reading_done_ && !nghttp2_session_want_write(session_))) break;
    if (write_pending_) continue;
    wake_.expires_at(asio::steady_timer::time_point::max());
    waiting_ = true;
    co_await wake_.async_wait(use_tuple);
    waiting_ = false;
  }
  // The reader may still be waiting for bytes: end it.
  if (!reading_done_) {
    boost::system::error_code ec;
    conn_.socket().shutdown(tcp::socket::shutdown_receive, ec);
    conn_.socket().cancel(ec);
  }
}

// Bounds what a peer controls over time: a connection without streams closes (GOAWAY) after the
// idle timeout; a write the client does not take within the I/O timeout cuts the connection.
asio::awaitable<void> Http2ClientIo::watchdog([[maybe_unused]] std::shared_ptr<void> owner) {
  const auto& options = conn_.options();
  // A quarter of the shortest timeout, between 50 ms and a second.
  const auto tick = std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::min(options.header_timeout, options.idle_timeout) / 4),
      std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  while (!closing_) {
    co_await nap(tick);
    if (closing_) break;
    auto now = std::chrono::steady_clock::now();
    if (header_timed_out_) {
      conn_.cut_now(Cut::close);  // the GOAWAY had its tick to leave
      break;
    }
    if (auto since = header_clock_.since(); since && now - *since > options.header_timeout) {
      // As --header-timeout cuts an HTTP/1.1 request header that does not end: a header block
      // (or the connection's preface) that is not complete in time ends the connection.
      spdlog::debug("conn {}: h2: no complete request header within {} ms (--header-timeout); closing", conn_.id(),
                    options.header_timeout.count());
      static constexpr std::string_view why = "request header timeout";
      nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                            NGHTTP2_NO_ERROR, reinterpret_cast<const uint8_t*>(why.data()), why.size());
      header_timed_out_ = true;
      kick();
      continue;
    }
    if (writing_ && now - write_started_ > options.io_timeout) {
      spdlog::debug("conn {}: h2: the client took no bytes for {} ms; cutting", conn_.id(), options.io_timeout.count());
      conn_.cut_now(Cut::close);
      break;
    }
    if (idle_() && now - last_activity_ > options.idle_timeout) {
      nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
      kick();
    }
  }
}

asio::awaitable<void> Http2ClientIo::nap(std::chrono::milliseconds d) {
  asio::steady_timer timer(conn_.executor(), d);
  co_await (timer.async_wait(use_tuple) || closed_.async_wait(use_tuple));
}

// A `stall`: the connection sends nothing and reads nothing (so PINGs go unanswered) until it is
// over.
asio::awaitable<void> Http2ClientIo::hold_while_stalled() {
  while (!closing_ && std::chrono::steady_clock::now() < stalled_until_) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(stalled_until_ - std::chrono::steady_clock::now());
    co_await nap(std::max(left, std::chrono::milliseconds(1)));
  }
}

}  // namespace faultline::proxy
