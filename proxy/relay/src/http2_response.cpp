// The responses of an HTTP/2 client connection (see http2_response.hpp).
#include "http2_response.hpp"

#include <boost/algorithm/string/case_conv.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <vector>

#include "connection.hpp"
#include "faultline/proxy/headers.hpp"
#include "http2_client_io.hpp"
#include "http2_upstream.hpp"
#include "http2_wire.hpp"

namespace faultline::proxy {

void Http2ResponseRelay::answer(Http2Stream& s, const faults::HttpResponse& response) {
  std::vector<std::string> storage;
  storage.reserve(2 + 2 * response.headers.size() + 2);
  storage.push_back(":status");
  storage.push_back(std::to_string(response.code));
  bool bodiless = response.code == 204 || response.code == 304;
  bool head = s.method == "HEAD";
  for (const auto& h : response.headers) {
    auto name = boost::algorithm::to_lower_copy(std::string(h.name));
    if (name == "content-length" || name == "connection") continue;
    storage.push_back(std::move(name));
    storage.push_back(h.value);
  }
  if (!bodiless) {
    storage.push_back("content-length");
    storage.push_back(std::to_string(response.body.size()));
  }
  std::vector<nghttp2_nv> nva;
  for (std::size_t i = 0; i + 1 < storage.size(); i += 2) nva.push_back(make_nv(storage[i], storage[i + 1]));
  s.down_buf = (bodiless || head) ? std::string() : response.body;
  s.down_off = 0;
  s.set(Http2ResponseState::complete);
  s.ex.record.status = response.code;
  nghttp2_data_provider provider{};
  provider.read_callback = read_body_;
  int rv = nghttp2_submit_response(client_, s.id, nva.data(), nva.size(), s.down_buf.empty() ? nullptr : &provider);
  if (rv != 0) spdlog::debug("conn {}: h2: answering stream {}: {}", conn_.id(), s.id, nghttp2_strerror(rv));
  io_.kick();
}

void Http2ResponseRelay::relay(Http2Stream& s, bool end_stream) {
  // nghttp2_submit_response copies the fields: they point into the stream's own strings.
  const std::string status_name = ":status";
  const std::string status = std::to_string(s.resp_status);
  std::vector<nghttp2_nv> nva;
  nva.reserve(1 + s.resp_headers.size());
  nva.push_back(make_nv(status_name, status));
  std::string_view content_type;
  for (const auto [name, value] : s.resp_headers) {
    if (name == "content-type") content_type = value;
    // A watch filter may change the body: its length is no longer the upstream's.
    if (name == "content-length" && s.ex.watch_filter) continue;
    nva.push_back(make_nv(name, value));
  }
  s.set(end_stream ? Http2ResponseState::complete : Http2ResponseState::relaying);
  s.ex.record.status = s.resp_status;
  auto& server = conn_.server();
  if (s.ex.record.watch && server.observer) {
    server.observer->watch_opened();
    s.watch_counted = true;
  }
  s.filter = s.ex.watch_filter.get();
  if (s.filter && s.ex.json_upstream && !is_json_content_type(content_type)) {
    spdlog::error("conn {}: rule '{}' ({}) cannot act: the watch response is not JSON (Content-Type '{}')", conn_.id(),
                  s.ex.plan.rule, s.ex.record.action.value_or(""), content_type);
    s.filter = nullptr;
  }
  nghttp2_data_provider provider{};
  provider.read_callback = read_body_;
  int rv = nghttp2_submit_response(client_, s.id, nva.data(), nva.size(), end_stream ? nullptr : &provider);
  if (rv != 0)
    spdlog::debug("conn {}: h2: relaying the response of stream {}: {}", conn_.id(), s.id, nghttp2_strerror(rv));
}

bool Http2ResponseRelay::data(Http2Stream& s, std::string_view bytes) {
  if (s.discarding || s.end != WatchFilter::End::none || !s.responded()) return false;
  s.down_unconsumed += bytes.size();
  if (s.filter && s.ex.json_upstream) {
    // A filter that holds events stamps them with this time (release_due_events emits them).
    if (s.filter->holds_events()) watch_step(s, s.filter->advance(conn_.server().clock.now()));
    for (auto& event : s.splitter.feed(bytes)) {
      if (s.end == WatchFilter::End::none) watch_step(s, s.filter->on_event(event));
    }
  } else {
    if (s.down_off > 0 && s.down_off >= s.down_buf.size() / 2) {
      s.down_buf.erase(0, s.down_off);
      s.down_off = 0;
    }
    s.down_buf.append(bytes);
  }
  nghttp2_session_resume_data(client_, s.id);
  io_.kick();
  return true;
}

void Http2ResponseRelay::ended(Http2Stream& s) {
  if (s.responded()) {
    // A clean end: what a filter still holds goes out first.
    if (s.filter && s.ex.json_upstream && s.end == WatchFilter::End::none) watch_step(s, s.filter->flush());
    s.set(Http2ResponseState::complete);
    nghttp2_session_resume_data(client_, s.id);
  }
  io_.kick();
}

void Http2ResponseRelay::watch_step(Http2Stream& s, WatchFilter::Step step) {
  for (auto& event : step.emit) s.down_buf += event;
  if (!step.emit.empty()) nghttp2_session_resume_data(client_, s.id);
  if (step.end == WatchFilter::End::none) return;
  s.end = step.end;
  // The rest of the upstream stream is not relayed.
  if (s.up) s.up->cancel(s);
  // Reset once what is buffered is out, unless all of the response is here already.
  if (step.end == WatchFilter::End::clean) s.set(Http2ResponseState::complete);
  else if (s.response() != Http2ResponseState::complete) s.set(Http2ResponseState::failing);
  nghttp2_session_resume_data(client_, s.id);
  io_.kick();
}

void Http2ResponseRelay::consume_upstream(Http2Stream& s, std::size_t n) {
  if (n == 0) return;
  s.down_unconsumed -= n;
  if (s.up) s.up->consume(s, n);
}

// The bytes leave down_buf only in send_body: between the two callbacks the writer may be waiting
// for a socket write while the upstream reader appends to down_buf.
ssize_t Http2ResponseRelay::read_body(Http2Stream& s, size_t length, uint32_t* data_flags) {
  std::size_t n = std::min(length, s.down_size());
  if (n == 0) {
    // All out: everything received is given back (with a watch filter the bytes out differ from
    // the bytes in).
    s.down_buf.clear();
    s.down_off = 0;
    consume_upstream(s, s.down_unconsumed);
  }
  if (n == s.down_size()) {
    if (s.response() == Http2ResponseState::complete) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0 && s.response() == Http2ResponseState::failing)
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR
    else if (n == 0) return NGHTTP2_ERR_DEFERRED;
  }
  if (n > 0) *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  return static_cast<ssize_t>(n);
}

int Http2ResponseRelay::send_body(Http2Stream& s, const nghttp2_frame& frame, const uint8_t* framehd, size_t length) {
  if (length > s.down_size()) return NGHTTP2_ERR_CALLBACK_FAILURE;
  H2_GUARD_BEGIN
  auto& out = io_.out();
  out.insert(out.end(), framehd, framehd + 9);
  const std::size_t pad = frame.data.padlen;
  if (pad > 0) out.push_back(static_cast<uint8_t>(pad - 1));
  const auto* data = reinterpret_cast<const uint8_t*>(s.down_buf.data()) + s.down_off;
  out.insert(out.end(), data, data + length);
  if (pad > 1) out.insert(out.end(), pad - 1, uint8_t{0});
  s.down_off += length;
  s.ex.record.bytes_out += length;
  bool empty = s.down_size() == 0;
  if (empty) {
    s.down_buf.clear();
    s.down_off = 0;
  }
  // Taken towards the client: the apiserver may send that much more (with a watch filter the
  // bytes out differ from the bytes in; everything received is given back once all is out).
  consume_upstream(s, empty ? s.down_unconsumed : std::min(length, s.down_unconsumed));
  H2_GUARD_END
  return 0;
}

}  // namespace faultline::proxy
