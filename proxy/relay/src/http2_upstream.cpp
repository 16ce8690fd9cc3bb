// An h2 upstream connection of the HTTP/2 relay (see http2_upstream.hpp).
#include "http2_upstream.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

#include "connection.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/proxy/headers.hpp"
#include "http2_wire.hpp"

namespace faultline::proxy {

using net::use_tuple;
using namespace asio::experimental::awaitable_operators;

Http2Upstream::Http2Upstream(std::shared_ptr<TlsConnection> conn, Listener& listener, Http2HeaderBudget& budget)
    : conn_(std::move(conn)),
      listener_(listener),
      stream_(conn_->executor(), conn_->server().upstream_tls_h2),
      wake_(conn_->executor()) {
  charge_.bind(budget);
}

Http2Upstream::~Http2Upstream() {
  if (session_) nghttp2_session_del(session_);
}

asio::awaitable<void> Http2Upstream::run(std::shared_ptr<Http2Upstream> self,
                                         [[maybe_unused]] std::shared_ptr<Listener> owner) {
  auto& listener = self->listener_;
  std::string failure;
  try {
    failure = co_await self->connect();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (listener.closing()) co_return;
  if (!failure.empty()) {
    self->done_ = true;
    boost::system::error_code ec;
    self->stream_.socket().close(ec);
    auto waiting = std::move(self->waiting_);
    listener.connect_failed(waiting, failure, self->http11_);
    co_return;
  }
  self->ready_ = true;
  auto waiting = std::move(self->waiting_);
  for (auto id : waiting) {
    if (Http2Stream* s = listener.stream(id)) self->submit(*s);
  }
  try {
    co_await (self->reader() && self->writer());
  } catch (const std::exception& e) {
    spdlog::debug("conn {}: h2 upstream: {}", self->conn_->id(), e.what());
  }
  self->done_ = true;
  boost::system::error_code ec;
  self->stream_.socket().close(ec);
  if (listener.closing()) co_return;
  // Streams the upstream connection still carried end as the apiserver left them.
  auto left = self->to_client_;
  for (auto& [up_id, client_id] : left) {
    self->to_client_.erase(up_id);
    if (Http2Stream* s = listener.stream(client_id)) listener.upstream_closed(*s, NGHTTP2_INTERNAL_ERROR);
  }
  listener.upstream_ended();
}

// Returns what failed ("" when the connection is up and speaks h2; http11_ when it negotiated
// http/1.1).
asio::awaitable<std::string> Http2Upstream::connect() {
  const auto& options = conn_->options();
  const auto& target = options.upstream;
  tcp::resolver resolver(conn_->executor());
  // The deadline covers the TCP connect and the TLS handshake together.
  const net::TlsConnectOptions connect{.verify_name = target.endpoint.host,
                                       .verify = !target.tls.insecure_skip_verify,
                                       .timeout = options.connect_timeout,
                                       .no_delay = true};
  if (auto failure = co_await net::connect_tls(stream_, resolver, target.endpoint, connect)) {
    co_return failure->message();
  }
  stream_.expires_never();
  // A connection closed while the handshake ran has no ALPN to read: it says nothing of the
  // upstream's protocols.
  if (listener_.closing() || done_) co_return "the client connection ended during the TLS handshake";
  auto alpn = net::alpn_selected(stream_.native_handle());
  conn_->server().upstream_negotiated(alpn);
  if (alpn != "h2") {
    http11_ = true;
    co_return "the upstream negotiated " + (alpn.empty() ? std::string("no protocol") : alpn) + ", not h2";
  }
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_max_send_header_block_length(option, options.header_limit + 64 * 1024);
  int rv = nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) co_return std::string("nghttp2 client session: ") + nghttp2_strerror(rv);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options.h2_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kResponseHeaderLimit)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  auto window = static_cast<int32_t>(
      std::min<std::uint64_t>(std::uint64_t{options.h2_max_streams} * options.h2_stream_window, 0x7fffffff));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, window);
  co_return std::string();
}

asio::awaitable<void> Http2Upstream::reader() {
  std::array<uint8_t, kReadChunk> buf;
  while (!listener_.closing() && !done_ && nghttp2_session_want_read(session_)) {
    auto [ec, n] = co_await stream_.async_read_some(asio::buffer(buf), use_tuple);
    if (ec || listener_.closing()) break;
    if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
    if (listener_.closing() || done_) break;
    auto rv = nghttp2_session_mem_recv(session_, buf.data(), n);
    if (rv < 0) {
      spdlog::warn("conn {}: h2 upstream: {}", conn_->id(), nghttp2_strerror(static_cast<int>(rv)));
      break;
    }
    if (writer_has_work(session_)) kick();
    listener_.upstream_input();
  }
  done_ = true;
  kick();
}

