#pragma once
// HTTP/1.1 on one client connection (connection.hpp; ALPN chose http/1.1, or none): requests one
// after another (keep-alive), each classified, decided by the engine and carried out, forwarded
// over a kept-alive upstream connection. Everything runs on the connection's strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exchange.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/net/async.hpp"
#include "faultline/net/tls_stream.hpp"
#include "faultline/proxy/effects.hpp"
#include "faultline/proxy/observer.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = net::TlsStream;

// Beast stores a header field's name and value lengths in 16 bits and throws std::length_error
// (from inside the read operation, where no coroutine can catch it) for a longer one. This parser
// refuses such a field first, with the same error as an oversized header, so a client sending one
// gets 431. (The upstream's response is parsed by ResponseParser, which stores no field; its
// 16 KiB header limit bounds every field: 502.)
template <bool isRequest>
class BoundedParser : public http::parser<isRequest, http::buffer_body> {
 public:
  // Longest field name or value Beast can store (its offsets count two more bytes, ": ").
  static constexpr std::size_t kMaxFieldBytes = 65535 - 2;

 private:
  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     boost::system::error_code& ec) override {
    if (name_string.size() > kMaxFieldBytes || value.size() > kMaxFieldBytes) {
      ec = http::error::header_limit;
      return;
    }
    this->get().insert(name, name_string, value);
  }
};
using RequestParser = BoundedParser<true>;

// The upstream response's parser. It stores no header fields: the header the client gets is
// written as the fields are parsed, into a string the session reuses (one allocated field per
// header, then Beast's serializer walking them again, were a fifth of the proxy's own instructions
// per pod GET under callgrind). The client's header is the upstream's status and fields in their
// order, without the hop-by-hop ones (drops_field) and with a repeated Content-Length once.
// Its body bytes are not copied either: each piece stays where it was read (Upstream::buffer) and
// take_body() hands it out, so the relay writes it to the client from there.
class ResponseParser : public http::basic_parser<false> {
 public:
  // `head` (cleared here) receives the client's header; it must outlive the parser.
  explicit ResponseParser(std::string& head) : head_(head) { head_.clear(); }

  int status() const { return status_; }
  bool upgrade() const { return status_ == 101; }
  std::string_view content_type() const { return content_type_; }
  // The client's header once the upstream's was parsed: the status line and fields, then
  // "Connection: close" unless the client connection stays open (an upgrade keeps the upstream's
  // Connection field instead), and the blank line.
  std::string_view finish_head(bool keep_alive);

  // The body bytes parsed since the last call: valid until the buffer they were parsed from is
  // consumed or read into. With eager parsing (a whole message in one read) only the last piece
  // is kept; the relay parses one piece per put.
  std::string_view take_body() { return std::exchange(body_, {}); }

 private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int, boost::system::error_code&) override {}
  void on_response_impl(int code, beast::string_view reason, int version, boost::system::error_code& ec) override;
  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     boost::system::error_code& ec) override;
  void on_header_impl(boost::system::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>&, boost::system::error_code&) override {}
  std::size_t on_body_impl(beast::string_view body, boost::system::error_code&) override { return keep(body); }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, boost::system::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, boost::system::error_code&) override {
    return keep(body);
  }
  void on_finish_impl(boost::system::error_code&) override {}

  std::size_t keep(beast::string_view body) {
    body_ = {body.data(), body.size()};
    return body.size();
  }

  std::string& head_;
  int status_ = 0;
  bool content_length_seen_ = false;
  std::string connection_;  // the Connection field(s), comma-joined
  std::string content_type_;
  std::string_view body_;
};

// How the relay frames a message it forwards on an HTTP/1.1 connection: its header (serialized
// once) goes out with the first write, and a chunked message's body pieces become chunks, its end
// the last chunk. Each write is one gather of at most five buffers.
class Http1Framing {
 public:
  // `head` must stay valid until the first write; `chunked`: the body goes out as chunks;
  // `has_body`: a body (possibly empty) follows the header (not so for a HEAD answer, 204, 304).
  Http1Framing(std::string_view head, bool chunked, bool has_body) : head_(head), chunked_(chunked), done_(!has_body) {}

