// HTTP/2 relay of one client connection, towards the client (see http2_session.hpp).
#include "http2_session.hpp"

#include "resource_version_probe.hpp"

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
      io_(*conn_, [this] { return streams_.empty(); }),
      responses_(*conn_, io_, read_response_body) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(callbacks, send_response_body);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
  std::unique_ptr<nghttp2_session_callbacks, decltype(&nghttp2_session_callbacks_del)> owned(
      callbacks, nghttp2_session_callbacks_del);
  client_ = io_.open(callbacks, this);
  responses_.serve(client_);
}

Http2Session::~Http2Session() = default;

asio::awaitable<void> Http2Session::run(std::shared_ptr<Http2Session> self) {
  self->conn_->stream().expires_never();  // the watchdog bounds idle connections and stuck writes
  std::shared_ptr<void> owner = self;
  asio::co_spawn(self->conn_->executor(), self->io_.watchdog(owner), asio::detached);
  try {
    co_await (self->io_.reader() && self->io_.writer());
  } catch (const std::exception& e) {
    spdlog::debug("conn {}: h2: {}", self->conn_->id(), e.what());
  }
  self->close_all();
}

// Ends everything: every stream still open is finished (audited), upstream connections closed,
// timers woken.
void Http2Session::close_all() {
  if (io_.closing() && streams_.empty()) return;
  io_.close();
  for (auto& weak : upstreams_) {
    if (auto up = weak.lock()) up->close();
  }
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) {
    leave_batch(*s, conn_->id());
    if (s->watch_counted && server_.observer) server_.observer->watch_closed();
    if (s->started()) finish_exchange(server_, s->ex, conn_->id());
  }
}

void Http2Session::cut() { close_all(); }

void Http2Session::drain() {
  if (io_.closing()) return;
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

asio::awaitable<void> Http2Session::after(std::shared_ptr<Http2Session> self, std::chrono::milliseconds delay,
                                          int32_t stream_id, Timed what) {
  co_await self->io_.nap(delay);
  if (self->io_.closing()) co_return;
  Http2Stream* s = self->find(stream_id);
  if (!s) co_return;
  switch (what) {
    case Timed::proceed:
      self->proceed(*s);
      break;
    case Timed::hang_over:
      self->reset_stream(*s, NGHTTP2_NO_ERROR);
      break;
    case Timed::watch_due:
      s->watch_wake.reset();
      self->release_due_events(*s);
      break;
    case Timed::watch_deadline:
      if (s->filter && s->end == WatchFilter::End::none) {
        s->filter->acted_by_deadline();
        self->responses_.watch_step(*s, WatchFilter::Step{{}, s->filter->at_deadline()});
      }
      break;
  }
  self->kick_client();
}

bool Http2Session::response_data(Http2Stream& s, std::string_view data) {
  const bool taken = responses_.data(s, data);
  if (taken) release_due_events(s);
  return taken;
}

void Http2Session::release_due_events(Http2Stream& s) {
  if (!s.filter || !s.filter->holds_events() || !s.ex.json_upstream || s.end != WatchFilter::End::none) return;
  const auto now = server_.clock.now();
  responses_.watch_step(s, s.filter->advance(now));
  if (s.end != WatchFilter::End::none) return;
  if (s.down_size() > WatchFilter::kMaxHeldBytes) {
    spdlog::error(
        "conn {}: {}: more than {} MiB of released events not yet taken by the client on stream {}: the "
        "stream is reset",
        conn_->id(), s.ex.record.action.value_or(""), WatchFilter::kMaxHeldBytes >> 20, s.id);
    responses_.watch_step(s, WatchFilter::Step{{}, WatchFilter::End::reset});
    return;
  }
  const auto due = s.filter->next_due();
  if (!due || (s.watch_wake && *s.watch_wake <= *due)) return;
  s.watch_wake = *due;
  const auto delay = std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(*due - now));
  asio::co_spawn(conn_->executor(), after(shared_from_this(), delay, s.id, Timed::watch_due), asio::detached);
}

