#pragma once
// One upstream TLS connection of an HTTP/2 client connection, negotiated as h2: an nghttp2 client
// session on it, its reader and writer loops, the client streams it carries (one upstream stream
// each), the request bodies it forwards. What comes back (response headers and body, the end of a
// stream) goes to the client-facing session (http2_session.hpp) through Http2Upstream::Listener.
// Flow control runs end to end: a request body's bytes are consumed towards the client only once
// this session took them (Listener::request_body_taken), a response's once the client session took
// them (Http2Upstream::consume).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "faultline/net/tls_stream.hpp"
#include "http2_stream.hpp"

namespace faultline::proxy {

class TlsConnection;

class Http2Upstream {
 public:
  // What the upstream connection needs of the client-facing session. On the session's strand.
  class Listener {
   public:
    // The client stream `id`, or null when it is gone.
    virtual Http2Stream* stream(int32_t id) = 0;
    // The client connection is ending: stop.
    virtual bool closing() const = 0;
    // The connection failed (`failure`; `http11`: it negotiated http/1.1) before the streams in
    // `waiting` could go on it.
    virtual void connect_failed(const std::vector<int32_t>& waiting, const std::string& failure, bool http11) = 0;
    // nghttp2 refused to open the stream's upstream stream.
    virtual void submit_failed(Http2Stream& s, const std::string& why) = 0;
    // The upstream session took n bytes of the stream's request body (Http2Stream::up_buf).
    virtual void request_body_taken(Http2Stream& s, std::size_t n) = 0;
    // The upstream's final response header (in Http2Stream::resp_*); end_stream: no body follows.
    virtual void response_header(Http2Stream& s, bool end_stream) = 0;
    // Response body bytes; false: not taken (they are given back at once).
    virtual bool response_data(Http2Stream& s, std::string_view data) = 0;
    // The response body ended (END_STREAM after the header).
    virtual void response_ended(Http2Stream& s) = 0;
    // The upstream stream ended (END_STREAM, RST_STREAM, GOAWAY, the connection lost).
    virtual void upstream_closed(Http2Stream& s, uint32_t error_code) = 0;
    // The upstream's input was processed (frames for the client may be due), or the connection
    // ended.
    virtual void upstream_input() = 0;
    virtual void upstream_ended() = 0;

   protected:
    ~Listener() = default;
  };

  Http2Upstream(std::shared_ptr<TlsConnection> conn, Listener& listener, Http2HeaderBudget& budget);
  ~Http2Upstream();
  Http2Upstream(const Http2Upstream&) = delete;
  Http2Upstream& operator=(const Http2Upstream&) = delete;

  // Connects, then runs the connection until it ends; `owner` (the listener) is kept alive.
  static boost::asio::awaitable<void> run(std::shared_ptr<Http2Upstream> self, std::shared_ptr<Listener> owner);

  // Ended (or failed): takes no new streams.
  bool ended() const { return done_; }
  // Sends the stream's request (Http2UpstreamState::waiting) once the connection is up.
  void add(Http2Stream& s);
  // More of the stream's request body is here, or it ended.
  void resume_request(Http2Stream& s);
  // The client session took n response bytes of the stream: the upstream may send that much more.
  void consume(Http2Stream& s, std::size_t n);
  // RST_STREAM CANCEL on the stream's upstream stream, whatever its state.
  void reset(Http2Stream& s);
  // The rest of the stream's response is not wanted: RST_STREAM CANCEL if it is open.
  void cancel(Http2Stream& s);
  // The client stream is gone: its upstream stream is cancelled and what it held of the
  // connection window is given back.
  void detach(Http2Stream& s);
  // The client connection ended: close now.
  void close();

 private:
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                       void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static ssize_t read_request_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);

  boost::asio::awaitable<std::string> connect();
  boost::asio::awaitable<void> reader();
  boost::asio::awaitable<void> writer();
  void submit(Http2Stream& s);
  Http2Stream* find(int32_t up_id);
  void charge_out();
  void kick();

  std::shared_ptr<TlsConnection> conn_;
  Listener& listener_;
  net::TlsStream stream_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, int32_t> to_client_;  // upstream stream id -> client stream id
  std::vector<int32_t> waiting_;          // client streams waiting for the connection
  // Frames serialized and not yet handed to the socket: the writer takes them all at once.
  // submit() serializes a request here at once, so nghttp2 does not hold a copy of its
  // decompressed header list until the writer runs (see submit).
  std::vector<uint8_t> out_;
  std::size_t in_flight_ = 0;         // bytes the writer is writing
  Http2HeaderBudget::Charge charge_;  // out_ + in_flight_: requests serialized and not yet written
  boost::asio::steady_timer wake_;
  bool write_pending_ = false;
  bool writer_waiting_ = false;  // the writer waits on wake_
  bool ready_ = false;           // connected, session made: streams can be submitted
  bool done_ = false;            // ended (or failed): no new streams
  bool http11_ = false;          // the upstream negotiated http/1.1 (connect)
};

}  // namespace faultline::proxy
