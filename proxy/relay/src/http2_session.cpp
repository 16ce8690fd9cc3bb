// HTTP/2 relay of one client connection, towards the client (see http2_session.hpp).
#include "http2_session.hpp"

#include <boost/algorithm/string/case_conv.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "connection.hpp"
#include "faultline/faults/actions/goaway.hpp"
#include "faultline/net/async.hpp"
#include "faultline/proxy/headers.hpp"

namespace faultline::proxy {

using net::use_tuple;
using namespace asio::experimental::awaitable_operators;

Http2Session::Http2Session(std::shared_ptr<TlsConnection> conn)
    : conn_(std::move(conn)),
      server_(conn_->server()),
      options_(conn_->options()),
      budget_(options_, server_.h2_header_bytes),
      client_wake_(conn_->executor()),
      closed_(conn_->executor(), asio::steady_timer::time_point::max()),
      header_clock_(std::chrono::steady_clock::now()) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(callbacks, send_response_body);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
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
  int rv = nghttp2_session_server_new2(&client_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) throw std::runtime_error(std::string("nghttp2 server session: ") + nghttp2_strerror(rv));
  // nghttp2 ends the connection (GOAWAY PROTOCOL_ERROR) when a client opens more streams than
  // the SETTINGS it acknowledged allow; RFC 9113 5.1.2 makes that a stream error, and clients
  // that overshoot (a race with stream closes) lose every stream of the connection. So nghttp2 is
  // given twice the limit, the client is told the limit itself (client_writer rewrites the value
  // in this first SETTINGS frame on its way out), and on_begin_headers refuses a stream past it
  // with RST_STREAM REFUSED_STREAM. (It must come first in the frame: see patch_max_streams.)
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams_with_slack(options_.h2_max_streams)},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.h2_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(options_.header_limit)},
  };
  nghttp2_submit_settings(client_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  auto window = static_cast<int32_t>(
      std::min<std::uint64_t>(std::uint64_t{options_.h2_max_streams} * options_.h2_stream_window, 0x7fffffff));
  nghttp2_session_set_local_window_size(client_, NGHTTP2_FLAG_NONE, 0, window);
  last_activity_ = std::chrono::steady_clock::now();
}

Http2Session::~Http2Session() {
  if (client_) nghttp2_session_del(client_);
}

asio::awaitable<void> Http2Session::run(std::shared_ptr<Http2Session> self) {
  self->conn_->stream().expires_never();  // the watchdog bounds idle connections and stuck writes
  asio::co_spawn(self->conn_->executor(), self->watchdog(), asio::detached);
  try {
    co_await (self->client_reader() && self->client_writer());
  } catch (const std::exception& e) {
    spdlog::debug("conn {}: h2: {}", self->conn_->id(), e.what());
  }
  self->close_all();
}

// Ends everything: every stream still open is finished (audited), upstream connections closed,
// timers woken.
void Http2Session::close_all() {
  if (closing_ && streams_.empty()) return;
  closing_ = true;
  closed_.cancel();
  client_wake_.cancel();
  for (auto& weak : upstreams_) {
    if (auto up = weak.lock()) up->close();
  }
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) {
    if (s->watch_counted && server_.observer) server_.observer->watch_closed();
    if (s->started()) finish_exchange(server_, s->ex, conn_->id());
  }
}

void Http2Session::cut() { close_all(); }

