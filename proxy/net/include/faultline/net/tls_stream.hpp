#pragma once
// The proxy's TLS connection (client side and upstream side, HTTP/1.1 and HTTP/2): OpenSSL writes
// the TCP socket's descriptor itself (non-blocking; a write that would block waits for
// writability and tries again) and reads from the stream's receive buffer, which Asio's
// async_receive fills when OpenSSL wants more: a receive that has to wait needs no epoll_ctl,
// where async_wait re-arms the descriptor with one every time (measured: 2.0 of the 8.7 system
// calls per HTTP/2 pod GET were those epoll_ctl calls). asio::ssl::stream instead moves every byte
// through a memory BIO pair, and each step of its engine is one more composed operation on the
// socket below; under callgrind that was most of the proxy's Asio and a good part of its libc time
// on small requests.
//
// One deadline per stream, as beast::tcp_stream has (expires_after / expires_at / expires_never):
// an operation still waiting when it passes fails with beast::error::timeout and the socket is
// closed. Setting the deadline only stores it; one timer per stream enforces it, re-armed only
// when it wakes early, so a request costs no timer operation.
//
// It is an AsyncReadStream and AsyncWriteStream (Beast's HTTP reads and writes, asio::async_write)
// and has no lower layer: beast::get_lowest_layer(stream) is the stream itself. At most one read
// and one write may be in flight at a time, all on the stream's executor. Writes of several small
// buffers (a header and a body piece) are gathered into one TLS record.

#include <openssl/ssl.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "faultline/net/async.hpp"

namespace faultline::net {

class TlsStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using socket_type = boost::asio::ip::tcp::socket;
  using clock = std::chrono::steady_clock;

  // An accepted connection (server side of the handshake).
  TlsStream(socket_type socket, boost::asio::ssl::context& ctx);
  // A connection still to be made with async_connect (client side).
  TlsStream(const executor_type& executor, boost::asio::ssl::context& ctx);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  socket_type& socket() { return socket_; }
  SSL* native_handle() { return ssl_; }

  void expires_after(clock::duration d) { expires_at(clock::now() + d); }
  void expires_at(clock::time_point t);
  void expires_never() { expires_at(clock::time_point::max()); }

