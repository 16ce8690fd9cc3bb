#pragma once
// The bytes of an HTTP/2 client connection: the read and write loops that drive the client-facing
// nghttp2 session (http2_session.hpp) with nghttp2_session_mem_recv / nghttp2_session_mem_send,
// and what bounds them over time: the watchdog (idle connections, the header timeout, writes the
// client does not take), a `stall`, the end of the connection. On the connection's strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "http2_wire.hpp"

namespace faultline::proxy {

class TlsConnection;

class Http2ClientIo {
 public:
  // `idle`: whether the connection has no streams (the idle timeout runs).
  Http2ClientIo(TlsConnection& conn, std::function<bool()> idle);
  ~Http2ClientIo();
  Http2ClientIo(const Http2ClientIo&) = delete;
  Http2ClientIo& operator=(const Http2ClientIo&) = delete;

  // Makes the server session the loops drive, with the proxy's bounds and SETTINGS: its callbacks
  // get `user`. Throws when nghttp2 fails.
  nghttp2_session* open(nghttp2_session_callbacks* callbacks, void* user);
  boost::asio::awaitable<void> reader();
  boost::asio::awaitable<void> writer();
  // Runs until the connection ends; `owner` is kept alive meanwhile.
  boost::asio::awaitable<void> watchdog(std::shared_ptr<void> owner);
  // Sleeps `d`, or until the connection ends.
  boost::asio::awaitable<void> nap(std::chrono::milliseconds d);

  // The connection is ending: the loops stop, naps end.
  bool closing() const { return closing_; }
  void close();
  // The session has frames to send.
  void kick() {
    write_pending_ = true;
    if (waiting_) wake_.cancel();
  }
  // What the writer sends next: the session's DATA frames go here (send_response_body).
  std::vector<uint8_t>& out() { return out_; }
  // Sends and reads nothing for `d` (so PINGs go unanswered).
  void stall(std::chrono::milliseconds d) { stalled_until_ = std::chrono::steady_clock::now() + d; }
  // A header list past four times the limit ended the input: the GOAWAY says so.
  void header_flood() { header_flood_ = true; }
  // A stream ended: the idle timeout counts from now.
  void activity() { last_activity_ = std::chrono::steady_clock::now(); }

 private:
  boost::asio::awaitable<void> hold_while_stalled();

  TlsConnection& conn_;
  std::function<bool()> idle_;
  nghttp2_session* session_ = nullptr;
  boost::asio::steady_timer wake_;
  boost::asio::steady_timer closed_;    // never expires; cancelled when the connection ends
  std::array<uint8_t, kReadChunk> in_;  // what the reader reads into
  std::vector<uint8_t> out_;
  bool write_pending_ = false;
  bool waiting_ = false;  // the writer waits on wake_
  bool reading_done_ = false;
  bool header_flood_ = false;
  bool closing_ = false;
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_started_;
  std::chrono::steady_clock::time_point last_activity_;
  std::chrono::steady_clock::time_point stalled_until_;
  bool settings_patched_ = false;
  // The header timeout: since when a header block (or the preface) is on its way.
  Http2HeaderClock header_clock_;
  bool header_timed_out_ = false;
};

}  // namespace faultline::proxy