void Http2Session::drain() {
  if (closing_) return;
  nghttp2_submit_goaway(client_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(client_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  // Watches never end by themselves: cut them, as the HTTP/1.1 path does.
  std::vector<int32_t> watches;
  for (auto& [id, s] : streams_) {
    if (s->ex.record.watch) watches.push_back(id);
  }
  for (auto id : watches) {
    if (auto* s = find(id)) reset_stream(*s, NGHTTP2_NO_ERROR);
  }
  kick_client();
}

// ---------------------------------------------------------------------------------------------
// Client side loops.

asio::awaitable<void> Http2Session::client_reader() {
  std::array<uint8_t, kReadChunk> buf;
  auto& client = conn_->stream();
  while (!closing_ && nghttp2_session_want_read(client_)) {
    co_await hold_while_stalled();
    auto [ec, n] = co_await client.async_read_some(asio::buffer(buf), use_tuple);
    if (ec || closing_) break;
    // Not the idle timer's business: only streams are activity (a PING every minute does not
    // keep an idle connection); the header timeout's.
    header_clock_.scan(buf.data(), n);
    if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
    co_await hold_while_stalled();
    if (closing_) break;
    auto rv = nghttp2_session_mem_recv(client_, buf.data(), n);
    if (rv < 0) {
      // nghttp2 gives up on the input without a word to the client (a header list past four
      // times the limit, more CONTINUATION frames than it takes, a failed callback): the
      // connection ends with a GOAWAY that says why, not with a bare close.
      const bool flood = header_flood_ || rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
      spdlog::debug("conn {}: h2: {}", conn_->id(), nghttp2_strerror(static_cast<int>(rv)));
      nghttp2_session_terminate_session(client_, flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_INTERNAL_ERROR);
      break;
    }
    // The callbacks woke the writers for what they submitted; this is for nghttp2's own frames
    // (SETTINGS and PING acknowledgements, GOAWAY) and the end of the connection.
    if (writer_has_work(client_)) kick_client();
  }
  reading_done_ = true;
  kick_client();
}

asio::awaitable<void> Http2Session::client_writer() {
  auto& out = client_out_;  // send_response_body appends DATA frames here too
  out.reserve(kWriteBatch);
  auto& client = conn_->stream();
  for (;;) {
    client_write_pending_ = false;
    out.clear();
    if (closing_) break;
    if (!collect_output(client_, out, conn_->id())) break;
    if (!settings_patched_ && !out.empty()) {
      settings_patched_ = true;
      if (!patch_max_streams(out, options_.h2_max_streams))
        spdlog::error("conn {}: h2: the first frame is not the SETTINGS expected; the client is told {} streams",
                      conn_->id(), max_streams_with_slack(options_.h2_max_streams));
    }
    if (!out.empty()) {
      if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
      co_await hold_while_stalled();
      if (closing_) break;
      writing_ = true;
      write_started_ = std::chrono::steady_clock::now();
      auto [ec, n] = co_await net::write_all(client, asio::buffer(out));
      writing_ = false;
      if (ec) break;
      continue;
    }
    bool wants = nghttp2_session_want_read(client_) || nghttp2_session_want_write(client_);
    if (!wants || (reading_done_ && !nghttp2_session_want_write(client_))) break;
    if (client_write_pending_) continue;
    client_wake_.expires_at(asio::steady_timer::time_point::max());
    client_waiting_ = true;
    co_await client_wake_.async_wait(use_tuple);
    client_waiting_ = false;
  }
  // The reader may still be waiting for bytes: end it.
  if (!reading_done_) {
    boost::system::error_code ec;
    conn_->socket().shutdown(tcp::socket::shutdown_receive, ec);
    conn_->socket().cancel(ec);
  }
}

// Bounds what a peer controls over time: a connection without streams closes (GOAWAY) after the
// idle timeout; a write the client does not take within the I/O timeout cuts the connection.
asio::awaitable<void> Http2Session::watchdog() {
  auto self = shared_from_this();
  // A quarter of the shortest timeout, between 50 ms and a second.
  const auto tick = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::min(options_.header_timeout, options_.idle_timeout) / 4),
                               std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  while (!closing_) {
    co_await nap(tick);
    if (closing_) break;
    auto now = std::chrono::steady_clock::now();
    if (header_timed_out_) {
      conn_->cut_now(Cut::close);  // the GOAWAY had its tick to leave
      break;
    }
    if (auto since = header_clock_.since(); since && now - *since > options_.header_timeout) {
      // As --header-timeout cuts an HTTP/1.1 request header that does not end: a header block
      // (or the connection's preface) that is not complete in time ends the connection.
      spdlog::debug("conn {}: h2: no complete request header within {} ms (--header-timeout); closing", conn_->id(),
                    options_.header_timeout.count());
      static constexpr std::string_view why = "request header timeout";
      nghttp2_submit_goaway(client_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(client_),
                            NGHTTP2_NO_ERROR, reinterpret_cast<const uint8_t*>(why.data()), why.size());
      header_timed_out_ = true;
      kick_client();
      continue;
    }
    if (writing_ && now - write_started_ > options_.io_timeout) {
      spdlog::debug("conn {}: h2: the client took no bytes for {} ms; cutting", conn_->id(),
                    options_.io_timeout.count());
      conn_->cut_now(Cut::close);
      break;
    }
    if (streams_.empty() && now - last_activity_ > options_.idle_timeout) {
      nghttp2_session_terminate_session(client_, NGHTTP2_NO_ERROR);
      kick_client();
    }
  }
}

asio::awaitable<void> Http2Session::nap(std::chrono::milliseconds d) {
  asio::steady_timer timer(conn_->executor(), d);
  co_await (timer.async_wait(use_tuple) || closed_.async_wait(use_tuple));
}

// A `stall`: the connection sends nothing and reads nothing (so PINGs go unanswered) until it is
// over.
asio::awaitable<void> Http2Session::hold_while_stalled() {
  while (!closing_ && std::chrono::steady_clock::now() < stalled_until_) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(stalled_until_ - std::chrono::steady_clock::now());
    co_await nap(std::max(left, std::chrono::milliseconds(1)));
  }
}

