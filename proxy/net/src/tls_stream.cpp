#include "faultline/net/tls_stream.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>

#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#include "openssl_ptr.hpp"

namespace faultline::net {
namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// As asio::ssl::stream reports them: a clean close_notify is eof, a connection that ended without
// one is stream_truncated, other failures carry OpenSSL's error code.
error_code ssl_failure(int ssl_error) {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (ssl_error == SSL_ERROR_ZERO_RETURN) return asio::error::eof;
  if (ssl_error == SSL_ERROR_SYSCALL && code == 0) {
    if (errno != 0 && errno != EAGAIN) return {errno, boost::system::system_category()};
    return asio::ssl::error::stream_truncated;
  }
  if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return asio::ssl::error::stream_truncated;
  if (code == 0) return asio::ssl::error::unspecified_system_error;
  return {static_cast<int>(code), asio::error::get_ssl_category()};
}

// Repeats a successful SSL_read_ex / SSL_write_ex on the rest of the buffer while it makes
// progress without blocking. A read goes on only while OpenSSL or the receive buffer holds bytes
// already received. A failure here is not reported: the bytes so far complete the
// operation, and the next call meets the same condition again (OpenSSL keeps a fatal state, the
// socket its end-of-file) and reports it.
void go_on(SSL* ssl, bool reading, void* data, std::size_t size, std::size_t& n) {
  auto* bytes = static_cast<char*>(data);
  while (n < size) {
    std::size_t m = 0;
    int r = 0;
    if (reading) {
      if (!SSL_has_pending(ssl) && BIO_ctrl_pending(SSL_get_rbio(ssl)) == 0) break;
      r = SSL_read_ex(ssl, bytes + n, size - n, &m);
    } else {
      r = SSL_write_ex(ssl, bytes + n, size - n, &m);
    }
    if (r != 1) {
      if (ERR_peek_error() != 0) ERR_clear_error();
      break;
    }
    n += m;
  }
}

}  // namespace

// A BIO on the socket's descriptor. OpenSSL's own socket BIO writes with write(2), which raises
// SIGPIPE on a connection the peer reset; this one sends with MSG_NOSIGNAL, as Asio does. Reads
// take the stream's receive buffer (filled by Asio's async_receive); an empty buffer asks for a
// retry, and the operation receives more. The descriptor is never closed by the BIO: the socket
// object owns it.
struct TlsStream::Bio {
  static TlsStream& of(BIO* bio) { return *static_cast<TlsStream*>(BIO_get_data(bio)); }

  static int write(BIO* bio, const char* data, int len) {
    BIO_clear_retry_flags(bio);
    ssize_t n = ::send(of(bio).socket_.native_handle(), data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(bio);
      return -1;
    }
    return static_cast<int>(n);
  }

  static int read(BIO* bio, char* data, int len) {
    BIO_clear_retry_flags(bio);
    TlsStream& s = of(bio);
    std::size_t have = s.receive_end_ - s.receive_pos_;
    if (have > 0) {
      std::size_t n = std::min(have, static_cast<std::size_t>(len));
      std::memcpy(data, s.receive_buf_.get() + s.receive_pos_, n);
      s.receive_pos_ += n;
      return static_cast<int>(n);
    }
    if (s.receive_error_ == asio::error::eof) {
      BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // lets OpenSSL tell a truncated stream
      return 0;
    }
    if (s.receive_error_) {
      errno = s.receive_error_.value();
      return -1;
    }
    BIO_set_retry_read(bio);
    return -1;
  }

  static long ctrl(BIO* bio, int cmd, long, void*) {
    switch (cmd) {
      case BIO_CTRL_FLUSH:
        return 1;
      case BIO_CTRL_EOF:
        return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0;
      case BIO_CTRL_PENDING:
        return static_cast<long>(of(bio).receive_end_ - of(bio).receive_pos_);
      default:
        return 0;
    }
  }

  static int create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
  }

  static const BIO_METHOD* method() {
    static const BIO_METHOD* method = [] {
      BIO_METHOD* m =
          BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "faultline socket");
      detail::check(m != nullptr, "making the socket BIO method");
      BIO_meth_set_write(m, write);
      BIO_meth_set_read(m, read);
      BIO_meth_set_ctrl(m, ctrl);
      BIO_meth_set_create(m, create);
      return m;
    }();
    return method;
  }
};

asio::mutable_buffer TlsStream::receive_space() {
  if (!receive_buf_) receive_buf_ = std::make_unique<char[]>(kReceive);
  receive_pos_ = receive_end_ = 0;
  receive_cancelled_ = false;
  return {receive_buf_.get(), kReceive};
}

bool TlsStream::received(const error_code& ec, std::size_t n) {
  receiving_ = false;
  filled_.cancel();
  if (ec == asio::error::operation_aborted || !socket_.is_open()) {
    receive_cancelled_ = true;
    return false;
  }
  receive_end_ = n;
  if (ec) receive_error_ = ec;
  return true;
}