asio::awaitable<void> Http2Upstream::writer() {
  std::vector<uint8_t> out;  // being written; out_ fills meanwhile
  out.reserve(kWriteBatch);
  out_.reserve(kWriteBatch);
  for (;;) {
    write_pending_ = false;
    out.clear();
    if (listener_.closing()) break;
    if (!collect_output(session_, out_, conn_->id())) break;
    out.swap(out_);
    trim_buffer(out_);
    in_flight_ = out.size();
    charge_out();
    if (!out.empty()) {
      if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
      if (listener_.closing()) break;
      auto [ec, n] = co_await net::write_all(stream_, asio::buffer(out));
      if (listener_.closing()) break;
      in_flight_ = 0;
      charge_out();
      if (ec) break;
      out.clear();
      trim_buffer(out);
      // read_request_body woke the client writer for the window it gave back.
      continue;
    }
    if (done_) break;
    if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) break;
    if (write_pending_) continue;
    wake_.expires_at(asio::steady_timer::time_point::max());
    writer_waiting_ = true;
    co_await wake_.async_wait(use_tuple);
    writer_waiting_ = false;
  }
  done_ = true;
  charge_.release();
  boost::system::error_code ec;
  stream_.socket().cancel(ec);
}

void Http2Upstream::add(Http2Stream& s) {
  if (ready_) submit(s);
  else waiting_.push_back(s.id);
}

void Http2Upstream::submit(Http2Stream& s) {
  const auto& options = conn_->options();
  const auto& target = options.upstream;
  const std::string scheme = "https";
  const std::string authority = target.endpoint.to_string();
  const std::string path = target.base_path + s.path;
  HeaderList fields;
  bool client_authorization = false;
  for (const auto [name, value] : s.headers) {
    if (name == "host" || name == "expect") continue;
    if (name == "authorization" && target.replace_identity) continue;
    if (name == "authorization") client_authorization = true;
    if (name == "accept" && s.ex.json_upstream) {
      fields.add(name, accept_json_instead_of_protobuf(value));
      continue;
    }
    fields.add(name, value);
  }
  if (target.replace_identity && !target.token.empty()) fields.add("authorization", "Bearer " + target.token);
  if (!target.replace_identity && !client_authorization && target.fallback_token)
    fields.add("authorization", "Bearer " + target.fallback_token->current());
  const std::string m = ":method", sc = ":scheme", au = ":authority", pa = ":path";
  std::vector<nghttp2_nv> nva;
  nva.reserve(4 + fields.size());
  nva.push_back(make_nv(m, s.method));
  nva.push_back(make_nv(sc, scheme));
  nva.push_back(make_nv(au, authority));
  nva.push_back(make_nv(pa, path));
  for (const auto [name, value] : fields) {
    nghttp2_nv nv = make_nv(name, value);
    if (name == "authorization") nv.flags = NGHTTP2_NV_FLAG_NO_INDEX;  // never in the HPACK table
    nva.push_back(nv);
  }
  nghttp2_data_provider provider{};
  provider.read_callback = read_request_body;
  bool no_body = s.request() == Http2RequestState::complete && s.up_buf.empty();
  int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), no_body ? nullptr : &provider, nullptr);
  if (id < 0) {
    listener_.submit_failed(s, std::string("opening an upstream stream: ") + nghttp2_strerror(id));
    return;
  }
  s.up_id = id;
  s.set(Http2UpstreamState::open);
  s.sent = std::chrono::steady_clock::now();
  to_client_[id] = s.id;
  s.headers.release();  // nghttp2 copied what it sends
  // nghttp2 keeps its copy of the fields until the HEADERS frame is serialized. The writer would do
  // that only after the client's whole read is processed, and one 16 KiB read can open dozens of
  // streams whose header lists decompress to 1 MiB each (indexed fields: a byte each on the
  // wire): serialized now, at most one such copy is held at a time. (A failure is nghttp2's
  // session failing; the writer meets it again, logs it and ends the connection.)
  // Until this stream's HEADERS frame is out (on_frame_send), whatever came before it too: the
  // serialized bytes are charged to the connection's header budget until written.
  while (s.upstream() == Http2UpstreamState::open) {
    const uint8_t* data = nullptr;
    auto n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;
    out_.insert(out_.end(), data, data + n);
  }
  charge_out();
  kick();
}