asio::awaitable<void> Http2Session::after(std::shared_ptr<Http2Session> self, std::chrono::milliseconds delay,
                                          int32_t stream_id, Timed what) {
  co_await self->nap(delay);
  if (self->closing_) co_return;
  Http2Stream* s = self->find(stream_id);
  if (!s) co_return;
  switch (what) {
    case Timed::proceed:
      self->proceed(*s);
      break;
    case Timed::hang_over:
      self->reset_stream(*s, NGHTTP2_NO_ERROR);
      break;
    case Timed::watch_deadline:
      if (s->filter && s->end == WatchFilter::End::none) {
        s->filter->acted_by_deadline();
        self->apply_watch_step(*s, WatchFilter::Step{{}, s->filter->at_deadline()});
      }
      break;
  }
  self->kick_client();
}

// RST_STREAM REFUSED_STREAM (the client may retry it: nothing of it was processed), counted and
// logged; the stream's fields are dropped and the rest of its header block ignored.
void Http2Session::refuse_stream(int32_t id, bool max_memory) {
  nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
  server_.refused(max_memory ? Server::Impl::Refusal::max_memory : Server::Impl::Refusal::h2_header_memory);
  streams_.erase(id);
  kick_client();
}

void Http2Session::kick_client() {
  client_write_pending_ = true;
  if (client_waiting_) client_wake_.cancel();
}

Http2Stream* Http2Session::find(int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

// ---------------------------------------------------------------------------------------------
// Client session callbacks. nghttp2 is C: no exception may leave a callback.

int Http2Session::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  H2_GUARD_BEGIN
  // nghttp2 refuses streams beyond SETTINGS_MAX_CONCURRENT_STREAMS; this holds it even before
  // the client acknowledged the setting.
  if (self->streams_.size() >= self->options_.h2_max_streams) {
    nghttp2_submit_rst_stream(self->client_, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
    self->kick_client();
    return 0;  // no Stream: its headers and data are ignored
  }
  // No new work past --max-memory, nor while the decoded headers waiting to go upstream are at
  // their budget.
  if (self->server_.memory_over.load(std::memory_order_relaxed)) {
    self->refuse_stream(frame->hd.stream_id, true);
    return 0;
  }
  if (!self->budget_.allows(1)) {
    self->refuse_stream(frame->hd.stream_id, false);
    return 0;
  }
  auto s = std::make_unique<Http2Stream>();
  s->id = frame->hd.stream_id;
  s->charge.bind(self->budget_);
  self->streams_.emplace(s->id, std::move(s));
  H2_GUARD_END
  return 0;
}

int Http2Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                            const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  // As HTTP/2 counts it (RFC 9113 6.5.2): name + value + 32 per field.
  s->header_bytes += namelen + valuelen + 32;
  // Past four times the limit the client is flooding: end the connection rather than keep
  // decoding (HPACK state forces nghttp2 to decode what it is sent).
  if (s->header_bytes > 4 * self->options_.header_limit) {
    self->header_flood_ = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  if (s->header_bytes > self->options_.header_limit) {
    if (s->request() == Http2RequestState::header) s->set(Http2RequestState::header_too_large);
    s->headers.release();
    s->charge.release();
    return 0;
  }
  if (s->request() == Http2RequestState::header_too_large || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;  // trailers are dropped
  // HPACK: a field indexed once costs a byte per reference, and the lists of a hundred streams
  // arrive in one read before the first has gone upstream.
  const std::size_t cost = namelen + valuelen + 32;
  if (!self->budget_.allows(cost)) {
    self->refuse_stream(s->id, false);
    return 0;
  }
  s->charge.add(cost);
  auto n = view(name, namelen);
  auto v = view(value, valuelen);
  if (n == ":method") s->method = v;
  else if (n == ":path") s->path = v;
  else if (n == ":authority") s->authority = v;
  else if (n == ":scheme") s->scheme = v;
  else if (!n.empty() && n[0] != ':') s->headers.add(n, v);
  H2_GUARD_END
  return 0;
}

int Http2Session::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    const bool too_large = s->request() == Http2RequestState::header_too_large;
    s->set(end ? Http2RequestState::complete : Http2RequestState::body);
    self->start_stream(*s, too_large);
  } else if (end) {
    s->set(Http2RequestState::complete);
    if (s->up) s->up->resume_request(*s);
  }
  H2_GUARD_END
  return 0;
}

