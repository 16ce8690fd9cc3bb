// nghttp2 and wire helpers of the HTTP/2 relay (see http2_wire.hpp).
#include "http2_wire.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace faultline::proxy {

bool writer_has_work(nghttp2_session* session) {
  return nghttp2_session_want_write(session) != 0 || nghttp2_session_want_read(session) == 0;
}

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

void trim_buffer(std::vector<uint8_t>& buffer) {
  if (buffer.empty() && buffer.capacity() > 4 * kWriteBatch) {
    std::vector<uint8_t>().swap(buffer);
    buffer.reserve(kWriteBatch);
  }
}

uint32_t max_streams_with_slack(uint32_t advertised) {
  return static_cast<uint32_t>(std::min<std::uint64_t>(std::uint64_t{advertised} * 2, 0x7fffffff));
}

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

void Http2HeaderClock::scan(const uint8_t* data, std::size_t n) {
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
  if (!waiting) since_.reset();
  else if (!since_) since_ = std::chrono::steady_clock::now();
}

}  // namespace faultline::proxy