  // The buffers that carry `size` bytes of body (and the header, if not written yet); `more`:
  // more body follows. Valid until the next call.
  std::span<const asio::const_buffer> next(const char* data, std::size_t size, bool more);
  // The header went out, and the body's end (or there is none).
  bool done() const { return head_.empty() && done_; }

 private:
  std::string_view head_;
  bool chunked_;
  bool done_;
  char size_line_[24];
  std::array<asio::const_buffer, 5> buffers_;
};

// Reads from `stream` into `buffer` and parses until `parser` has the whole header, as
// http::async_read_header does (the same errors: end_of_stream when the stream ended before a
// byte of it, partial_message after some, header_limit past the parser's limit), without its two
// layers of composed operations and a posted completion even when the header is in the buffer
// already (a keep-alive request usually is: wait_for_request read it), 3% of the instructions per
// pod GET under callgrind. At most `max_read` bytes per read.
template <bool isRequest>
asio::awaitable<boost::system::error_code> read_header(TlsStream& stream, beast::flat_buffer& buffer,
                                                       http::basic_parser<isRequest>& parser, std::size_t max_read) {
  boost::system::error_code ec;
  for (;;) {
    if (buffer.size() > 0) {
      buffer.consume(parser.put(buffer.data(), ec));
      if (ec != http::error::need_more) co_return ec;  // done, or a parse error
      ec = {};
    }
    // The buffers are bounded (Upstream::buffer, Session::client_buffer_); the parser's header
    // limit is below their bound, so a full buffer means a header past it all the same.
    const std::size_t room = beast::read_size(buffer, max_read);
    if (room == 0) co_return http::error::header_limit;
    auto space = buffer.prepare(room);
    auto [rec, n] = co_await stream.async_read_some(space, net::use_tuple);
    buffer.commit(n);
    if (rec == asio::error::eof) {
      if (!parser.got_some()) co_return http::error::end_of_stream;
      parser.put_eof(ec);
      if (!ec) ec = http::error::partial_message;
      co_return ec;
    }
    if (rec) co_return rec;
  }
}

// Identical repeated Content-Length fields (the parser refuses differing ones) go on as one.
template <class Parser>
void single_content_length(Parser& parser) {
  auto& message = parser.get();
  if (auto length = parser.content_length(); length && message.count(http::field::content_length) > 1) {
    message.content_length(*length);
  }
}

// A relay buffer: its bytes are always written before they are read, so it is not zero-filled when
// it is made (the 128 KiB memset per request was a sixth of the proxy's instructions on small
// responses under callgrind).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
};
using RelayBuffer = std::vector<char, UninitializedAllocator<char>>;

// The upstream (kube-apiserver) connection of an HTTP/1.1 session, kept alive between requests.
struct Http1Upstream {
  Http1Upstream(const asio::any_io_executor& executor, asio::ssl::context& tls, std::size_t buffer_limit)
      : stream(executor, tls), buffer(buffer_limit) {}
  TlsStream stream;
  beast::flat_buffer buffer;  // bounded (Http1Session::connect_upstream): a response header and a relay buffer
  bool reused = false;        // a request already went over it
};

// One request/response in flight.
struct Exchange : ExchangeCore {
  RequestParser parser;
  bool client_keep_alive = true;
  bool expects_continue = false;  // "Expect: 100-continue": the body comes only when asked for
  std::string upstream_failure;   // why upstream could not be reached (then the client gets 503)
  // Sent without a body on a kept-alive upstream connection, by a method a client may send again
  // (GET, HEAD, OPTIONS, TRACE, as Go's http.Transport decides): when that connection turns out
  // closed before any byte of the answer, the request goes again, once, on a new one.
  bool resendable = false;
  bool resent = false;
  bool forwarded = false;  // the effect discard_response forwarded it (its answer was lost)
};

class TlsConnection;

class Http1Session {
 public:
  explicit Http1Session(TlsConnection& conn);
  Http1Session(const Http1Session&) = delete;
  Http1Session& operator=(const Http1Session&) = delete;