// A GOAWAY to the client says why in the log: nghttp2 ends a connection whose client broke the
// protocol with GOAWAY and its reason in the frame's debug data ("SETTINGS: unexpected ACK"), which
// the client may never show; the proxy's own (goaway rules, draining, floods) carry theirs too.
// Where kube-apiserver would have taken what the proxy refused, this line is the evidence.
int Http2Session::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type != NGHTTP2_GOAWAY) return 0;
  auto* self = static_cast<Http2Session*>(user);
  const auto& goaway = frame->goaway;
  std::string_view reason(reinterpret_cast<const char*>(goaway.opaque_data), goaway.opaque_data_len);
  auto level = goaway.error_code == NGHTTP2_NO_ERROR ? spdlog::level::debug : spdlog::level::info;
  spdlog::log(level, "conn {}: h2: GOAWAY {} to the client (last stream {}){}{}", self->conn_->id(),
              faults::actions::h2_error_name(goaway.error_code), goaway.last_stream_id, reason.empty() ? "" : ": ",
              reason);
  return 0;
}

int Http2Session::on_data_chunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                                void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(stream_id);
  H2_GUARD_BEGIN
  if (!s || !s->forwarding) {
    // Nobody takes these bytes (a local answer, a hang, a cut stream): release them at once.
    nghttp2_session_consume(self->client_, stream_id, len);
    if (s) s->ex.record.bytes_in += len;
    return 0;
  }
  s->ex.record.bytes_in += len;
  s->up_buf.append(reinterpret_cast<const char*>(data), len);
  if (s->up) s->up->resume_request(*s);
  H2_GUARD_END
  return 0;
}

int Http2Session::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end()) return 0;
  H2_GUARD_BEGIN
  std::unique_ptr<Http2Stream> s = std::move(it->second);
  self->streams_.erase(it);
  self->last_activity_ = std::chrono::steady_clock::now();
  self->stop_upstream_side(*s);
  self->release_request_bytes(*s);
  if (s->watch_counted && self->server_.observer) self->server_.observer->watch_closed();
  if (s->started()) finish_exchange(self->server_, s->ex, self->conn_->id());
  H2_GUARD_END
  return 0;
}

// The client stream is gone: its upstream stream is cancelled and what it held of the upstream
// connection window is given back.
void Http2Session::stop_upstream_side(Http2Stream& s) {
  if (s.up) s.up->detach(s);
}

// The stream's request will not go on the upstream connection it waited for.
void Http2Session::drop_upstream(Http2Stream& s) {
  s.up.reset();
  if (s.upstream() == Http2UpstreamState::waiting) s.set(Http2UpstreamState::closed);
}

// Request bytes the proxy holds for a stream that will not send them: given back to the client's
// connection window.
void Http2Session::release_request_bytes(Http2Stream& s) {
  if (!s.up_buf.empty()) {
    nghttp2_session_consume_connection(client_, s.up_buf.size());
    s.up_buf.clear();
  }
  s.forwarding = false;
}

// The request header is complete: classify, decide, act.
void Http2Session::start_stream(Http2Stream& s, bool header_too_large) {
  if (header_too_large) {
    begin_exchange(server_, s.ex, conn_->id(), conn_->peer(), "h2", s.method, s.path, {});
    faults::HttpResponse too_large;
    too_large.code = 431;
    too_large.headers.push_back({"content-type", "text/plain; charset=utf-8"});
    too_large.body = "request header too large\n";
    answer(s, too_large);
    return;
  }
  std::vector<faults::Header> matchable;
  for (const auto [name, value] : s.headers) add_matchable_header(matchable, name, value);
  if (!s.authority.empty()) add_matchable_header(matchable, "host", s.authority);
  begin_exchange(server_, s.ex, conn_->id(), conn_->peer(), "h2", s.method, s.path, std::move(matchable));
  if (s.method == "CONNECT" || s.path.empty()) {
    faults::HttpResponse refused;
    refused.code = 405;
    refused.headers.push_back({"content-type", "text/plain; charset=utf-8"});
    refused.body = "CONNECT is not supported\n";
    answer(s, refused);
    return;
  }
  s.forwarding = forwards(s.ex.effects);
  // Only a forwarded request needs its fields again (Http2Upstream::submit); a stream may stay open for
  // long (a watch, a hang, a reader that does not read), and HPACK makes a header list of up to
  // the limit cheap to send: none is kept longer than it is needed.
  if (!s.forwarding) {
    s.headers.release();
    s.charge.release();
  }
  proceed(s);
}