  // Completion: void(error_code, tcp::endpoint), under the deadline.
  template <class Endpoints, class Token>
  auto async_connect(const Endpoints& endpoints, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code, boost::asio::ip::tcp::endpoint)>(
        [this, endpoints, started = false](auto& self, boost::system::error_code ec = {},
                                           boost::asio::ip::tcp::endpoint ep = {}) mutable {
          if (!started) {
            started = true;
            begin_wait();
            boost::asio::async_connect(socket_, endpoints, std::move(self));
            return;
          }
          ec = end_wait(ec);
          self.complete(ec, ep);
        },
        token, socket_);
  }

  // Completion: void(error_code).
  template <class Token>
  auto async_handshake(boost::asio::ssl::stream_base::handshake_type type, Token&& token) {
    start_handshake(type);
    return run<false>(Kind::handshake, nullptr, 0, std::forward<Token>(token));
  }
  // Sends close_notify and waits for the peer's (bounded by the deadline). Completion: void(error_code).
  template <class Token>
  auto async_shutdown(Token&& token) {
    return run<false>(Kind::shutdown, nullptr, 0, std::forward<Token>(token));
  }

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    boost::asio::mutable_buffer first;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      if (boost::asio::mutable_buffer b(*it); b.size() > 0) {
        first = b;
        break;
      }
    }
    return run<true>(Kind::read, first.data(), first.size(), std::forward<Token>(token));
  }

  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    auto [data, size] = gather(buffers);
    return run<true>(Kind::write, const_cast<void*>(data), size, std::forward<Token>(token));
  }

  // Writes as much of `buffers` as the socket takes now, without waiting: the bytes written. It
  // stops short when the socket is full (`ec` clear: the rest goes with async_write, which must
  // be given the same bytes next) or on a failure (`ec` set). No write may be in flight.
  template <class ConstBufferSequence>
  std::size_t write_now(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
    ec = {};
    boost::beast::buffers_suffix<ConstBufferSequence> rest(buffers);
    std::size_t total = 0;
    for (;;) {
      auto [data, size] = gather(rest);
      if (size == 0) return total;
      std::size_t n = 0;
      if (perform(Kind::write, const_cast<void*>(data), size, n, ec) != Want::nothing) return total;
      total += n;
      if (ec || n < size) return total;
      rest.consume(n);
    }
  }

 private:
  enum class Kind { read, write, handshake, shutdown };
  enum class Want { nothing, read, write };
  struct Deadline;
  struct Bio;  // the BIO methods (tls_stream.cpp)

  // One attempt of the OpenSSL call: done (ec and n set), or the readiness it waits for.
  Want perform(Kind kind, void* data, std::size_t size, std::size_t& n, boost::system::error_code& ec);
  void start_handshake(boost::asio::ssl::stream_base::handshake_type type);
  // Bookkeeping of a wait for readiness (or a connect): the deadline timer runs while one is
  // pending; end_wait turns the wake-up of a timed-out wait into beast::error::timeout.
  void begin_wait();
  boost::system::error_code end_wait(const boost::system::error_code& ec);
  // The receive buffer: what async_receive brought and OpenSSL has not read yet.
  static constexpr std::size_t kReceive = 32 * 1024;
  boost::asio::mutable_buffer receive_space();
  // A receive completed: its bytes (or end of file, or failure) are for OpenSSL's next read, and
  // an operation waiting for them (filled_) tries again. False when it was cancelled (the socket
  // closed, a timeout): the operation ends with that error.
  bool received(const boost::system::error_code& ec, std::size_t n);

  // The bytes one write sends: the first buffer when it fills a record by itself (or is the only
  // one), else the buffers copied together up to one record.
  static constexpr std::size_t kRecord = 16 * 1024;
  template <class ConstBufferSequence>
  std::pair<const void*, std::size_t> gather(const ConstBufferSequence& buffers) {
    auto begin = boost::asio::buffer_sequence_begin(buffers);
    auto end = boost::asio::buffer_sequence_end(buffers);
    while (begin != end && boost::asio::const_buffer(*begin).size() == 0) ++begin;
    if (begin == end) return {nullptr, 0};
    boost::asio::const_buffer first(*begin);
    auto next = begin;
    ++next;
    if (first.size() >= kRecord || next == end) return {first.data(), first.size()};
    gathered_.clear();
    for (auto it = begin; it != end && gathered_.size() < kRecord; ++it) {
      boost::asio::const_buffer b(*it);
      std::size_t take = std::min(b.size(), kRecord - gathered_.size());
      const auto* p = static_cast<const char*>(b.data());
      gathered_.insert(gathered_.end(), p, p + take);
    }
    return {gathered_.data(), gathered_.size()};
  }

  // Reads and writes complete with (error_code, bytes), the handshake and shutdown with (error_code).
  template <bool WithSize, class Token>
  auto run(Kind kind, void* data, std::size_t size, Token&& token) {
    using Signature =
        std::conditional_t<WithSize, void(boost::system::error_code, std::size_t), void(boost::system::error_code)>;
    return boost::asio::async_compose<Token, Signature>(Op<WithSize>{this, kind, data, size}, token, socket_);
  }

  template <bool WithSize>
  struct Op {
    TlsStream* s;
    Kind kind;
    void* data;
    std::size_t size;
    enum class Phase { start, waiting, receiving, waiting_fill, retry, posted } phase = Phase::start;
    boost::system::error_code result{};
    std::size_t transferred = 0;

    template <class Self>
    void operator()(Self& self, boost::system::error_code wait_ec = {}) {
      if (phase == Phase::posted) return finish(self);
      if (phase == Phase::waiting) {
        wait_ec = s->end_wait(wait_ec);
        if (wait_ec) {
          result = wait_ec;
          return finish(self);
        }
      }
      // Woken by the other operation's receive (the timer's cancel) or by a timeout (the socket
      // is closed then, and perform reports it).
      if (phase == Phase::waiting_fill) {
        wait_ec = s->end_wait(s->receive_cancelled_ ? boost::system::error_code(boost::asio::error::operation_aborted)
                                                    : boost::system::error_code());
        // The receive it waited for was cancelled (socket().cancel(), a close): so is this.
        if (wait_ec) {
          result = wait_ec;
          return finish(self);
        }
      }
      Want want = (kind == Kind::read || kind == Kind::write) && size == 0
                      ? Want::nothing
                      : s->perform(kind, data, size, transferred, result);
      if (want == Want::nothing) {
        if (phase == Phase::start) {
          // Never complete inside the initiating call: the caller's handler runs from the executor.
          phase = Phase::posted;
          boost::asio::post(s->socket_.get_executor(), std::move(self));
          return;
        }
        return finish(self);
      }
      s->begin_wait();
      if (want == Want::write) {
        phase = Phase::waiting;
        s->socket_.async_wait(socket_type::wait_write, std::move(self));
      } else if (!s->receiving_) {
        // OpenSSL read all there was: receive more (at most one receive in flight per stream).
        phase = Phase::receiving;
        s->receiving_ = true;
        s->socket_.async_receive(s->receive_space(), std::move(self));
      } else {
        // The other operation (a read beside a write that wants to read) is receiving: wait for
        // its bytes.
        phase = Phase::waiting_fill;
        s->filled_.expires_at(clock::time_point::max());
        s->filled_.async_wait(std::move(self));
      }
    }

    // A receive completed.
    template <class Self>
    void operator()(Self& self, boost::system::error_code ec, std::size_t n) {
      bool ok = s->received(ec, n);
      ec = s->end_wait(ec);
      if (!ok) {
        result = ec;
        return finish(self);
      }
      phase = Phase::retry;
      (*this)(self);
    }

    template <class Self>
    void finish(Self& self) {
      if constexpr (WithSize) self.complete(result, transferred);
      else self.complete(result);
    }
  };

  // Before socket_: a receive the reactor performs writes here until the socket is closed.
  std::unique_ptr<char[]> receive_buf_;
  std::size_t receive_pos_ = 0, receive_end_ = 0;
  boost::system::error_code receive_error_;  // eof or a failure, for OpenSSL's next read
  bool receiving_ = false;
  bool receive_cancelled_ = false;  // the last receive ended with operation_aborted
  socket_type socket_;
  boost::asio::steady_timer filled_;  // never expires; cancelled when a receive completes
  SSL* ssl_ = nullptr;
  std::shared_ptr<Deadline> deadline_;
  std::vector<char> gathered_;
};

// asio::async_write(stream, buffers) that starts no operation while the socket takes the bytes at
// once, as it does for most writes of a request or a response: only the rest, when the socket is
// full, waits in async_write (under the stream's deadline). A composed write completes through a
// posted handler; under callgrind that (the operation, the post, the coroutine's resumption from
// the scheduler) was about 4k instructions per write, two writes per HTTP/1.1 pod GET. Completes
// with (error, bytes written) as `co_await asio::async_write(stream, buffers, use_tuple)` does.
template <class ConstBufferSequence>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write_all(TlsStream& stream,
                                                                                     ConstBufferSequence buffers) {
  boost::system::error_code ec;
  const std::size_t n = stream.write_now(buffers, ec);
  if (ec || n == boost::asio::buffer_size(buffers)) co_return std::tuple(ec, n);
  boost::beast::buffers_suffix<ConstBufferSequence> rest(buffers);
  rest.consume(n);
  auto [wec, m] = co_await boost::asio::async_write(stream, rest, use_tuple);
  co_return std::tuple(wec, n + m);
}

}  // namespace faultline::net
