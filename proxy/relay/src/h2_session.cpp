// HTTP/2 relay of one client connection (see h2_session.hpp).
#include "h2_session.hpp"

#include <boost/algorithm/string/case_conv.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <vector>

#include "connection.hpp"
#include "faultline/faults/actions/goaway.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/proxy/headers.hpp"

namespace faultline::proxy {
namespace {

using net::use_tuple;
using namespace asio::experimental::awaitable_operators;

// Largest upstream response header list (as for HTTP/1.1: kube-apiserver's are a few hundred
// bytes, its Warning headers are capped at 4 KiB in total).
constexpr std::size_t kResponseHeaderLimit = 16 * 1024;
// Bytes collected from nghttp2 before one socket write, and read from a socket at once.
constexpr std::size_t kWriteBatch = 64 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;

// What nghttp2 enforces for the client's streams: the advertised limit and as many again (see the
// Http2Session constructor).
uint32_t max_streams_with_slack(uint32_t advertised) {
  return static_cast<uint32_t>(std::min<std::uint64_t>(std::uint64_t{advertised} * 2, 0x7fffffff));
}

// Rewrites SETTINGS_MAX_CONCURRENT_STREAMS in the server's first SETTINGS frame, the first bytes
// nghttp2 sends (its first entry: id 0x3, then the value); false when `out` does not start so.
bool patch_max_streams(std::vector<uint8_t>& out, uint32_t advertised) {
  if (out.size() < 15 || out[3] != NGHTTP2_SETTINGS || out[4] != 0 || out[9] != 0 ||
      out[10] != NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    return false;
  out[11] = static_cast<uint8_t>(advertised >> 24);
  out[12] = static_cast<uint8_t>(advertised >> 16);
  out[13] = static_cast<uint8_t>(advertised >> 8);
  out[14] = static_cast<uint8_t>(advertised);
  return true;
}

std::string_view view(const uint8_t* data, size_t len) { return {reinterpret_cast<const char*>(data), len}; }

nghttp2_nv make_nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

// Header fields in their order, each name and value stored one after another in one string: a
// header costs one growing string and one vector, not a string per long name or value (every
// kube-apiserver response has a few: Audit-Id, the X-Kubernetes-Pf-* UIDs). Views stay valid
// until the next add() or clear(). Its size is bounded by the header limits of the callbacks that
// fill it.
class HeaderList {
 public:
  struct Field {
    std::string_view name, value;
  };
  class iterator {
   public:
    iterator(const HeaderList& list, std::size_t index, std::size_t at) : list_(&list), index_(index), at_(at) {}
    Field operator*() const {
      auto [n, v] = list_->sizes_[index_];
      std::string_view text = list_->text_;
      return {text.substr(at_, n), text.substr(at_ + n, v)};
    }
    iterator& operator++() {
      auto [n, v] = list_->sizes_[index_++];
      at_ += n + v;
      return *this;
    }
    bool operator!=(const iterator& other) const { return index_ != other.index_; }

   private:
    const HeaderList* list_;
    std::size_t index_, at_;
  };

  void add(std::string_view name, std::string_view value) {
    text_.append(name).append(value);
    sizes_.emplace_back(static_cast<std::uint32_t>(name.size()), static_cast<std::uint32_t>(value.size()));
  }
  void clear() {
    text_.clear();
    sizes_.clear();
  }
  // Clears and gives the memory back (a string moved from an empty one keeps its buffer).
  void release() {
    std::string().swap(text_);
    decltype(sizes_)().swap(sizes_);
  }
  std::size_t size() const { return sizes_.size(); }
  iterator begin() const { return {*this, 0, 0}; }
  iterator end() const { return {*this, sizes_.size(), 0}; }

 private:
  std::string text_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes_;
};

// Whether a writer loop has anything to do after its session took bytes: frames to send, or the
// session is done reading (the loop ends).
bool writer_has_work(nghttp2_session* session) {
  return nghttp2_session_want_write(session) != 0 || nghttp2_session_want_read(session) == 0;
}

// Appends what `session` has to send, up to about kWriteBatch bytes (nghttp2's pointers are valid
// only until its next call, so the bytes are copied); false when nghttp2 failed (logged).
bool collect_output(nghttp2_session* session, std::vector<uint8_t>& out, std::uint64_t conn) {
  while (out.size() < kWriteBatch) {
    const uint8_t* data = nullptr;
    auto n = nghttp2_session_mem_send(session, &data);
    if (n < 0) {
      spdlog::warn("conn {}: h2: {}", conn, nghttp2_strerror(static_cast<int>(n)));
      return false;
    }
    if (n == 0) break;
    out.insert(out.end(), data, data + n);
  }
  return true;
}

// A buffer that grew past a few write batches (a burst of large header lists) gives its memory
// back: a connection keeps no more than that for the rest of its life.
void trim_buffer(std::vector<uint8_t>& buffer) {
  if (buffer.empty() && buffer.capacity() > 4 * kWriteBatch) {
    std::vector<uint8_t>().swap(buffer);
    buffer.reserve(kWriteBatch);
  }
}

// Bytes counted against the HTTP/2 header budgets of a connection and of the process
// (ServerOptions::h2_header_memory_*), given back when set lower, released or destroyed.
class Charge {
 public:
  Charge() = default;
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;
  ~Charge() { set(0); }
  void bind(std::size_t& connection, std::atomic<std::size_t>& total) {
    connection_ = &connection;
    total_ = &total;
  }
  void add(std::size_t n) { set(n_ + n); }
  void release() { set(0); }
  void set(std::size_t n) {
    if (connection_ == nullptr || n == n_) return;
    if (n > n_) {
      *connection_ += n - n_;
      total_->fetch_add(n - n_, std::memory_order_relaxed);
    } else {
      *connection_ -= n_ - n;
      total_->fetch_sub(n_ - n, std::memory_order_relaxed);
    }
    n_ = n;
  }

 private:
  std::size_t n_ = 0;
  std::size_t* connection_ = nullptr;
  std::atomic<std::size_t>* total_ = nullptr;
};

}  // namespace

struct Http2Session::Upstream {
  Upstream(const asio::any_io_executor& executor, asio::ssl::context& tls) : stream(executor, tls), wake(executor) {}
  ~Upstream() {
    if (session) nghttp2_session_del(session);
  }
  Http2Session* conn = nullptr;
  TlsStream stream;
  nghttp2_session* session = nullptr;
  std::map<int32_t, int32_t> to_client;  // upstream stream id -> client stream id
  std::vector<int32_t> waiting;          // client streams waiting for the connection
  // Frames serialized and not yet handed to the socket: upstream_writer takes them all at once.
  // submit_upstream serializes a request here at once, so nghttp2 does not hold a copy of its
  // decompressed header list until the writer runs (see submit_upstream).
  std::vector<uint8_t> out;
  std::size_t in_flight = 0;  // bytes upstream_writer is writing
  Charge charge;              // out + in_flight: requests serialized and not yet written
  asio::steady_timer wake;
  bool write_pending = false;
  bool writer_waiting = false;  // upstream_writer waits on `wake`
  bool ready = false;           // connected, session made: streams can be submitted
  bool done = false;            // ended (or failed): no new streams
  bool http11 = false;          // the upstream negotiated http/1.1 (connect_upstream)
};

struct Http2Session::Stream {
  int32_t id = 0;
  // The request as received.
  std::string method, path, authority, scheme;
  HeaderList headers;  // regular fields, lower-case names
  std::size_t header_bytes = 0;
  // The decoded fields held (these strings and `headers`), and then nghttp2's copy of them, until
  // the upstream HEADERS frame is serialized (`request_serialized`).
  Charge charge;
  bool request_serialized = false;
  bool header_too_large = false;
  bool started = false;        // classified and decided
  bool request_ended = false;  // END_STREAM from the client
  ExchangeCore ex;
  // Request body on its way upstream: bytes received from the client, not yet taken by the
  // upstream session (and not yet consumed towards the client).
  bool forwarding = false;
  std::string up_buf;
  std::shared_ptr<Upstream> up;
  int32_t up_id = 0;
  bool up_closed = false;
  std::chrono::steady_clock::time_point sent;
  // Response from upstream.
  HeaderList resp_headers;
  std::size_t resp_header_bytes = 0;
  bool resp_too_large = false;
  int resp_status = 0;
  bool have_response = false;  // final upstream response header seen
  bool responded = false;      // a response was submitted to the client
  // Response body on its way to the client (relayed or local).
  std::string down_buf;
  std::size_t down_off = 0;
  std::size_t down_unconsumed = 0;  // bytes received from upstream, not yet consumed
  bool down_eof = false;
  bool reset_after_flush = false;
  // Watch filter.
  WatchFilter* filter = nullptr;
  JsonFrameSplitter splitter;
  WatchFilter::End end = WatchFilter::End::none;
  bool watch_counted = false;
  // The fault's effects: the next one to carry out (proceed); the upstream's answer is lost.
  std::size_t next_effect = 0;
  bool discarding = false;