// Carries out the stream's effects from the next one (first, after a wait, once a discarded answer
// ended), then forwards the request unless one of them ended it.
void Http2Session::proceed(Http2Stream& s) {
  auto& effects = s.ex.effects;
  while (s.next_effect < effects.size()) {
    Effect& effect = effects[s.next_effect++];
    if (!std::visit([this, &s](auto& e) { return apply(s, e); }, effect)) return;
  }
  if (s.discarding) {
    cut_stream(s, Cut::reset);  // the answer was lost and no effect said what then
    return;
  }
  forward(s);
}

bool Http2Session::apply(Http2Stream& s, effect::Answer& e) {
  answer(s, e.response);
  return false;
}

bool Http2Session::apply(Http2Stream& s, effect::CutOff& e) {
  cut_stream(s, e.how == Cut::none ? Cut::close : e.how);
  return false;
}

bool Http2Session::apply(Http2Stream& s, effect::Wait& e) {
  if (e.duration.count() <= 0) return true;
  asio::co_spawn(conn_->executor(), after(shared_from_this(), e.duration, s.id, Timed::proceed), asio::detached);
  return false;
}

// The stream stays open, unanswered; after the limit (if any) it ends with RST_STREAM NO_ERROR.
bool Http2Session::apply(Http2Stream& s, effect::Hold& e) {
  if (e.limit) {
    asio::co_spawn(conn_->executor(), after(shared_from_this(), *e.limit, s.id, Timed::hang_over), asio::detached);
  }
  return false;
}

// Forwarded; upstream_closed goes on with the next effects once the answer ended.
bool Http2Session::apply(Http2Stream& s, effect::DiscardResponse&) {
  s.discarding = true;
  forward(s);
  return false;
}

bool Http2Session::apply(Http2Stream& s, effect::FilterWatch& e) {
  s.ex.watch_filter = std::move(e.filter);
  s.ex.json_upstream = e.json_upstream;
  return true;
}

bool Http2Session::apply(Http2Stream&, effect::EnforceOutage&) {
  server_.enforce_outage();
  return true;
}

// Graceful: this stream is the last one the connection takes, it and those before it go on.
// Abrupt: the connection ends now, with this stream (and every open one) unanswered.
bool Http2Session::apply(Http2Stream& s, effect::EndConnection& e) {
  if (e.graceful) {
    nghttp2_submit_goaway(client_, NGHTTP2_FLAG_NONE, s.id, e.error_code, nullptr, 0);
    return true;
  }
  s.forwarding = false;
  nghttp2_session_terminate_session2(client_, s.id - 2 > 0 ? s.id - 2 : 0, e.error_code);
  kick_client();
  return false;
}

bool Http2Session::apply(Http2Stream&, effect::StallConnection& e) {
  stalled_until_ = std::chrono::steady_clock::now() + e.duration;
  spdlog::info("conn {}: h2: connection stalled for {} ms", conn_->id(), e.duration.count());
  return true;
}

// reset: RST_STREAM INTERNAL_ERROR; close: RST_STREAM NO_ERROR. Only this stream is hit.
void Http2Session::cut_stream(Http2Stream& s, Cut how) {
  reset_stream(s, how == Cut::reset ? NGHTTP2_INTERNAL_ERROR : NGHTTP2_NO_ERROR);
}

void Http2Session::reset_stream(Http2Stream& s, uint32_t error_code) {
  release_request_bytes(s);
  s.headers.release();
  s.charge.release();
  stop_upstream_side(s);
  nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, s.id, error_code);
  kick_client();
}

