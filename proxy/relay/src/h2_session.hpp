#pragma once
// HTTP/2 on one client connection (ALPN chose h2), with nghttp2 on both sides: a server session
// towards the client and a client session on an upstream TLS connection negotiated as h2, so the
// apiserver sees the protocol the client chose (an upstream that negotiates http/1.1 instead: the
// stream is refused and the client reconnects over HTTP/1.1, upstream_alpn.cpp). Each client
// stream maps to one upstream stream and goes through the same classify/decide/audit code as an
// HTTP/1.1 request (exchange.hpp); fault actions act on the one stream (RST_STREAM) or on the
// connection (GOAWAY, stall, outage).
//
// Flow control runs end to end: neither session updates its receive windows by itself
// (NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE); bytes received on one side are consumed (WINDOW_UPDATE)
// only once the other side's session has taken them. So a stream holds at most one window of
// bytes per direction in the proxy, a slow reader gets backpressure up to its sender, and one
// stalled stream does not stop the others (the connection windows are streams x stream window).
//
// Everything runs on the session's strand: a read loop and a write loop per side, driven by
// nghttp2_session_mem_recv / nghttp2_session_mem_send, and small timer coroutines for delays.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "exchange.hpp"
#include "faultline/proxy/watch_stream.hpp"

namespace faultline::proxy {

class TlsConnection;

class Http2Session : public std::enable_shared_from_this<Http2Session> {
 public:
  explicit Http2Session(std::shared_ptr<TlsConnection> conn);
  ~Http2Session();
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  // Serves the connection until it ends (the client went away, GOAWAY, a cut).
  static boost::asio::awaitable<void> run(std::shared_ptr<Http2Session> self);
  // The session cut the client connection (reset, outage): stop everything now.
  void cut();
  // Graceful stop: GOAWAY, watch streams are cut, other streams in flight finish.
  void drain();

  struct Stream;
  struct Upstream;

 private:
  enum class Timed { proceed, hang_over, watch_deadline };

  // Client (server-side nghttp2 session) callbacks.
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                       void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static int up_on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static ssize_t read_response_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*,
                                    void*);
  static int send_response_body(nghttp2_session*, nghttp2_frame*, const uint8_t*, size_t, nghttp2_data_source*, void*);
  // Upstream (client-side nghttp2 session) callbacks.
  static int up_on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t,
                          uint8_t, void*);
  static int up_on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int up_on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int up_on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static ssize_t read_request_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);

  boost::asio::awaitable<void> client_reader();
  boost::asio::awaitable<void> client_writer();
  boost::asio::awaitable<void> watchdog();
  static boost::asio::awaitable<void> run_upstream(std::shared_ptr<Http2Session> self, std::shared_ptr<Upstream> up);
  boost::asio::awaitable<std::string> connect_upstream(Upstream& up);
  boost::asio::awaitable<void> upstream_reader(std::shared_ptr<Upstream> up);
  boost::asio::awaitable<void> upstream_writer(std::shared_ptr<Upstream> up);
  static boost::asio::awaitable<void> after(std::shared_ptr<Http2Session> self, std::chrono::milliseconds delay,
                                            int32_t stream_id, Timed what);
  boost::asio::awaitable<void> hold_while_stalled();
  boost::asio::awaitable<void> nap(std::chrono::milliseconds d);

  Stream* find(int32_t id);
  Stream* find_upstream(Upstream& up, int32_t up_id);
  void start_stream(Stream& s);
  void proceed(Stream& s);
  // The effects of a fault (effects.hpp), each carried out here once, on the one stream or on the
  // connection. True: go on with the next; false: the effect ended the request or continues it
  // later (after a wait, once a discarded answer ended: proceed).
  bool apply(Stream& s, effect::Answer& e);
  bool apply(Stream& s, effect::CutOff& e);
  bool apply(Stream& s, effect::Wait& e);
  bool apply(Stream& s, effect::Hold& e);
  bool apply(Stream& s, effect::DiscardResponse& e);
  bool apply(Stream& s, effect::FilterWatch& e);
  bool apply(Stream& s, effect::EnforceOutage& e);
  bool apply(Stream& s, effect::EndConnection& e);
  bool apply(Stream& s, effect::StallConnection& e);
  void forward(Stream& s);
  void refuse_for_http11(const std::vector<int32_t>& ids);
  static boost::asio::awaitable<void> goaway_for_http11(std::shared_ptr<Http2Session> self);
  void submit_upstream(Stream& s);
  void on_upstream_response(Stream& s, bool end_stream);
  void upstream_stream_closed(Stream& s, uint32_t error_code);
  void apply_watch_step(Stream& s, WatchFilter::Step step);
  void answer(Stream& s, const faults::HttpResponse& response);
  void reset_stream(Stream& s, uint32_t error_code);
  void cut_stream(Stream& s, Cut how);
  void consume_upstream(Stream& s, std::size_t n);
  void release_request_bytes(Stream& s);
  void stop_upstream_side(Stream& s);
  void kick_client();
  bool header_budget_allows(std::size_t more) const;
  void refuse_stream(int32_t id, bool max_memory);
  void charge_out(Upstream& up);
  void scan_frames(const uint8_t* data, std::size_t n);
  void kick_upstream(Upstream& up);
  void close_all();

  std::shared_ptr<TlsConnection> conn_;
  Server::Impl& server_;
  const ServerOptions& options_;
  nghttp2_session* client_ = nullptr;
  // Decoded request header bytes of this connection's streams not yet sent upstream, and the
  // serialized requests not yet written (ServerOptions::h2_header_memory_per_connection). Before
  // the streams and upstreams, which give their part back when destroyed.
  std::size_t charged_ = 0;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;  // by client stream id
  std::shared_ptr<Upstream> upstream_;                  // the connection new streams go to
  std::list<std::weak_ptr<Upstream>> upstreams_;        // every upstream connection still running
  boost::asio::steady_timer client_wake_;
  boost::asio::steady_timer closed_;  // never expires; cancelled when the connection ends
  std::vector<uint8_t> client_out_;   // what client_writer sends next
  bool client_write_pending_ = false;
  bool client_waiting_ = false;  // client_writer waits on client_wake_
  bool reading_done_ = false;
  bool header_flood_ = false;  // a header list past four times the limit ended the input
  bool closing_ = false;
  bool refused_for_http11_ = false;  // GOAWAY sent: the upstream negotiated http/1.1
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_started_;
  std::chrono::steady_clock::time_point last_activity_;
  std::chrono::steady_clock::time_point stalled_until_;
  bool settings_patched_ = false;
  // The header timeout (scan_frames): since when the client's preface and first SETTINGS, or a
  // header block (HEADERS or PUSH_PROMISE to the end of the frame carrying END_HEADERS), are on
  // their way; unset when none is.
  std::optional<std::chrono::steady_clock::time_point> header_since_;
  bool header_timed_out_ = false;
  std::size_t preface_left_ = 24;
  bool first_frame_done_ = false;
  std::array<uint8_t, 9> frame_head_{};
  std::size_t frame_head_len_ = 0;
  std::size_t payload_left_ = 0;
  bool in_header_block_ = false;
  bool header_block_ends_ = false;  // the current frame carries END_HEADERS
};

}  // namespace faultline::proxy
