#pragma once
// HTTP/2 on one client connection (ALPN chose h2), with nghttp2 on both sides: this session is the
// server towards the client, and each upstream TLS connection negotiated as h2 has a client
// session (http2_upstream.hpp), so the apiserver sees the protocol the client chose (an upstream
// that negotiates http/1.1 instead: the stream is refused and the client reconnects over
// HTTP/1.1, upstream_alpn.cpp). Each client stream (http2_stream.hpp) maps to one upstream stream
// and goes through the same classify/decide/audit code as an HTTP/1.1 request (exchange.hpp);
// fault actions act on the one stream (RST_STREAM) or on the connection (GOAWAY, stall, outage).
//
// Flow control runs end to end: neither session updates its receive windows by itself
// (NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE); bytes received on one side are consumed (WINDOW_UPDATE)
// only once the other side's session has taken them. So a stream holds at most one window of
// bytes per direction in the proxy, a slow reader gets backpressure up to its sender, and one
// stalled stream does not stop the others (the connection windows are streams x stream window).
//
// Everything runs on the session's strand: a read loop and a write loop per side, driven by
// nghttp2_session_mem_recv / nghttp2_session_mem_send (towards the client: http2_client_io.hpp),
// and small timer coroutines for delays. This class holds the streams and carries out the effects
// of faults; the responses' way back to the client is http2_response.hpp.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "exchange.hpp"
#include "faultline/proxy/watch_stream.hpp"
#include "http2_client_io.hpp"
#include "http2_response.hpp"
#include "http2_stream.hpp"
#include "http2_upstream.hpp"
#include "http2_wire.hpp"

namespace faultline::proxy {

class TlsConnection;

class Http2Session final : public std::enable_shared_from_this<Http2Session>, public Http2Upstream::Listener {
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

 private:
  enum class Timed { proceed, hang_over, watch_deadline, watch_due };

  // nghttp2 server session callbacks.
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                       void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static ssize_t read_response_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*,
                                    void*);
  static int send_response_body(nghttp2_session*, nghttp2_frame*, const uint8_t*, size_t, nghttp2_data_source*, void*);

  // Http2Upstream::Listener: what the upstream connections report.
  Http2Stream* stream(int32_t id) override { return find(id); }
  bool closing() const override { return io_.closing(); }
  void connect_failed(const std::vector<int32_t>& waiting, const std::string& failure, bool http11) override;
  void submit_failed(Http2Stream& s, const std::string& why) override;
  void request_body_taken(Http2Stream& s, std::size_t n) override;
  void response_header(Http2Stream& s, bool end_stream) override;
  bool response_data(Http2Stream& s, std::string_view data) override;
  void response_ended(Http2Stream& s) override { responses_.ended(s); }
  void upstream_closed(Http2Stream& s, uint32_t error_code) override;
  void upstream_input() override;
  void upstream_ended() override { kick_client(); }

  static boost::asio::awaitable<void> after(std::shared_ptr<Http2Session> self, std::chrono::milliseconds delay,
                                            int32_t stream_id, Timed what);
  // stale-read: learns the current resourceVersion for `rules`, then goes on with the stream.
  static boost::asio::awaitable<void> record_then_proceed(std::shared_ptr<Http2Session> self, int32_t stream_id,
                                                          std::vector<int> rules,
                                                          std::optional<std::string> authorization);

  Http2Stream* find(int32_t id);
  // A watch filter that holds events back (watch-delay, watch-coalesce): what is due goes out now,
  // and a timer wakes the stream at the next due time.
  void release_due_events(Http2Stream& s);
  void start_stream(Http2Stream& s, bool header_too_large);
  void proceed(Http2Stream& s);
  // The effects of a fault (effects.hpp), each carried out here once, on the one stream or on the
  // connection. True: go on with the next; false: the effect ended the request or continues it
  // later (after a wait, once a discarded answer ended: proceed).
  bool apply(Http2Stream& s, effect::Answer& e);
  bool apply(Http2Stream& s, effect::CutOff& e);
  bool apply(Http2Stream& s, effect::Wait& e);
  bool apply(Http2Stream& s, effect::Hold& e);
  bool apply(Http2Stream& s, effect::DiscardResponse& e);
  bool apply(Http2Stream& s, effect::FilterWatch& e);
  bool apply(Http2Stream& s, effect::EnforceOutage& e);
  bool apply(Http2Stream& s, effect::EndConnection& e);
  bool apply(Http2Stream& s, effect::StallConnection& e);
  bool apply(Http2Stream& s, effect::Gate& e);
  static boost::asio::awaitable<void> held(std::shared_ptr<Http2Session> self, int32_t stream_id,
                                           std::shared_ptr<GateTicket> ticket);
  // The stream ends while held in a batch (the client reset it, the connection went): it leaves.
  static void leave_batch(Http2Stream& s, std::uint64_t conn);
  bool apply(Http2Stream& s, effect::RecordResourceVersion& e);
  bool apply(Http2Stream& s, effect::ReadAsOf& e);
  void forward(Http2Stream& s);
  void refuse_for_http11(const std::vector<int32_t>& ids);
  static boost::asio::awaitable<void> goaway_for_http11(std::shared_ptr<Http2Session> self);
  void answer(Http2Stream& s, const faults::HttpResponse& response);
  void reset_stream(Http2Stream& s, uint32_t error_code);
  void cut_stream(Http2Stream& s, Cut how);
  void release_request_bytes(Http2Stream& s);
  void stop_upstream_side(Http2Stream& s);
  void drop_upstream(Http2Stream& s);
  void kick_client() { io_.kick(); }
  void refuse_stream(int32_t id, bool max_memory);
  void close_all();

  std::shared_ptr<TlsConnection> conn_;
  Server::Impl& server_;
  const ServerOptions& options_;
  nghttp2_session* client_ = nullptr;
  // Before the streams and upstreams, which give their part back when destroyed.
  Http2HeaderBudget budget_;
  std::map<int32_t, std::unique_ptr<Http2Stream>> streams_;  // by client stream id
  std::shared_ptr<Http2Upstream> upstream_;                  // the connection new streams go to
  std::list<std::weak_ptr<Http2Upstream>> upstreams_;        // every upstream connection still running
  Http2ClientIo io_;                                         // the client connection's loops and timers
  Http2ResponseRelay responses_;
  bool refused_for_http11_ = false;  // GOAWAY sent: the upstream negotiated http/1.1
};

}  // namespace faultline::proxy