void Http2Session::answer(Http2Stream& s, const faults::HttpResponse& requested) {
  const faults::HttpResponse response = final_local_response(s.ex, requested, conn_->id());
  release_request_bytes(s);
  s.headers.release();
  s.charge.release();
  std::vector<std::string> storage;
  storage.reserve(2 + 2 * response.headers.size() + 2);
  storage.push_back(":status");
  storage.push_back(std::to_string(response.code));
  bool bodiless = response.code == 204 || response.code == 304;
  bool head = s.method == "HEAD";
  for (const auto& h : response.headers) {
    auto name = boost::algorithm::to_lower_copy(std::string(h.name));
    if (name == "content-length" || name == "connection") continue;
    storage.push_back(std::move(name));
    storage.push_back(h.value);
  }
  if (!bodiless) {
    storage.push_back("content-length");
    storage.push_back(std::to_string(response.body.size()));
  }
  std::vector<nghttp2_nv> nva;
  for (std::size_t i = 0; i + 1 < storage.size(); i += 2) nva.push_back(make_nv(storage[i], storage[i + 1]));
  s.down_buf = (bodiless || head) ? std::string() : response.body;
  s.down_off = 0;
  s.set(Http2ResponseState::complete);
  s.ex.record.status = response.code;
  nghttp2_data_provider provider{};
  provider.read_callback = read_response_body;
  int rv = nghttp2_submit_response(client_, s.id, nva.data(), nva.size(), s.down_buf.empty() ? nullptr : &provider);
  if (rv != 0) spdlog::debug("conn {}: h2: answering stream {}: {}", conn_->id(), s.id, nghttp2_strerror(rv));
  kick_client();
}

// ---------------------------------------------------------------------------------------------
// Upstream.

void Http2Session::forward(Http2Stream& s) {
  if (!upstream_ || upstream_->ended()) {
    if (server_.upstream_speaks_http11_only()) {
      refuse_for_http11({s.id});
      return;
    }
    upstream_ = std::make_shared<Http2Upstream>(conn_, *this, budget_);
    upstreams_.remove_if([](const std::weak_ptr<Http2Upstream>& w) { return w.expired(); });
    upstreams_.push_back(upstream_);
    asio::co_spawn(conn_->executor(), Http2Upstream::run(upstream_, shared_from_this()), asio::detached);
  }
  s.up = upstream_;
  s.set(Http2UpstreamState::waiting);
  upstream_->add(s);
}

void Http2Session::connect_failed(const std::vector<int32_t>& waiting, const std::string& failure, bool http11) {
  if (http11) {
    refuse_for_http11(waiting);
    return;
  }
  spdlog::warn("conn {}: upstream {} unreachable ({}); answering 503 to {} HTTP/2 stream(s)", conn_->id(),
               options_.upstream.endpoint.to_string(), failure, waiting.size());
  const faults::HttpResponse response = upstream_unreachable_response(options_, failure);
  for (auto id : waiting) {
    if (Http2Stream* s = find(id)) {
      drop_upstream(*s);
      answer(*s, response);
    }
  }
}

void Http2Session::submit_failed(Http2Stream& s, const std::string& why) {
  drop_upstream(s);
  const faults::HttpResponse answer_502 = bad_gateway_response(options_, why);
  answer(s, answer_502);
}

void Http2Session::request_body_taken(Http2Stream& s, std::size_t n) {
  nghttp2_session_consume(client_, s.id, n);
  kick_client();
}

void Http2Session::upstream_input() {
  if (writer_has_work(client_)) kick_client();
}

// The upstream negotiated http/1.1 (it does not speak h2, or no longer): the streams waiting for
// it are refused (RST_STREAM REFUSED_STREAM: not processed, a client may send them again) and the
// connection takes no new ones (GOAWAY): the client sends them on a new connection, which is
// offered http/1.1 (Server::Impl::offer_h2). Streams already relayed on an h2 upstream connection
// go on.
void Http2Session::refuse_for_http11(const std::vector<int32_t>& ids) {
  for (auto id : ids) {
    if (Http2Stream* s = find(id)) {
      drop_upstream(*s);
      reset_stream(*s, NGHTTP2_REFUSED_STREAM);
    }
  }
  if (!refused_for_http11_) {
    refused_for_http11_ = true;
    spdlog::info(
        "conn {}: h2: upstream {} negotiates only http/1.1: {} stream(s) refused (REFUSED_STREAM), GOAWAY follows; "
        "the client reconnects and is offered http/1.1",
        conn_->id(), options_.upstream.endpoint.to_string(), ids.size());
    asio::co_spawn(conn_->executor(), goaway_for_http11(shared_from_this()), asio::detached);
  }
  kick_client();
}

