#pragma once
// A raw HTTP/2 client (nghttp2 over a blocking OpenSSL connection, ALPN h2) for what
// well-behaved clients never do: the rapid-reset attack (CVE-2023-44487), more streams than the
// server advertised, header lists that decompress to far more than they weigh (an HPACK bomb:
// nghttp2's own deflater indexes a repeated field once and then refers to it by index), raw
// frames (a CONTINUATION flood), and streams whose DATA it never acknowledges (no WINDOW_UPDATE)
// while the others on the connection go on.

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline::testing {

class RawH2Client {
 public:
  struct Options {
    // Windows are given back by this client itself: DATA of every stream is acknowledged at once
    // (WINDOW_UPDATE), except on held streams (hold()), whose bytes only return the connection
    // window. Without it nghttp2 acknowledges everything by itself.
    bool manual_windows = false;
    // The connection receive window announced (0: the protocol's 65,535).
    std::int32_t connection_window = 0;
    // The server's frames are only split and counted (frames_received, goaway; and per stream:
    // the :status, DATA bytes, END_STREAM and RST_STREAM codes), not given to
    // nghttp2: for a caller that writes raw frames of streams this client's session never opened
    // (its session would take the answers to them for a protocol error and stop reading). Only
    // the preface and the session's SETTINGS are sent by the session; get() and the others that
    // submit to it are not for this mode.
    bool frames_only = false;
  };
  using Fields = std::vector<std::pair<std::string, std::string>>;
  // A header field pointing at `name` and `value` (which must outlive its use).
  static nghttp2_nv nv(std::string_view name, std::string_view value);

  explicit RawH2Client(const std::string& host_port) : RawH2Client(host_port, Options{}) {}
  RawH2Client(const std::string& host_port, Options options);
  ~RawH2Client();
  RawH2Client(const RawH2Client&) = delete;
  RawH2Client& operator=(const RawH2Client&) = delete;

  // A GET of `path` with `extra` header fields after the pseudo-headers, sent now; its stream id.
  std::int32_t get(const std::string& authority, const std::string& path, const Fields& extra = {});
  // The stream's DATA is never acknowledged: the server may send one stream window, then must wait.
  void hold(std::int32_t stream) { held_.insert(stream); }
  // A held stream is no longer: what it received is acknowledged (WINDOW_UPDATE) now.
  void release(std::int32_t stream);
  // RST_STREAM CANCEL on `stream`, sent now.
  void cancel(std::int32_t stream);
  // Bytes written to the connection as they are (frames the caller built); false once writes fail.
  bool write_raw(std::string_view bytes);

  // HEADERS (a GET of `path`) and RST_STREAM CANCEL right after it, `pairs` times, in batches of
  // 50, each followed by a PING whose ACK says the server has read the batch; stops when the
  // connection ends (GOAWAY, close, no ACK in 10 s). Returns the pairs the server took.
  int rapid_reset(const std::string& authority, const std::string& path, int pairs);
  // `streams` GETs of `path` sent at once, before the server's SETTINGS are read (so this client
  // does not hold them back to the advertised limit); then reads until every stream is closed.
  void open_at_once(const std::string& authority, const std::string& path, int streams);
  // Reads what the server sends for up to `ms` milliseconds (0: what is there now), until it closes.
  void read_for(int ms);
  // Reads until `done()` or the connection ends or `limit` passes; returns done().
  template <class Pred>
  bool read_until(Pred done, std::chrono::seconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!done() && open_ && std::chrono::steady_clock::now() < until) read_for(100);
    return done();
  }

  bool open() const { return open_; }  // the server has not closed the connection

  struct Stream {
    int status = 0;                      // :status of the response (0: none)
    std::uint64_t body = 0;              // DATA payload bytes received
    bool closed = false;                 // the stream ended (either way)
    std::optional<std::uint32_t> reset;  // error code of an RST_STREAM received
  };
  std::map<std::int32_t, Stream> streams;  // by stream id

  std::optional<std::uint32_t> goaway;          // the error code of the first GOAWAY received
  std::string goaways;                          // the error codes of all of them
  std::map<std::uint32_t, int> resets;          // RST_STREAM frames received, by error code
  int responses = 0;                            // response HEADERS received
  int closed = 0;                               // streams closed
  int pings = 0;                                // PING ACKs received
  std::map<std::uint8_t, int> frames_received;  // frames_only: frames received, by type

 private:
  void flush();
  // frames_only: splits what was read into frames and counts them.
  void count_frames(const unsigned char* data, std::size_t n);
  void decode_status(std::int32_t stream);

  Options options_;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  nghttp2_session* session_ = nullptr;
  std::set<std::int32_t> held_;
  bool open_ = true;                         // the server has not closed (what it sent is still to be read)
  bool writable_ = true;                     // writes still go through
  std::string inbound_;                      // frames_only: bytes of a frame not read whole yet
  std::string header_block_;                 // frames_only: the header block being received
  nghttp2_hd_inflater* inflater_ = nullptr;  // frames_only: the server's HPACK state
};

}  // namespace faultline::testing