// Shared with the timer's handler, which may run after the stream is gone.
struct TlsStream::Deadline : std::enable_shared_from_this<Deadline> {
  explicit Deadline(const executor_type& executor) : timer(executor) {}
  asio::steady_timer timer;
  clock::time_point at = clock::time_point::max();     // the deadline
  clock::time_point armed = clock::time_point::max();  // what the timer waits for (max: not waiting)
  TlsStream* stream = nullptr;                         // null once the stream is gone
  int waiting = 0;                                     // operations waiting for readiness
  bool timed_out = false;

  void arm() {
    if (at == clock::time_point::max() || armed <= at) return;  // an earlier wake-up re-checks
    armed = at;
    timer.expires_at(at);
    timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec == asio::error::operation_aborted) return;  // re-armed or destroyed
      self->armed = clock::time_point::max();
      self->fired();
    });
  }

  void fired() {
    if (!stream || waiting == 0) return;  // the next wait arms it again
    if (clock::now() < at) return arm();  // moved later meanwhile
    timed_out = true;
    error_code ec;
    stream->socket_.close(ec);  // the waiting operations wake with operation_aborted
    stream->filled_.cancel();
  }
};

TlsStream::TlsStream(socket_type socket, asio::ssl::context& ctx)
    : socket_(std::move(socket)), filled_(socket_.get_executor()) {
  ssl_ = SSL_new(ctx.native_handle());
  if (!ssl_) throw std::bad_alloc();
  deadline_ = std::make_shared<Deadline>(socket_.get_executor());
  deadline_->stream = this;
}

TlsStream::TlsStream(const executor_type& executor, asio::ssl::context& ctx) : TlsStream(socket_type(executor), ctx) {}

TlsStream::~TlsStream() {
  deadline_->stream = nullptr;
  deadline_->timer.cancel();
  SSL_free(ssl_);
}

void TlsStream::expires_at(clock::time_point t) {
  deadline_->at = t;
  if (deadline_->waiting > 0) deadline_->arm();
}

void TlsStream::begin_wait() {
  ++deadline_->waiting;
  deadline_->arm();
}

error_code TlsStream::end_wait(const error_code& ec) {
  --deadline_->waiting;
  if (ec && deadline_->timed_out) return boost::beast::error::timeout;
  return ec;
}

void TlsStream::start_handshake(asio::ssl::stream_base::handshake_type type) {
  if (SSL_get_rbio(ssl_) == nullptr && socket_.is_open()) {
    error_code ec;
    socket_.non_blocking(true, ec);
    BIO* bio = BIO_new(Bio::method());
    if (!bio) throw std::bad_alloc();
    BIO_set_data(bio, this);
    SSL_set_bio(ssl_, bio, bio);
    // Partial writes: a write completes with the records that went out. Release buffers: an idle
    // connection holds no record buffers (as asio::ssl::stream sets it). Read ahead: one recv
    // takes what is there instead of a record header and its body apart.
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_set_read_ahead(ssl_, 1);
  }
  if (type == asio::ssl::stream_base::client) SSL_set_connect_state(ssl_);
  else SSL_set_accept_state(ssl_);
}

TlsStream::Want TlsStream::perform(Kind kind, void* data, std::size_t size, std::size_t& n, error_code& ec) {
  n = 0;
  // A socket closed under the stream (a cut, a timeout): its descriptor number may belong to
  // another connection by now, so OpenSSL must not touch it again.
  if (!socket_.is_open() || SSL_get_rbio(ssl_) == nullptr) {
    ec = deadline_->timed_out ? error_code(boost::beast::error::timeout) : error_code(asio::error::bad_descriptor);
    return Want::nothing;
  }
  // ssl_failure() empties the error queue after every failure, so it is empty here unless some
  // other OpenSSL caller left an entry; ERR_clear_error walks all its slots on every call.
  if (ERR_peek_error() != 0) ERR_clear_error();
  errno = 0;
  int r = 0;
  switch (kind) {
    case Kind::read:
      r = SSL_read_ex(ssl_, data, size, &n);
      // SSL_read_ex returns one record at most: take the records already read ahead too, so
      // that a reader gets what is there in one operation (one completion, one pass of its
      // parser) instead of one per 16 KiB record.
      if (r == 1) go_on(ssl_, true, data, size, n);
      break;
    case Kind::write:
      r = SSL_write_ex(ssl_, data, size, &n);
      // With partial writes enabled SSL_write_ex may stop after one record: write on while the
      // socket takes it, rather than completing (and being called again) once per record.
      if (r == 1) go_on(ssl_, false, data, size, n);
      break;
    case Kind::handshake:
      r = SSL_do_handshake(ssl_);
      break;
    case Kind::shutdown:
      r = SSL_shutdown(ssl_);
      if (r == 0) r = SSL_shutdown(ssl_);  // ours is sent; now wait for the peer's
      break;
  }
  if (r == 1) {
    ec = {};
    return Want::nothing;
  }
  int err = SSL_get_error(ssl_, r);
  if (err == SSL_ERROR_WANT_READ) return Want::read;
  if (err == SSL_ERROR_WANT_WRITE) return Want::write;
  n = 0;
  ec = ssl_failure(err);
  return Want::nothing;
}

}  // namespace faultline::net
