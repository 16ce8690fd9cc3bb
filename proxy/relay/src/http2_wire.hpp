#pragma once
// What both HTTP/2 sides of the relay (http2_session.hpp towards the client, http2_upstream.hpp
// towards the apiserver) share about nghttp2 and the wire: batch sizes, header field views, how a
// writer loop collects nghttp2's output, the SETTINGS patch of the client session's first frame,
// and the frame scanner behind the header timeout.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

namespace faultline::proxy {

// Largest upstream response header list (as for HTTP/1.1: kube-apiserver's are a few hundred
// bytes, its Warning headers are capped at 4 KiB in total).
inline constexpr std::size_t kResponseHeaderLimit = 16 * 1024;
// Bytes collected from nghttp2 before one socket write, and read from a socket at once.
inline constexpr std::size_t kWriteBatch = 64 * 1024;
inline constexpr std::size_t kReadChunk = 16 * 1024;

inline std::string_view view(const uint8_t* data, size_t len) { return {reinterpret_cast<const char*>(data), len}; }

inline nghttp2_nv make_nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

// Whether a writer loop has anything to do after its session took bytes: frames to send, or the
// session is done reading (the loop ends).
bool writer_has_work(nghttp2_session* session);

// Appends what `session` has to send, up to about kWriteBatch bytes (nghttp2's pointers are valid
// only until its next call, so the bytes are copied); false when nghttp2 failed (logged).
bool collect_output(nghttp2_session* session, std::vector<uint8_t>& out, std::uint64_t conn);

// A buffer that grew past a few write batches (a burst of large header lists) gives its memory
// back: a connection keeps no more than that for the rest of its life.
void trim_buffer(std::vector<uint8_t>& buffer);

// What nghttp2 enforces for the client's streams: the advertised limit and as many again (see the
// Http2Session constructor).
uint32_t max_streams_with_slack(uint32_t advertised);

// Rewrites SETTINGS_MAX_CONCURRENT_STREAMS in the server's first SETTINGS frame, the first bytes
// nghttp2 sends (its first entry: id 0x3, then the value); false when `out` does not start so.
bool patch_max_streams(std::vector<uint8_t>& out, uint32_t advertised);

// Follows the client's frames on the wire, ahead of nghttp2, for the header timeout: nghttp2 says
// when a header block begins, not when it ends unprocessed (an ignored block) or that a frame of
// one is only partly here. Knows since when the client's preface and first SETTINGS, or a header
// block (HEADERS or PUSH_PROMISE to the end of the frame carrying END_HEADERS), are on their way.
class Http2HeaderClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  explicit Http2HeaderClock(time_point start) : since_(start) {}  // the preface is due
  void scan(const uint8_t* data, std::size_t n);
  // Unset when no header is on its way.
  const std::optional<time_point>& since() const { return since_; }

 private:
  std::optional<time_point> since_;
  std::size_t preface_left_ = 24;
  bool first_frame_done_ = false;
  std::array<uint8_t, 9> frame_head_{};
  std::size_t frame_head_len_ = 0;
  std::size_t payload_left_ = 0;
  bool in_header_block_ = false;
  bool header_block_ends_ = false;  // the current frame carries END_HEADERS
};

}  // namespace faultline::proxy

// nghttp2 is C: no exception may leave a callback.
#define H2_GUARD_BEGIN try {
#define H2_GUARD_END                         \
  }                                          \
  catch (const std::exception& e) {          \
    spdlog::error("h2 relay: {}", e.what()); \
    return NGHTTP2_ERR_CALLBACK_FAILURE;     \
  }