  std::size_t down_size() const { return down_buf.size() - down_off; }
};

Http2Session::Http2Session(std::shared_ptr<TlsConnection> conn)
    : conn_(std::move(conn)),
      server_(conn_->server()),
      options_(conn_->options()),
      client_wake_(conn_->executor()),
      closed_(conn_->executor(), asio::steady_timer::time_point::max()) {
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
  header_since_ = last_activity_;  // the client's preface and SETTINGS are due
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
    if (auto up = weak.lock()) {
      up->done = true;
      boost::system::error_code ec;
      up->stream.socket().close(ec);
      up->wake.cancel();
    }
  }
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& [id, s] : streams) {
    if (s->watch_counted && server_.observer) server_.observer->watch_closed();
    if (s->started) finish_exchange(server_, s->ex, conn_->id());
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
    scan_frames(buf.data(), n);
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
    if (header_since_ && now - *header_since_ > options_.header_timeout) {
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
  Stream* s = self->find(stream_id);
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

// Follows the client's frames on the wire, ahead of nghttp2, for the header timeout: nghttp2 says
// when a header block begins, not when it ends unprocessed (an ignored block) or that a frame of
// one is only partly here.
void Http2Session::scan_frames(const uint8_t* data, std::size_t n) {
  while (n > 0) {
    if (preface_left_ > 0 || payload_left_ > 0) {
      std::size_t& left = preface_left_ > 0 ? preface_left_ : payload_left_;
      const std::size_t k = std::min(n, left);
      const bool payload = preface_left_ == 0;
      left -= k;
      data += k;
      n -= k;
      if (payload && left == 0) {
        first_frame_done_ = true;
        if (header_block_ends_) in_header_block_ = false;
      }
      continue;
    }
    const std::size_t k = std::min(n, frame_head_.size() - frame_head_len_);
    std::memcpy(frame_head_.data() + frame_head_len_, data, k);
    frame_head_len_ += k;
    data += k;
    n -= k;
    if (frame_head_len_ < frame_head_.size()) break;
    frame_head_len_ = 0;
    payload_left_ = (std::size_t{frame_head_[0]} << 16) | (std::size_t{frame_head_[1]} << 8) | frame_head_[2];
    const uint8_t type = frame_head_[3];
    const bool ends = (frame_head_[4] & NGHTTP2_FLAG_END_HEADERS) != 0;
    if (type == NGHTTP2_HEADERS || type == NGHTTP2_PUSH_PROMISE || type == NGHTTP2_CONTINUATION) {
      in_header_block_ = true;
      header_block_ends_ = ends;
    } else {
      in_header_block_ = false;  // (inside a block: a protocol error, nghttp2 ends the connection)
      header_block_ends_ = false;
    }
    if (payload_left_ == 0) {
      first_frame_done_ = true;
      if (header_block_ends_) in_header_block_ = false;
    }
  }
  const bool waiting = !first_frame_done_ || in_header_block_ || frame_head_len_ > 0;
  if (!waiting) header_since_.reset();
  else if (!header_since_) header_since_ = std::chrono::steady_clock::now();
}

// Whether `more` decoded header bytes fit the connection's budget and the process's (of which
// a connection may always use the floor).
bool Http2Session::header_budget_allows(std::size_t more) const {
  const std::size_t connection = charged_ + more;
  if (connection > options_.h2_header_memory_per_connection) return false;
  return connection <= options_.h2_header_memory_floor ||
         server_.h2_header_bytes.load(std::memory_order_relaxed) + more <= options_.h2_header_memory_total;
}

// RST_STREAM REFUSED_STREAM (the client may retry it: nothing of it was processed), counted and
// logged; the stream's fields are dropped and the rest of its header block ignored.
void Http2Session::refuse_stream(int32_t id, bool max_memory) {
  nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
  server_.refused(max_memory ? Server::Impl::Refusal::max_memory : Server::Impl::Refusal::h2_header_memory);
  streams_.erase(id);
  kick_client();
}

void Http2Session::charge_out(Upstream& up) {
  if (up.done) up.charge.release();
  else up.charge.set(up.out.size() + up.in_flight);
}

void Http2Session::kick_client() {
  client_write_pending_ = true;
  if (client_waiting_) client_wake_.cancel();
}

void Http2Session::kick_upstream(Upstream& up) {
  up.write_pending = true;
  if (up.writer_waiting) up.wake.cancel();
}

Http2Session::Stream* Http2Session::find(int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

Http2Session::Stream* Http2Session::find_upstream(Upstream& up, int32_t up_id) {
  auto it = up.to_client.find(up_id);
  return it == up.to_client.end() ? nullptr : find(it->second);
}

// ---------------------------------------------------------------------------------------------
// Client session callbacks. nghttp2 is C: no exception may leave a callback.

#define H2_GUARD_BEGIN try {
#define H2_GUARD_END                         \
  }                                          \
  catch (const std::exception& e) {          \
    spdlog::error("h2 relay: {}", e.what()); \
    return NGHTTP2_ERR_CALLBACK_FAILURE;     \
  }

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
  if (!self->header_budget_allows(1)) {
    self->refuse_stream(frame->hd.stream_id, false);
    return 0;
  }
  auto s = std::make_unique<Stream>();
  s->id = frame->hd.stream_id;
  s->charge.bind(self->charged_, self->server_.h2_header_bytes);
  self->streams_.emplace(s->id, std::move(s));
  H2_GUARD_END
  return 0;
}

int Http2Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                            const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Stream* s = self->find(frame->hd.stream_id);
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
    s->header_too_large = true;
    s->headers.release();
    s->charge.release();
    return 0;
  }
  if (s->header_too_large || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;  // trailers are dropped
  // HPACK: a field indexed once costs a byte per reference, and the lists of a hundred streams
  // arrive in one read before the first has gone upstream.
  const std::size_t cost = namelen + valuelen + 32;
  if (!self->header_budget_allows(cost)) {
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
  Stream* s = self->find(frame->hd.stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (end) s->request_ended = true;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    self->start_stream(*s);
  } else if (end && s->up && s->up_id > 0 && s->up->session) {
    nghttp2_session_resume_data(s->up->session, s->up_id);
    self->kick_upstream(*s->up);
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
  Stream* s = self->find(stream_id);
  H2_GUARD_BEGIN
  if (!s || !s->forwarding) {
    // Nobody takes these bytes (a local answer, a hang, a cut stream): release them at once.
    nghttp2_session_consume(self->client_, stream_id, len);
    if (s) s->ex.record.bytes_in += len;
    return 0;
  }
  s->ex.record.bytes_in += len;
  s->up_buf.append(reinterpret_cast<const char*>(data), len);
  if (s->up && s->up_id > 0 && s->up->session) {
    nghttp2_session_resume_data(s->up->session, s->up_id);
    self->kick_upstream(*s->up);
  }
  H2_GUARD_END
  return 0;
}

int Http2Session::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end()) return 0;
  H2_GUARD_BEGIN
  std::unique_ptr<Stream> s = std::move(it->second);
  self->streams_.erase(it);
  self->last_activity_ = std::chrono::steady_clock::now();
  self->stop_upstream_side(*s);
  self->release_request_bytes(*s);
  if (s->watch_counted && self->server_.observer) self->server_.observer->watch_closed();
  if (s->started) finish_exchange(self->server_, s->ex, self->conn_->id());
  H2_GUARD_END
  return 0;
}

// The client stream is gone: its upstream stream is cancelled and what it held of the upstream
// connection window is given back.
void Http2Session::stop_upstream_side(Stream& s) {
  if (!s.up) return;
  auto& up = *s.up;
  if (s.up_id > 0) up.to_client.erase(s.up_id);
  std::erase(up.waiting, s.id);
  if (up.session && !up.done) {
    if (s.up_id > 0 && !s.up_closed) nghttp2_submit_rst_stream(up.session, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    if (s.down_unconsumed > 0) nghttp2_session_consume_connection(up.session, s.down_unconsumed);
    kick_upstream(up);
  }
  s.down_unconsumed = 0;
  s.up_closed = true;
}

// Request bytes the proxy holds for a stream that will not send them: given back to the client's
// connection window.
void Http2Session::release_request_bytes(Stream& s) {
  if (!s.up_buf.empty()) {
    nghttp2_session_consume_connection(client_, s.up_buf.size());
    s.up_buf.clear();
  }
  s.forwarding = false;
}

// The request header is complete: classify, decide, act.
void Http2Session::start_stream(Stream& s) {
  if (s.started) return;
  s.started = true;
  if (s.header_too_large) {
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
  // Only a forwarded request needs its fields again (submit_upstream); a stream may stay open for
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
void Http2Session::proceed(Stream& s) {
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

bool Http2Session::apply(Stream& s, effect::Answer& e) {
  answer(s, e.response);
  return false;
}

bool Http2Session::apply(Stream& s, effect::CutOff& e) {
  cut_stream(s, e.how == Cut::none ? Cut::close : e.how);
  return false;
}

bool Http2Session::apply(Stream& s, effect::Wait& e) {
  if (e.duration.count() <= 0) return true;
  asio::co_spawn(conn_->executor(), after(shared_from_this(), e.duration, s.id, Timed::proceed), asio::detached);
  return false;
}

// The stream stays open, unanswered; after the limit (if any) it ends with RST_STREAM NO_ERROR.
bool Http2Session::apply(Stream& s, effect::Hold& e) {
  if (e.limit) {
    asio::co_spawn(conn_->executor(), after(shared_from_this(), *e.limit, s.id, Timed::hang_over), asio::detached);
  }
  return false;
}

// Forwarded; upstream_stream_closed goes on with the next effects once the answer ended.
bool Http2Session::apply(Stream& s, effect::DiscardResponse&) {
  s.discarding = true;
  forward(s);
  return false;
}

bool Http2Session::apply(Stream& s, effect::FilterWatch& e) {
  s.ex.watch_filter = std::move(e.filter);
  s.ex.json_upstream = e.json_upstream;
  return true;
}

bool Http2Session::apply(Stream&, effect::EnforceOutage&) {
  server_.enforce_outage();
  return true;
}

// Graceful: this stream is the last one the connection takes, it and those before it go on.
// Abrupt: the connection ends now, with this stream (and every open one) unanswered.
bool Http2Session::apply(Stream& s, effect::EndConnection& e) {
  if (e.graceful) {
    nghttp2_submit_goaway(client_, NGHTTP2_FLAG_NONE, s.id, e.error_code, nullptr, 0);
    return true;
  }
  s.forwarding = false;
  nghttp2_session_terminate_session2(client_, s.id - 2 > 0 ? s.id - 2 : 0, e.error_code);
  kick_client();
  return false;
}

bool Http2Session::apply(Stream&, effect::StallConnection& e) {
  stalled_until_ = std::chrono::steady_clock::now() + e.duration;
  spdlog::info("conn {}: h2: connection stalled for {} ms", conn_->id(), e.duration.count());
  return true;
}

// reset: RST_STREAM INTERNAL_ERROR; close: RST_STREAM NO_ERROR. Only this stream is hit.
void Http2Session::cut_stream(Stream& s, Cut how) {
  reset_stream(s, how == Cut::reset ? NGHTTP2_INTERNAL_ERROR : NGHTTP2_NO_ERROR);
}

void Http2Session::reset_stream(Stream& s, uint32_t error_code) {
  release_request_bytes(s);
  s.headers.release();
  s.charge.release();
  stop_upstream_side(s);
  nghttp2_submit_rst_stream(client_, NGHTTP2_FLAG_NONE, s.id, error_code);
  kick_client();
}

void Http2Session::answer(Stream& s, const faults::HttpResponse& requested) {
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
  s.down_eof = true;
  s.responded = true;
  s.ex.record.status = response.code;
  nghttp2_data_provider provider{};
  provider.read_callback = read_response_body;
  int rv = nghttp2_submit_response(client_, s.id, nva.data(), nva.size(), s.down_buf.empty() ? nullptr : &provider);
  if (rv != 0) spdlog::debug("conn {}: h2: answering stream {}: {}", conn_->id(), s.id, nghttp2_strerror(rv));
  kick_client();
}

// ---------------------------------------------------------------------------------------------
// Upstream.

void Http2Session::forward(Stream& s) {
  if (!upstream_ || upstream_->done) {
    if (server_.upstream_speaks_http11_only()) {
      refuse_for_http11({s.id});
      return;
    }
    upstream_ = std::make_shared<Upstream>(conn_->executor(), server_.upstream_tls_h2);
    upstream_->conn = this;
    upstream_->charge.bind(charged_, server_.h2_header_bytes);
    upstreams_.remove_if([](const std::weak_ptr<Upstream>& w) { return w.expired(); });
    upstreams_.push_back(upstream_);
    asio::co_spawn(conn_->executor(), run_upstream(shared_from_this(), upstream_), asio::detached);
  }
  s.up = upstream_;
  if (upstream_->ready) submit_upstream(s);
  else upstream_->waiting.push_back(s.id);
}

asio::awaitable<void> Http2Session::run_upstream(std::shared_ptr<Http2Session> self, std::shared_ptr<Upstream> up) {
  std::string failure;
  try {
    failure = co_await self->connect_upstream(*up);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (self->closing_) co_return;
  if (!failure.empty()) {
    up->done = true;
    boost::system::error_code ec;
    up->stream.socket().close(ec);
    if (up->http11) {
      auto waiting = std::move(up->waiting);
      self->refuse_for_http11(waiting);
      co_return;
    }
    spdlog::warn("conn {}: upstream {} unreachable ({}); answering 503 to {} HTTP/2 stream(s)", self->conn_->id(),
                 self->options_.upstream.endpoint.to_string(), failure, up->waiting.size());
    auto waiting = std::move(up->waiting);
    const faults::HttpResponse answer = upstream_unreachable_response(self->options_, failure);
    for (auto id : waiting) {
      if (Stream* s = self->find(id)) {
        s->up.reset();
        self->answer(*s, answer);
      }
    }
    co_return;
  }
  up->ready = true;
  auto waiting = std::move(up->waiting);
  for (auto id : waiting) {
    if (Stream* s = self->find(id)) self->submit_upstream(*s);
  }
  try {
    co_await (self->upstream_reader(up) && self->upstream_writer(up));
  } catch (const std::exception& e) {
    spdlog::debug("conn {}: h2 upstream: {}", self->conn_->id(), e.what());
  }
  up->done = true;
  boost::system::error_code ec;
  up->stream.socket().close(ec);
  if (self->closing_) co_return;
  // Streams the upstream connection still carried end as the apiserver left them.
  auto left = up->to_client;
  for (auto& [up_id, client_id] : left) {
    if (Stream* s = self->find(client_id)) self->upstream_stream_closed(*s, NGHTTP2_INTERNAL_ERROR);
  }
  self->kick_client();
}

// The upstream negotiated http/1.1 (it does not speak h2, or no longer): the streams waiting for
// it are refused (RST_STREAM REFUSED_STREAM: not processed, a client may send them again) and the
// connection takes no new ones (GOAWAY): the client sends them on a new connection, which is
// offered http/1.1 (Server::Impl::offer_h2). Streams already relayed on an h2 upstream connection
// go on.
void Http2Session::refuse_for_http11(const std::vector<int32_t>& ids) {
  for (auto id : ids) {
    if (Stream* s = find(id)) {
      s->up.reset();
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

// Returns what failed ("" when the connection is up and speaks h2; Upstream::http11 when it
// negotiated http/1.1).
asio::awaitable<std::string> Http2Session::connect_upstream(Upstream& up) {
  const auto& target = options_.upstream;
  tcp::resolver resolver(conn_->executor());
  // The deadline covers the TCP connect and the TLS handshake together.
  const net::TlsConnectOptions connect{.verify_name = target.endpoint.host,
                                       .verify = !target.tls.insecure_skip_verify,
                                       .timeout = options_.connect_timeout,
                                       .no_delay = true};
  if (auto failure = co_await net::connect_tls(up.stream, resolver, target.endpoint, connect)) {
    co_return failure->message();
  }
  up.stream.expires_never();
  // A connection closed while the handshake ran has no ALPN to read: it says nothing of the
  // upstream's protocols.
  if (closing_ || up.done) co_return "the client connection ended during the TLS handshake";
  auto alpn = net::alpn_selected(up.stream.native_handle());
  server_.upstream_negotiated(alpn);
  if (alpn != "h2") {
    up.http11 = true;
    co_return "the upstream negotiated " + (alpn.empty() ? std::string("no protocol") : alpn) + ", not h2";
  }
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_header_callback(callbacks, up_on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, up_on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, up_on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, up_on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, up_on_frame_send);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_no_auto_window_update(option, 1);
  nghttp2_option_set_max_send_header_block_length(option, options_.header_limit + 64 * 1024);
  int rv = nghttp2_session_client_new2(&up.session, callbacks, &up, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) co_return std::string("nghttp2 client session: ") + nghttp2_strerror(rv);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.h2_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kResponseHeaderLimit)},
  };
  nghttp2_submit_settings(up.session, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  auto window = static_cast<int32_t>(
      std::min<std::uint64_t>(std::uint64_t{options_.h2_max_streams} * options_.h2_stream_window, 0x7fffffff));
  nghttp2_session_set_local_window_size(up.session, NGHTTP2_FLAG_NONE, 0, window);
  co_return std::string();
}

asio::awaitable<void> Http2Session::upstream_reader(std::shared_ptr<Upstream> up) {
  std::array<uint8_t, kReadChunk> buf;
  while (!closing_ && !up->done && nghttp2_session_want_read(up->session)) {
    auto [ec, n] = co_await up->stream.async_read_some(asio::buffer(buf), use_tuple);
    if (ec || closing_) break;
    if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
    if (closing_ || up->done) break;
    auto rv = nghttp2_session_mem_recv(up->session, buf.data(), n);
    if (rv < 0) {
      spdlog::warn("conn {}: h2 upstream: {}", conn_->id(), nghttp2_strerror(static_cast<int>(rv)));
      break;
    }
    if (writer_has_work(up->session)) kick_upstream(*up);
    if (writer_has_work(client_)) kick_client();
  }
  up->done = true;
  kick_upstream(*up);
}

asio::awaitable<void> Http2Session::upstream_writer(std::shared_ptr<Upstream> up) {
  std::vector<uint8_t> out;  // being written; up->out fills meanwhile
  out.reserve(kWriteBatch);
  up->out.reserve(kWriteBatch);
  for (;;) {
    up->write_pending = false;
    out.clear();
    if (closing_) break;
    if (!collect_output(up->session, up->out, conn_->id())) break;
    out.swap(up->out);
    trim_buffer(up->out);
    up->in_flight = out.size();
    charge_out(*up);
    if (!out.empty()) {
      if (conn_->blackholed()) co_await conn_->hold_while_blackholed();
      if (closing_) break;
      auto [ec, n] = co_await net::write_all(up->stream, asio::buffer(out));
      if (closing_) break;
      up->in_flight = 0;
      charge_out(*up);
      if (ec) break;
      out.clear();
      trim_buffer(out);
      // read_request_body woke the client writer for the window it gave back.
      continue;
    }
    if (up->done) break;
    if (!nghttp2_session_want_read(up->session) && !nghttp2_session_want_write(up->session)) break;
    if (up->write_pending) continue;
    up->wake.expires_at(asio::steady_timer::time_point::max());
    up->writer_waiting = true;
    co_await up->wake.async_wait(use_tuple);
    up->writer_waiting = false;
  }
  up->done = true;
  up->charge.release();
  boost::system::error_code ec;
  up->stream.socket().cancel(ec);
}

void Http2Session::submit_upstream(Stream& s) {
  auto& up = *s.up;
  const auto& target = options_.upstream;
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
  bool no_body = s.request_ended && s.up_buf.empty();
  int32_t id =
      nghttp2_submit_request(up.session, nullptr, nva.data(), nva.size(), no_body ? nullptr : &provider, nullptr);
  if (id < 0) {
    s.up.reset();
    const faults::HttpResponse answer_502 =
        bad_gateway_response(options_, std::string("opening an upstream stream: ") + nghttp2_strerror(id));
    answer(s, answer_502);
    return;
  }
  s.up_id = id;
  s.sent = std::chrono::steady_clock::now();
  up.to_client[id] = s.id;
  s.headers.release();  // nghttp2 copied what it sends
  // nghttp2 keeps its copy of the fields until the HEADERS frame is serialized. The writer would do
  // that only after the client's whole read is processed, and one 16 KiB read can open dozens of
  // streams whose header lists decompress to 1 MiB each (indexed fields: a byte each on the
  // wire): serialized now, at most one such copy is held at a time. (A failure is nghttp2's
  // session failing; the writer meets it again, logs it and ends the connection.)
  // Until this stream's HEADERS frame is out (up_on_frame_send), whatever came before it too: the
  // serialized bytes are charged to the connection's header budget until written.
  while (!s.request_serialized) {
    const uint8_t* data = nullptr;
    auto n = nghttp2_session_mem_send(up.session, &data);
    if (n <= 0) break;
    up.out.insert(up.out.end(), data, data + n);
  }
  charge_out(up);
  kick_upstream(up);
}

int Http2Session::up_on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* up = static_cast<Upstream*>(user);
  if (Stream* s = up->conn->find_upstream(*up, frame->hd.stream_id)) {
    s->request_serialized = true;
    s->charge.release();
  }
  return 0;
}

ssize_t Http2Session::read_request_body(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                                        uint32_t* data_flags, nghttp2_data_source*, void* user) {
  auto* up = static_cast<Upstream*>(user);
  auto* self = up->conn;
  Stream* s = self->find_upstream(*up, stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  (void)session;
  std::size_t n = std::min(length, s->up_buf.size());
  if (n > 0) {
    std::memcpy(buf, s->up_buf.data(), n);
    s->up_buf.erase(0, n);
    // Taken by the upstream session: the client may send that much more.
    nghttp2_session_consume(self->client_, s->id, n);
    self->kick_client();
  }
  if (s->up_buf.empty()) {
    if (s->request_ended) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0) return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

int Http2Session::up_on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                               const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* up = static_cast<Upstream*>(user);
  auto* self = up->conn;
  Stream* s = self->find_upstream(*up, frame->hd.stream_id);
  if (!s || s->have_response) return 0;  // trailers are dropped
  H2_GUARD_BEGIN
  s->resp_header_bytes += namelen + valuelen + 32;
  if (s->resp_header_bytes > kResponseHeaderLimit) {
    s->resp_too_large = true;
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

int Http2Session::up_on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* up = static_cast<Upstream*>(user);
  auto* self = up->conn;
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  Stream* s = self->find_upstream(*up, frame->hd.stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (frame->hd.type == NGHTTP2_HEADERS && !s->have_response) {
    if (s->resp_status / 100 == 1 && !s->resp_too_large) {
      // An interim response (100, 103): dropped, the final one follows.
      s->resp_headers.clear();
      s->resp_header_bytes = 0;
      s->resp_status = 0;
      return 0;
    }
    s->have_response = true;
    self->on_upstream_response(*s, end);
  } else if (end && s->have_response && s->end == WatchFilter::End::none) {
    s->down_eof = true;
    if (s->responded) nghttp2_session_resume_data(self->client_, s->id);
    self->kick_client();
  }
  H2_GUARD_END
  return 0;
}

void Http2Session::on_upstream_response(Stream& s, bool end_stream) {
  s.ex.record.upstream_status = s.resp_status;
  s.ex.upstream_latency = std::chrono::steady_clock::now() - s.sent;
  if (s.discarding) return;  // discard_response: the answer is lost (the next effects at its end)
  if (s.resp_too_large) {
    const std::string why = "response header larger than " + std::to_string(kResponseHeaderLimit) + " bytes";
    spdlog::warn("conn {}: upstream {} sent an invalid response ({}); answering 502 to {} {}", conn_->id(),
                 options_.upstream.endpoint.to_string(), why, s.method, path_only(s.path));
    nghttp2_submit_rst_stream(s.up->session, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
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
  s.down_eof = end_stream;
  s.responded = true;
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

int Http2Session::up_on_data_chunk(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data,
                                   size_t len, void* user) {
  auto* up = static_cast<Upstream*>(user);
  auto* self = up->conn;
  Stream* s = self->find_upstream(*up, stream_id);
  H2_GUARD_BEGIN
  if (!s || s->discarding || s->end != WatchFilter::End::none || !s->responded) {
    nghttp2_session_consume(session, stream_id, len);
    return 0;
  }
  s->down_unconsumed += len;
  if (s->filter && s->ex.json_upstream) {
    for (auto& event : s->splitter.feed(view(data, len))) {
      if (s->end == WatchFilter::End::none) self->apply_watch_step(*s, s->filter->on_event(event));
    }
  } else {
    if (s->down_off > 0 && s->down_off >= s->down_buf.size() / 2) {
      s->down_buf.erase(0, s->down_off);
      s->down_off = 0;
    }
    s->down_buf.append(reinterpret_cast<const char*>(data), len);
  }
  nghttp2_session_resume_data(self->client_, s->id);
  self->kick_client();
  H2_GUARD_END
  return 0;
}

void Http2Session::apply_watch_step(Stream& s, WatchFilter::Step step) {
  for (auto& event : step.emit) s.down_buf += event;
  if (step.end == WatchFilter::End::none) return;
  s.end = step.end;
  // The rest of the upstream stream is not relayed.
  if (s.up && s.up->session && !s.up->done) {
    if (s.up_id > 0 && !s.up_closed)
      nghttp2_submit_rst_stream(s.up->session, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    kick_upstream(*s.up);
  }
  if (step.end == WatchFilter::End::clean) s.down_eof = true;
  else s.reset_after_flush = true;
  nghttp2_session_resume_data(client_, s.id);
  kick_client();
}

int Http2Session::up_on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  auto* up = static_cast<Upstream*>(user);
  auto* self = up->conn;
  Stream* s = self->find_upstream(*up, stream_id);
  up->to_client.erase(stream_id);
  if (!s) return 0;
  H2_GUARD_BEGIN
  self->upstream_stream_closed(*s, error_code);
  H2_GUARD_END
  return 0;
}

// The upstream stream ended (END_STREAM, RST_STREAM, GOAWAY, the connection lost).
void Http2Session::upstream_stream_closed(Stream& s, uint32_t error_code) {
  if (s.up_closed) return;
  s.up_closed = true;
  if (s.up) s.up->to_client.erase(s.up_id);
  if (s.end != WatchFilter::End::none) return;  // a watch filter ended the stream already
  if (s.discarding) {
    // discard_response: the request was carried out upstream; the effects after it act now.
    proceed(s);
    return;
  }
  if (s.down_eof && error_code == NGHTTP2_NO_ERROR) return;  // a complete response
  // The apiserver reset the stream, refused it (GOAWAY) or its connection ended: the client sees
  // the same on its stream (a refused stream is retried by HTTP/2 clients).
  if (!s.responded && error_code == NGHTTP2_NO_ERROR) {
    answer(s, bad_gateway_response(options_, "the upstream stream ended without a response"));
    return;
  }
  const uint32_t code = error_code == NGHTTP2_NO_ERROR ? uint32_t{NGHTTP2_INTERNAL_ERROR} : error_code;
  reset_stream(s, code);
}

void Http2Session::consume_upstream(Stream& s, std::size_t n) {
  if (n == 0) return;
  s.down_unconsumed -= n;
  if (s.up && s.up->session && !s.up->done) {
    // A closed stream only gives back the connection window.
    nghttp2_session_consume(s.up->session, s.up_id, n);
    kick_upstream(*s.up);
  }
}

// A response DATA frame's payload goes from the stream's buffer straight into the client
// writer's output (NGHTTP2_DATA_FLAG_NO_COPY, then send_response_body), not through a copy in
// nghttp2's frame buffer first. The bytes leave down_buf only there: between the two callbacks the
// writer may be waiting for a socket write while the upstream reader appends to down_buf.
ssize_t Http2Session::read_response_body(nghttp2_session*, int32_t stream_id, uint8_t*, size_t length,
                                         uint32_t* data_flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Stream* s = self->find(stream_id);
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
    if (s->down_eof) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0 && s->reset_after_flush) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR
    else if (n == 0) return NGHTTP2_ERR_DEFERRED;
  }
  if (n > 0) *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  return static_cast<ssize_t>(n);
}

int Http2Session::send_response_body(nghttp2_session*, nghttp2_frame* frame, const uint8_t* framehd, size_t length,
                                     nghttp2_data_source*, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  Stream* s = self->find(frame->hd.stream_id);
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