// GOAWAY a moment after the RST_STREAM frames, not with them: curl 7.88 reads a GOAWAY that comes
// in the same read as the refusal as the end of the connection and fails the request ("Transferred
// a partial file") instead of sending it again; Go's client sends a refused request again at once,
// on the same connection until the GOAWAY (then on a new one).
asio::awaitable<void> Http2Session::goaway_for_http11(std::shared_ptr<Http2Session> self) {
  co_await self->nap(std::chrono::milliseconds(100));
  if (self->closing_) co_return;
  static constexpr std::string_view kWhy = "the upstream speaks HTTP/1.1 only: reconnect";
  nghttp2_submit_goaway(self->client_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(self->client_),
                        NGHTTP2_NO_ERROR, reinterpret_cast<const uint8_t*>(kWhy.data()), kWhy.size());
  self->kick_client();
}

void Http2Session::response_header(Http2Stream& s, bool end_stream) {
  s.ex.record.upstream_status = s.resp_status;
  s.ex.upstream_latency = std::chrono::steady_clock::now() - s.sent;
  if (s.discarding) return;  // discard_response: the answer is lost (the next effects at its end)
  if (s.resp_too_large) {
    const std::string why = "response header larger than " + std::to_string(kResponseHeaderLimit) + " bytes";
    spdlog::warn("conn {}: upstream {} sent an invalid response ({}); answering 502 to {} {}", conn_->id(),
                 options_.upstream.endpoint.to_string(), why, s.method, path_only(s.path));
    s.up->reset(s);
    stop_upstream_side(s);
    answer(s, bad_gateway_response(options_, why));
    return;
  }
  // nghttp2_submit_response copies the fields: they point into the stream's own strings.
  const std::string status_name = ":status";
  const std::string status = std::to_string(s.resp_status);
  std::vector<nghttp2_nv> nva;
  nva.reserve(1 + s.resp_headers.size());
  nva.push_back(make_nv(status_name, status));
  std::string_view content_type;
  for (const auto [name, value] : s.resp_headers) {
    if (name == "content-type") content_type = value;
    // A watch filter may change the body: its length is no longer the upstream's.
    if (name == "content-length" && s.ex.watch_filter) continue;
    nva.push_back(make_nv(name, value));
  }
  s.set(end_stream ? Http2ResponseState::complete : Http2ResponseState::relaying);
  s.ex.record.status = s.resp_status;
  if (s.ex.record.watch && server_.observer) {
    server_.observer->watch_opened();
    s.watch_counted = true;
  }
  s.filter = s.ex.watch_filter.get();
  if (s.filter && s.ex.json_upstream && !is_json_content_type(content_type)) {
    spdlog::error("conn {}: rule '{}' ({}) cannot act: the watch response is not JSON (Content-Type '{}')", conn_->id(),
                  s.ex.plan.rule, s.ex.record.action.value_or(""), content_type);
    s.filter = nullptr;
  }
  nghttp2_data_provider provider{};
  provider.read_callback = read_response_body;
  int rv = nghttp2_submit_response(client_, s.id, nva.data(), nva.size(), end_stream ? nullptr : &provider);
  if (rv != 0)
    spdlog::debug("conn {}: h2: relaying the response of stream {}: {}", conn_->id(), s.id, nghttp2_strerror(rv));
  if (s.filter) {
    if (auto deadline = s.filter->deadline()) {
      asio::co_spawn(conn_->executor(), after(shared_from_this(), *deadline, s.id, Timed::watch_deadline),
                     asio::detached);
    }
    if (s.ex.json_upstream) apply_watch_step(s, s.filter->on_start());
  }
  kick_client();
}

bool Http2Session::response_data(Http2Stream& s, std::string_view data) {
  if (s.discarding || s.end != WatchFilter::End::none || !s.responded()) return false;
  s.down_unconsumed += data.size();
  if (s.filter && s.ex.json_upstream) {
    for (auto& event : s.splitter.feed(data)) {
      if (s.end == WatchFilter::End::none) apply_watch_step(s, s.filter->on_event(event));
    }
  } else {
    if (s.down_off > 0 && s.down_off >= s.down_buf.size() / 2) {
      s.down_buf.erase(0, s.down_off);
      s.down_off = 0;
    }
    s.down_buf.append(data);
  }
  nghttp2_session_resume_data(client_, s.id);
  kick_client();
  return true;
}

