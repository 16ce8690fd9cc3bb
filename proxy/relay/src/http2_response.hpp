#pragma once
// What goes back to the client on the streams of an HTTP/2 connection, through the client-facing
// nghttp2 session (http2_session.hpp): local answers, the upstream's responses relayed (a watch
// filter may rewrite their body), and their bodies' way out. A response DATA frame's payload goes
// from the stream's buffer straight into the client writer's output (NGHTTP2_DATA_FLAG_NO_COPY,
// then send_body), and what the client took is given back to the upstream's window
// (Http2Upstream::consume): flow control runs end to end.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nghttp2/nghttp2.h>

#include "faultline/proxy/watch_stream.hpp"
#include "http2_stream.hpp"

namespace faultline::proxy {

class TlsConnection;
class Http2ClientIo;

class Http2ResponseRelay {
 public:
  // `body_source`: the data source callback of the session's responses (it calls read_body).
  Http2ResponseRelay(TlsConnection& conn, Http2ClientIo& io, nghttp2_data_source_read_callback body_source)
      : conn_(conn), io_(io), read_body_(body_source) {}
  Http2ResponseRelay(const Http2ResponseRelay&) = delete;
  Http2ResponseRelay& operator=(const Http2ResponseRelay&) = delete;

  // The client-facing nghttp2 session; before any response.
  void serve(nghttp2_session* client) { client_ = client; }
  // A local response (the request's final one: final_local_response).
  void answer(Http2Stream& s, const faults::HttpResponse& response);
  // The upstream's final response header (Http2Stream::resp_*), relayed; end_stream: no body.
  void relay(Http2Stream& s, bool end_stream);
  // Response body bytes from upstream; false: not taken (a discarded or ended response).
  bool data(Http2Stream& s, std::string_view bytes);
  // The upstream's response body ended.
  void ended(Http2Stream& s);
  // What a watch filter made of the body: events to send, maybe the end of the response.
  void watch_step(Http2Stream& s, WatchFilter::Step step);
  // nghttp2's callbacks for the stream's response body: how much is ready (a data source read),
  // and its DATA frame written to the client writer's output.
  ssize_t read_body(Http2Stream& s, size_t length, uint32_t* data_flags);
  int send_body(Http2Stream& s, const nghttp2_frame& frame, const uint8_t* framehd, size_t length);

 private:
  void consume_upstream(Http2Stream& s, std::size_t n);

  TlsConnection& conn_;
  Http2ClientIo& io_;
  nghttp2_data_source_read_callback read_body_;
  nghttp2_session* client_ = nullptr;
};

}  // namespace faultline::proxy
