#include "raw_h2_client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <stdexcept>

namespace faultline::testing {
namespace {

constexpr auto nv = &RawH2Client::nv;

// The header fields of a GET (nghttp2 copies them when the request is submitted).
std::vector<nghttp2_nv> get_fields(const std::string& authority, const std::string& path,
                                   const RawH2Client::Fields& extra) {
  std::vector<nghttp2_nv> nva = {nv(":method", "GET"), nv(":scheme", "https"), nv(":authority", authority),
                                 nv(":path", path)};
  for (const auto& [name, value] : extra) nva.push_back(nv(name, value));
  return nva;
}

}  // namespace

nghttp2_nv RawH2Client::nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

RawH2Client::RawH2Client(const std::string& host_port, Options options) : options_(options) {
  std::signal(SIGPIPE, SIG_IGN);  // the server may close while this client still writes
  auto colon = host_port.rfind(':');
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host_port.substr(0, colon).c_str(), host_port.substr(colon + 1).c_str(), &hints, &found) != 0)
    throw std::runtime_error("resolving " + host_port);
  fd_ = socket(found->ai_family, SOCK_STREAM, 0);
  int rc = connect(fd_, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  // The destructor does not run when the constructor throws: what is made so far goes first.
  auto fail = [this](const std::string& what) {
    SSL_free(ssl_);
    ssl_ = nullptr;
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    close(fd_);
    fd_ = -1;
    throw std::runtime_error(what);
  };
  if (rc != 0) fail("connecting to " + host_port);
  // A server that stops reading makes a write fail after 20 s instead of hanging the test.
  timeval send_limit{20, 0};
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
  ctx_ = SSL_CTX_new(TLS_client_method());
  static const unsigned char alpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx_, alpn, sizeof alpn);
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  if (SSL_connect(ssl_) != 1) fail("TLS handshake with " + host_port);
  const unsigned char* chosen = nullptr;
  unsigned chosen_len = 0;
  SSL_get0_alpn_selected(ssl_, &chosen, &chosen_len);
  if (std::string(reinterpret_cast<const char*>(chosen), chosen_len) != "h2") fail("the server did not negotiate h2");
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_frame_recv_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
        auto* self = static_cast<RawH2Client*>(user);
        if (frame->hd.type == NGHTTP2_GOAWAY) {
          if (!self->goaway) self->goaway = frame->goaway.error_code;  // the first says why
          self->goaways += " " + std::to_string(frame->goaway.error_code);
        }
        if (frame->hd.type == NGHTTP2_RST_STREAM) {
          ++self->resets[frame->rst_stream.error_code];
          self->streams[frame->hd.stream_id].reset = frame->rst_stream.error_code;
        }
        if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_RESPONSE) ++self->responses;
        if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK)) ++self->pings;
        return 0;
      });
  nghttp2_session_callbacks_set_on_header_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                    const uint8_t* value, size_t valuelen, uint8_t, void* user) {
        auto* self = static_cast<RawH2Client*>(user);
        if (std::string_view(reinterpret_cast<const char*>(name), namelen) == ":status")
          self->streams[frame->hd.stream_id].status =
              std::stoi(std::string(reinterpret_cast<const char*>(value), valuelen));
        return 0;
      });
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
      callbacks, [](nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t*, size_t len, void* user) {
        auto* self = static_cast<RawH2Client*>(user);
        self->streams[stream_id].body += len;
        if (self->options_.manual_windows) {
          if (self->held_.contains(stream_id)) nghttp2_session_consume_connection(session, len);
          else nghttp2_session_consume(session, stream_id, len);
        }
        return 0;
      });
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                         [](nghttp2_session*, int32_t stream_id, uint32_t, void* user) {
                                                           auto* self = static_cast<RawH2Client*>(user);
                                                           ++self->closed;
                                                           self->streams[stream_id].closed = true;
                                                           return 0;
                                                         });
  // nghttp2 holds a client to 100 streams until the peer's SETTINGS say otherwise; this one
  // must be able to go past the server's limit.
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  nghttp2_option_set_peer_max_concurrent_streams(option, 100000);
  if (options_.manual_windows) nghttp2_option_set_no_auto_window_update(option, 1);
  // A header list of any size may be sent (the server's limit is what is tested).
  nghttp2_option_set_max_send_header_block_length(option, 1 << 30);
  nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  if (options_.connection_window > 0)
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, options_.connection_window);
  flush();
}

RawH2Client::~RawH2Client() {
  if (inflater_) nghttp2_hd_inflate_del(inflater_);
  nghttp2_session_del(session_);
  SSL_free(ssl_);
  SSL_CTX_free(ctx_);
  close(fd_);
}

std::int32_t RawH2Client::get(const std::string& authority, const std::string& path, const Fields& extra) {
  auto nva = get_fields(authority, path, extra);
  int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
  if (id < 0) throw std::runtime_error(std::string("submitting a request: ") + nghttp2_strerror(id));
  streams[id];
  flush();
  return id;
}