// RST_STREAM REFUSED_STREAM (the client may retry it: nothing of it was processed), counted and
// logged; the stream's fields are dropped and the rest of its header block ignored.
void Http2Session::refuse_stream(int32_t id, bool max_memory) {
  nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
  server_.refused(max_memory ? Server::Impl::Refusal::max_memory : Server::Impl::Refusal::h2_header_memory);
  streams_.erase(id);
  kick_client();
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
    self->io_.header_flood();
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
  self->io_.activity();
  self->stop_upstream_side(*s);
  self->release_request_bytes(*s);
  leave_batch(*s, self->conn_->id());
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

// The proxy's own answer to a request it cannot take: `code`, a line of plain text.
static faults::HttpResponse plain_text(int code, std::string body) {
  faults::HttpResponse response;
  response.code = code;
  response.headers.push_back({"content-type", "text/plain; charset=utf-8"});
  response.body = std::move(body);
  return response;
}

// The request header is complete: classify, decide, act.
void Http2Session::start_stream(Http2Stream& s, bool header_too_large) {
  if (header_too_large) {
    begin_exchange(server_, s.ex, conn_->id(), conn_->peer(), "h2", s.method, s.path, {});
    answer(s, plain_text(431, "request header too large\n"));
    return;
  }
  std::vector<faults::Header> matchable;
  for (const auto [name, value] : s.headers) add_matchable_header(matchable, name, value);
  if (!s.authority.empty()) add_matchable_header(matchable, "host", s.authority);
  begin_exchange(server_, s.ex, conn_->id(), conn_->peer(), "h2", s.method, s.path, std::move(matchable));
  if (s.method == "CONNECT" || s.path.empty()) {
    answer(s, plain_text(405, "CONNECT is not supported\n"));
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
  io_.stall(e.duration);
  spdlog::info("conn {}: h2: connection stalled for {} ms", conn_->id(), e.duration.count());
  return true;
}

// Held in the rule's batch (gate.hpp) until it is released; `held` goes on then. The stream's
// request body waits in the proxy meanwhile, at most one stream window of it (flow control).
bool Http2Session::apply(Http2Stream& s, effect::Gate& e) {
  std::shared_ptr<GateTicket> ticket = server_.gates.join(e, conn_->executor());
  if (!ticket) {
    s.ex.record.held = audit::Held{"not-held", 0, {}};
    spdlog::debug("conn {}: rule '{}': {} requests are held already; {} {} goes on", conn_->id(), s.ex.plan.rule,
                  Gates::kMaxHeld, s.method, path_only(s.path));
    return true;
  }
  s.gate = GateHold(server_.gates, ticket);
  asio::co_spawn(conn_->executor(), held(shared_from_this(), s.id, std::move(ticket)), asio::detached);
  return false;
}

asio::awaitable<void> Http2Session::held(std::shared_ptr<Http2Session> self, int32_t stream_id,
                                         std::shared_ptr<GateTicket> ticket) {
  std::size_t batch = 0;
  for (;;) {
    batch = self->server_.gates.wake(*ticket);
    if (batch > 0) break;
    const Http2Stream* waiting = self->find(stream_id);
    if (self->io_.closing() || !waiting || waiting->gate.ticket() != ticket.get()) co_return;  // it left
    co_await ticket->timer.async_wait(use_tuple);
  }
  Http2Stream* s = self->find(stream_id);
  if (self->io_.closing() || !s || s->gate.ticket() != ticket.get()) co_return;
  s->gate.done();
  const auto* gate = std::get_if<effect::Gate>(&s->ex.effects[s->next_effect - 1]);
  if (!gate) co_return;
  using Then = faults::actions::Hold::Then;
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - ticket->since);
  s->ex.record.held = audit::Held{gate->then == Then::forward ? "forwarded"
                                  : gate->then == Then::reset ? "reset"
                                                              : "answered",
                                  batch, waited};
  if (gate->then == Then::forward) self->proceed(*s);
  else if (gate->then == Then::reset) self->cut_stream(*s, Cut::reset);
  else self->answer(*s, *gate->response);
  self->kick_client();
}

void Http2Session::leave_batch(Http2Stream& s, std::uint64_t conn) {
  if (!s.gate) return;
  const auto since = s.gate.ticket()->since;
  if (!s.gate.leave()) return;
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since);
  s.ex.record.held = audit::Held{"gave-up", 0, waited};
  spdlog::info("conn {}: rule '{}': the client of {} {} went away while it was held ({} ms)", conn, s.ex.plan.rule,
               s.method, path_only(s.path), waited.count());
}