  // Serves requests until the connection ends, is cut or drains (then TlsConnection closes it).
  asio::awaitable<void> serve();
  // The connection was cut: the upstream socket closes too.
  void cut();
  void close_upstream();
  // Whether a graceful stop cuts the connection at once: between requests, or streaming (a watch,
  // a tunnel, a hang); a request in flight finishes first.
  bool cut_when_draining() const { return state_ != State::busy; }

 private:
  enum class State { idle, busy, streaming };

  asio::awaitable<bool> wait_for_request(bool first);
  asio::awaitable<bool> serve_request();
  asio::awaitable<bool> carry_out(Exchange& ex);
  // The effects of a fault (effects.hpp), each carried out here once. nullopt: go on with the next;
  // a value: the request is over, and whether the connection can carry another.
  using Next = std::optional<bool>;
  asio::awaitable<Next> apply(Exchange& ex, effect::Answer& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::CutOff& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::Wait& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::Hold& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::DiscardResponse& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::FilterWatch& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::EnforceOutage& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::EndConnection& e);
  asio::awaitable<Next> apply(Exchange& ex, effect::StallConnection& e);
  asio::awaitable<void> write_local_response(Exchange& ex, const faults::HttpResponse& response);
  asio::awaitable<void> write_simple_error(int code, const char* message);
  asio::awaitable<void> discard_request_body(Exchange& ex);
  asio::awaitable<void> answer_upstream_unreachable(Exchange& ex);
  asio::awaitable<void> answer_bad_gateway(Exchange& ex, const std::string& why);
  asio::awaitable<void> hang(std::optional<std::chrono::milliseconds> limit);

  // relay.cpp: forwarding and streaming.
  asio::awaitable<std::optional<std::string>> connect_upstream();
  // False when upstream could not be reached and nothing was sent (ex.upstream_failure says why).
  asio::awaitable<bool> send_request(Exchange& ex);
  asio::awaitable<bool> relay_response(Exchange& ex);
  asio::awaitable<void> discard_response(ResponseParser& parser, Exchange& ex);
  asio::awaitable<bool> stream_body(ResponseParser& parser, Exchange& ex, WatchFilter* filter);
  // Parses the next element of the upstream response body (one piece of it, a chunk header, the
  // end), reading from upstream when the buffer holds none. The piece (parser.take_body()) is
  // still in upstream_->buffer: the caller consumes `used` bytes once it went on.
  struct Parsed {
    boost::system::error_code ec;
    std::size_t used = 0;
  };
  asio::awaitable<Parsed> parse_body_piece(ResponseParser& parser);
  asio::awaitable<void> write_body_piece(Http1Framing& framing, int status, const char* data, std::size_t size,
                                         bool more, Exchange& ex);
  asio::awaitable<void> wait_for_send_queue();
  asio::awaitable<void> tunnel();
  // `keep` holds the connection (and so this session) while the pump runs.
  static asio::awaitable<void> pump(std::shared_ptr<TlsConnection> keep, Http1Session* self, bool client_to_upstream);
  void prepare_upstream_request(Exchange& ex);

  // The relay buffers exist only while a request or a tunnel uses them: an idle connection (or
  // one still in its TLS handshake) holds none of them.
  RelayBuffer& up_chunk();
  RelayBuffer& down_chunk();
  void reserve_client_reads();
  void reserve_upstream_reads();
  void release_idle_buffers();

  void finish(Exchange& ex);

  TlsConnection& conn_;
  Server::Impl* const server_;
  const ServerOptions& options_;
  const std::uint64_t id_;
  asio::any_io_executor executor_;  // the connection's strand
  TlsStream& client_;
  beast::flat_buffer client_buffer_;
  std::unique_ptr<Http1Upstream> upstream_;
  RelayBuffer up_chunk_;       // request body (or tunnel) bytes on their way upstream
  RelayBuffer down_chunk_;     // tunnel bytes on their way to the client (response bodies
                               // go out from upstream_->buffer)
  std::string request_head_;   // the request header for the upstream (send_request)
  std::string response_head_;  // the response header for the client (ResponseParser)
  State state_ = State::idle;
};

}  // namespace faultline::proxy
