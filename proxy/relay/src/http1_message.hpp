#pragma once
// HTTP/1.1 messages on the wire, as the relay reads and writes them: the request parser (bounded
// fields), the upstream response parser (writes the client's header as it parses, keeps body
// pieces where they were read), the framing of a forwarded message and the header read.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "faultline/net/async.hpp"
#include "faultline/net/tls_stream.hpp"

namespace faultline::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
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
// Its body bytes are not copied either: each piece stays where it was read (Http1Upstream::buffer()) and
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

inline std::string_view ResponseParser::finish_head(bool keep_alive) {
  if (!keep_alive && !upgrade()) head_ += "Connection: close\r\n";
  head_ += "\r\n";
  return head_;
}

// Inline, as its callers relayed it (one call per piece).
inline std::span<const asio::const_buffer> Http1Framing::next(const char* data, std::size_t size, bool more) {
  std::size_t n = 0;
  if (!head_.empty()) buffers_[n++] = asio::buffer(head_.data(), head_.size());
  head_ = {};
  if (done_) return {buffers_.data(), n};
  if (chunked_ && size > 0) {
    char* end = std::to_chars(size_line_, size_line_ + 16, size, 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    buffers_[n++] = asio::buffer(size_line_, static_cast<std::size_t>(end - size_line_));
  }
  if (size > 0) buffers_[n++] = asio::buffer(data, size);
  if (chunked_ && size > 0) buffers_[n++] = asio::buffer("\r\n", 2);
  if (!more) {
    if (chunked_) buffers_[n++] = asio::buffer("0\r\n\r\n", 5);
    done_ = true;
  }
  return {buffers_.data(), n};
}

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
    // The buffers are bounded (Http1Upstream::buffer(), Http1Client::buffer); the parser's header
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

}  // namespace faultline::proxy