void RawH2Client::cancel(std::int32_t stream) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream, NGHTTP2_CANCEL);
  flush();
}

bool RawH2Client::write_raw(std::string_view bytes) {
  while (writable_ && !bytes.empty()) {
    int n = SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 20)));
    if (n <= 0) writable_ = false;
    else bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return writable_;
}

int RawH2Client::rapid_reset(const std::string& authority, const std::string& path, int pairs) {
  const auto nva = get_fields(authority, path, {});
  int taken = 0;
  while (taken < pairs && open_ && writable_ && !goaway) {
    int batch = 0;
    for (; batch < 50 && taken + batch < pairs; ++batch) {
      int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
      flush();  // the HEADERS leave before the RST_STREAM is submitted
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
      flush();
    }
    int acked = pings;
    nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
    flush();
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (pings == acked && open_ && !goaway && std::chrono::steady_clock::now() < until) read_for(100);
    if (pings == acked) break;
    taken += batch;
  }
  return taken;
}

void RawH2Client::open_at_once(const std::string& authority, const std::string& path, int count) {
  const auto nva = get_fields(authority, path, {});
  for (int i = 0; i < count; ++i) nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
  flush();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (open_ && closed < count && std::chrono::steady_clock::now() < until) read_for(1000);
}

void RawH2Client::read_for(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (open_) {
    if (SSL_pending(ssl_) == 0) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count());
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, std::max(left, 0)) <= 0) return;
    }
    unsigned char buf[16384];
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) {
      open_ = false;
      return;
    }
    if (options_.frames_only) {
      count_frames(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(n)) < 0) open_ = false;
    flush();
  }
}

void RawH2Client::count_frames(const unsigned char* data, std::size_t n) {
  inbound_.append(reinterpret_cast<const char*>(data), n);
  std::size_t at = 0;
  auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(inbound_[at + i])); };
  auto u32 = [&](std::size_t i) { return (byte(i) << 24) | (byte(i + 1) << 16) | (byte(i + 2) << 8) | byte(i + 3); };
  while (inbound_.size() - at >= 9) {
    std::size_t length = (byte(0) << 16) | (byte(1) << 8) | byte(2);
    if (inbound_.size() - at < 9 + length) break;
    auto type = static_cast<std::uint8_t>(byte(3));
    const auto flags = byte(4);
    const auto id = static_cast<std::int32_t>(u32(5) & 0x7fffffff);
    ++frames_received[type];
    if (type == NGHTTP2_GOAWAY && length >= 8) {
      std::uint32_t code = u32(13);
      if (!goaway) goaway = code;
      goaways += " " + std::to_string(code);
    }
    if (type == NGHTTP2_RST_STREAM && length >= 4) {
      ++resets[u32(9)];
      streams[id].reset = u32(9);
      if (!streams[id].closed) ++closed;
      streams[id].closed = true;
    }
    if (type == NGHTTP2_HEADERS || type == NGHTTP2_CONTINUATION) {
      // The block, unpadded and without priority, decoded once whole: the :status.
      std::size_t from = 9, to = 9 + length;
      if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_PADDED) && length > 0) {
        const std::size_t pad = byte(9);
        from = 10;
        to = pad < length ? to - pad : from;
      }
      if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_PRIORITY)) from += 5;
      if (from < to) header_block_.append(inbound_, at + from, to - from);
      if (flags & NGHTTP2_FLAG_END_HEADERS) {
        decode_status(id);
        header_block_.clear();
      }
    }
    if (type == NGHTTP2_DATA) streams[id].body += length;
    if ((type == NGHTTP2_HEADERS || type == NGHTTP2_DATA) && (flags & NGHTTP2_FLAG_END_STREAM)) {
      if (!streams[id].closed) ++closed;
      streams[id].closed = true;
    }
    at += 9 + length;
  }
  inbound_.erase(0, at);
}

void RawH2Client::decode_status(std::int32_t id) {
  if (!inflater_ && nghttp2_hd_inflate_new(&inflater_) != 0) return;
  auto* in = reinterpret_cast<uint8_t*>(header_block_.data());
  std::size_t left = header_block_.size();
  for (;;) {
    nghttp2_nv nv{};
    int flags = 0;
    auto n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (n < 0) return;
    in += n;
    left -= static_cast<std::size_t>(n);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
      if (name == ":status") {
        streams[id].status = std::stoi(std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
        ++responses;
      }
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(inflater_);
      return;
    }
    if (n == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) return;  // no progress
  }
}

void RawH2Client::release(std::int32_t stream) {
  held_.erase(stream);
  nghttp2_session_consume_stream(session_, stream, streams[stream].body);
  flush();
}

void RawH2Client::flush() {
  for (;;) {
    const uint8_t* data = nullptr;
    auto n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) return;
    if (writable_ && SSL_write(ssl_, data, static_cast<int>(n)) <= 0) writable_ = false;
  }
}

}  // namespace faultline::testing