// stale-read: the stream waits while the proxy learns the current resourceVersion upstream.
bool Http2Session::apply(Http2Stream& s, effect::RecordResourceVersion& e) {
  std::optional<std::string> authorization;
  for (const auto [name, value] : s.headers)
    if (name == "authorization") authorization = std::string(value);
  asio::co_spawn(conn_->executor(), record_then_proceed(shared_from_this(), s.id, e.rules, authorization),
                 asio::detached);
  return false;
}

asio::awaitable<void> Http2Session::record_then_proceed(std::shared_ptr<Http2Session> self, int32_t stream_id,
                                                        std::vector<int> rules,
                                                        std::optional<std::string> authorization) {
  const asio::any_io_executor executor = self->conn_->executor();
  const std::uint64_t conn = self->conn_->id();
  co_await record_resource_version(self->server_, executor, rules, authorization, conn);
  if (self->io_.closing()) co_return;
  Http2Stream* s = self->find(stream_id);
  if (!s) co_return;
  self->proceed(*s);
  self->kick_client();
}

bool Http2Session::apply(Http2Stream& s, effect::ReadAsOf& e) {
  note_stale_read(s.ex, e);
  if (!e.target.empty()) s.path = e.target;
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
  responses_.answer(s, response);
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
  co_await self->io_.nap(std::chrono::milliseconds(100));
  if (self->io_.closing()) co_return;
  static constexpr std::string_view kWhy = "the upstream speaks HTTP/1.1 only: reconnect";
  nghttp2_submit_goaway(self->client_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(self->client_),
                        NGHTTP2_NO_ERROR, reinterpret_cast<const uint8_t*>(kWhy.data()), kWhy.size());
  self->kick_client();
}

void Http2Session::response_header(Http2Stream& s, bool end_stream) {
  s.ex.record.upstream_status = s.resp_status;
  s.ex.upstream_latency = std::chrono::steady_clock::now() - s.sent;
  if (s.discarding) return;  // discard_response: the answer is lost (the next effects at its end)
  if (s.response_header_too_large()) {
    const std::string why = "response header larger than " + std::to_string(kResponseHeaderLimit) + " bytes";
    spdlog::warn("conn {}: upstream {} sent an invalid response ({}); answering 502 to {} {}", conn_->id(),
                 options_.upstream.endpoint.to_string(), why, s.method, path_only(s.path));
    s.up->reset(s);
    stop_upstream_side(s);
    answer(s, bad_gateway_response(options_, why));
    return;
  }
  responses_.relay(s, end_stream);
  if (s.filter) {
    if (auto deadline = s.filter->deadline()) {
      asio::co_spawn(conn_->executor(), after(shared_from_this(), *deadline, s.id, Timed::watch_deadline),
                     asio::detached);
    }
    if (s.ex.json_upstream) responses_.watch_step(s, s.filter->on_start());
  }
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

ssize_t Http2Session::read_response_body(nghttp2_session*, int32_t stream_id, uint8_t*, size_t length,
                                         uint32_t* data_flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  return self->responses_.read_body(*s, length, data_flags);
}

int Http2Session::send_response_body(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                                     nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // the stream is gone: nothing was written
  return self->responses_.send_body(*s, *frame, framehd, length);
}

}  // namespace faultline::proxy