void Http2Upstream::resume_request(Http2Stream& s) {
  if (s.up_id > 0 && session_) {
    nghttp2_session_resume_data(session_, s.up_id);
    kick();
  }
}

void Http2Upstream::consume(Http2Stream& s, std::size_t n) {
  if (session_ && !done_) {
    // A closed stream only gives back the connection window.
    nghttp2_session_consume(session_, s.up_id, n);
    kick();
  }
}

void Http2Upstream::reset(Http2Stream& s) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
}

void Http2Upstream::cancel(Http2Stream& s) {
  if (session_ && !done_) {
    if (s.up_id > 0 && s.upstream_open())
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    kick();
  }
}

void Http2Upstream::detach(Http2Stream& s) {
  if (s.up_id > 0) to_client_.erase(s.up_id);
  std::erase(waiting_, s.id);
  if (session_ && !done_) {
    if (s.up_id > 0 && s.upstream_open())
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    if (s.down_unconsumed > 0) nghttp2_session_consume_connection(session_, s.down_unconsumed);
    kick();
  }
  s.down_unconsumed = 0;
  s.set(Http2UpstreamState::closed);
}

void Http2Upstream::close() {
  done_ = true;
  boost::system::error_code ec;
  stream_.socket().close(ec);
  wake_.cancel();
}

Http2Stream* Http2Upstream::find(int32_t up_id) {
  auto it = to_client_.find(up_id);
  return it == to_client_.end() ? nullptr : listener_.stream(it->second);
}

void Http2Upstream::charge_out() {
  if (done_) charge_.release();
  else charge_.set(out_.size() + in_flight_);
}

void Http2Upstream::kick() {
  write_pending_ = true;
  if (writer_waiting_) wake_.cancel();
}

// ---------------------------------------------------------------------------------------------
// nghttp2 client session callbacks.

int Http2Upstream::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* self = static_cast<Http2Upstream*>(user);
  if (Http2Stream* s = self->find(frame->hd.stream_id)) {
    s->set(Http2UpstreamState::sent);
    s->charge.release();
  }
  return 0;
}

ssize_t Http2Upstream::read_request_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                                         uint32_t* data_flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Upstream*>(user);
  Http2Stream* s = self->find(stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  std::size_t n = std::min(length, s->up_buf.size());
  if (n > 0) {
    std::memcpy(buf, s->up_buf.data(), n);
    s->up_buf.erase(0, n);
    // Taken by the upstream session: the client may send that much more.
    self->listener_.request_body_taken(*s, n);
  }
  if (s->up_buf.empty()) {
    if (s->request() == Http2RequestState::complete) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0) return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

int Http2Upstream::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                             const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* self = static_cast<Http2Upstream*>(user);
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s || s->response() != Http2ResponseState::none) return 0;  // trailers are dropped
  H2_GUARD_BEGIN
  s->resp_header_bytes += namelen + valuelen + 32;
  if (s->response_header_too_large()) {
    s->resp_headers.clear();
    return 0;
  }
  auto n = view(name, namelen);
  auto v = view(value, valuelen);
  if (n == ":status") std::from_chars(v.data(), v.data() + v.size(), s->resp_status);
  else if (!n.empty() && n[0] != ':') s->resp_headers.add(n, v);
  H2_GUARD_END
  return 0;
}

int Http2Upstream::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Http2Upstream*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  Http2Stream* s = self->find(frame->hd.stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && s->response() == Http2ResponseState::none) {
    if (s->resp_status / 100 == 1 && !s->response_header_too_large()) {
      // An interim response (100, 103): dropped, the final one follows.
      s->resp_headers.clear();
      s->resp_header_bytes = 0;
      s->resp_status = 0;
      return 0;
    }
    s->set(Http2ResponseState::received);
    self->listener_.response_header(*s, end);
  } else if (end && s->response() != Http2ResponseState::none && s->end == WatchFilter::End::none) {
    self->listener_.response_ended(*s);
  }
  H2_GUARD_END
  return 0;
}

int Http2Upstream::on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                                 void* user) {
  auto* self = static_cast<Http2Upstream*>(user);
  Http2Stream* s = self->find(stream_id);
  H2_GUARD_BEGIN
  if (!s || !self->listener_.response_data(*s, view(data, len))) nghttp2_session_consume(session, stream_id, len);
  H2_GUARD_END
  return 0;
}

int Http2Upstream::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  auto* self = static_cast<Http2Upstream*>(user);
  Http2Stream* s = self->find(stream_id);
  self->to_client_.erase(stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  self->listener_.upstream_closed(*s, error_code);
  H2_GUARD_END
  return 0;
}

}  // namespace faultline::proxy