void Http2Session::response_ended(Http2Stream& s) {
  if (s.responded()) {
    s.set(Http2ResponseState::complete);
    nghttp2_session_resume_data(client_, s.id);
  }
  kick_client();
}

void Http2Session::apply_watch_step(Http2Stream& s, WatchFilter::Step step) {
  for (auto& event : step.emit) s.down_buf += event;
  if (step.end == WatchFilter::End::none) return;
  s.end = step.end;
  // The rest of the upstream stream is not relayed.
  if (s.up) s.up->cancel(s);
  // Reset once what is buffered is out, unless all of the response is here already.
  if (step.end == WatchFilter::End::clean) s.set(Http2ResponseState::complete);
  else if (s.response() != Http2ResponseState::complete) s.set(Http2ResponseState::failing);
  nghttp2_session_resume_data(client_, s.id);
  kick_client();
}

// The upstream stream ended (END_STREAM, RST_STREAM, GOAWAY, the connection lost).
void Http2Session::upstream_closed(Http2Stream& s, uint32_t error_code) {
  if (s.upstream() == Http2UpstreamState::closed) return;
  s.set(Http2UpstreamState::closed);
  if (s.end != WatchFilter::End::none) return;  // a watch filter ended the stream already
  if (s.discarding) {
    // discard_response: the request was carried out upstream; the effects after it act now.
    proceed(s);
    return;
  }
  if (s.response() == Http2ResponseState::complete && error_code == NGHTTP2_NO_ERROR) return;  // a complete response
  // The apiserver reset the stream, refused it (GOAWAY) or its connection ended: the client sees
  // the same on its stream (a refused stream is retried by HTTP/2 clients).
  if (!s.responded() && error_code == NGHTTP2_NO_ERROR) {
    answer(s, bad_gateway_response(options_, "the upstream stream ended without a response"));
    return;
  }
  const uint32_t code = error_code == NGHTTP2_NO_ERROR ? uint32_t{NGHTTP2_INTERNAL_ERROR} : error_code;
  reset_stream(s, code);
}

void Http2Session::consume_upstream(Http2Stream& s, std::size_t n) {
  if (n == 0) return;
  s.down_unconsumed -= n;
  if (s.up) s.up->consume(s, n);
}

// A response DATA frame's payload goes from the stream's buffer straight into the client
// writer's output (NGHTTP2_DATA_FLAG_NO_COPY, then send_response_body), not through a copy in
// nghttp2's frame buffer first. The bytes leave down_buf only there: between the two callbacks the
// writer may be waiting for a socket write while the upstream reader appends to down_buf.
ssize_t Http2Session::read_response_body(nghttp2_session*, int32_t stream_id, uint8_t*, size_t length,
                                         uint32_t* data_flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  std::size_t n = std::min(length, s->down_size());
  if (n == 0) {
    // All out: everything received is given back (with a watch filter the bytes out differ from
    // the bytes in).
    s->down_buf.clear();
    s->down_off = 0;
    self->consume_upstream(*s, s->down_unconsumed);
  }
  if (n == s->down_size()) {
    if (s->response() == Http2ResponseState::complete) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0 && s->response() == Http2ResponseState::failing)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR
    else if (n == 0) return NGHTTP2_ERR_DEFERRED;
  }
  if (n > 0) *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  return static_cast<ssize_t>(n);
}

int Http2Session::send_response_body(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                                     nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // the stream is gone: nothing was written
  if (length > s->down_size()) return NGHTTP2_ERR_CALLBACK_FAILURE;
  H2_GUARD_BEGIN
  auto& out = self->client_out_;
  out.insert(out.end(), framehd, framehd + 9);
  const std::size_t pad = frame->data.padlen;
  if (pad > 0) out.push_back(static_cast<uint8_t>(pad - 1));
  const auto* data = reinterpret_cast<const uint8_t*>(s->down_buf.data()) + s->down_off;
  out.insert(out.end(), data, data + length);
  if (pad > 1) out.insert(out.end(), pad - 1, uint8_t{0});
  s->down_off += length;
  s->ex.record.bytes_out += length;
  bool empty = s->down_size() == 0;
  if (empty) {
    s->down_buf.clear();
    s->down_off = 0;
  }
  // Taken towards the client: the apiserver may send that much more (with a watch filter the
  // bytes out differ from the bytes in; everything received is given back once all is out).
  self->consume_upstream(*s, empty ? s->down_unconsumed : std::min(length, s->down_unconsumed));
  H2_GUARD_END
  return 0;
}

}  // namespace faultline::proxy
