#pragma once
// The client side of an HTTP/1.1 session: the client's TLS stream, its bounded read buffer, the
// relay buffers and the phase the session is in (which decides what a graceful stop does). The
// session, its upstream connection (http1_upstream.hpp) and the response relay (http1_relay.hpp)
// read and write the client through it.

#include <boost/beast/core/flat_buffer.hpp>

#include <cstddef>

#include "faultline/net/tls_stream.hpp"
#include "relay_buffer.hpp"

namespace faultline::proxy {

class Http1Client {
 public:
  // idle: between requests; busy: a request in flight; streaming: a watch, a tunnel or a hang.
  enum class Phase { idle, busy, streaming };

  // Room for the largest request header plus one relay buffer. Beast bounds a request header
  // (header_limit) but not a chunk-size line or a trailer section: without this bound, a client
  // sending one endless chunk line grew the buffer by every byte of it.
  Http1Client(net::TlsStream& tls, std::size_t header_limit, std::size_t relay_buffer)
      : stream(tls), buffer(header_limit + relay_buffer), relay_buffer_(relay_buffer) {}

  net::TlsStream& stream;
  boost::beast::flat_buffer buffer;
  Phase phase = Phase::idle;

  // The relay buffers exist only while a request or a tunnel uses them: an idle connection (or
  // one still in its TLS handshake) holds none of them.
  // Request body (or tunnel) bytes on their way upstream.
  RelayBuffer& up_chunk() {
    if (up_chunk_.empty()) up_chunk_.resize(relay_buffer_);
    return up_chunk_;
  }
  // Tunnel bytes on their way to the client (response bodies go out from the upstream's buffer).
  RelayBuffer& down_chunk() {
    if (down_chunk_.empty()) down_chunk_.resize(relay_buffer_);
    return down_chunk_;
  }
  // Beast reads into a flat_buffer only as much as its free capacity (at least 512 bytes): without
  // room reserved, a 100 MB body crossed the proxy in 512-byte reads and 512-byte TLS records.
  void reserve_reads() {
    if (buffer.capacity() < relay_buffer_) buffer.reserve(relay_buffer_);
  }
  void release_idle_buffers() {
    RelayBuffer().swap(up_chunk_);
    RelayBuffer().swap(down_chunk_);
    if (buffer.size() == 0) buffer.shrink_to_fit();  // bytes of a pipelined request stay
  }

 private:
  std::size_t relay_buffer_;
  RelayBuffer up_chunk_;
  RelayBuffer down_chunk_;
};

}  // namespace faultline::proxy
