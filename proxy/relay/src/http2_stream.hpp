#pragma once
// One client stream of the HTTP/2 relay: the request as received, the upstream stream that
// carries it, the response on its way back. Its life is three explicit states, changed only by
// Http2Stream::set (which refuses a transition the relay does not make): the request side (what
// the client sent), the upstream side (the stream on an upstream connection) and the response
// side (what goes back to the client). They are separate because they move independently: a
// request body may still arrive while the response is relayed, an answer may be local with no
// upstream stream at all, and a discarded upstream answer ends before the response starts.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exchange.hpp"
#include "faultline/proxy/watch_stream.hpp"
#include "gate.hpp"
#include "http2_wire.hpp"

namespace faultline::proxy {

class Http2Upstream;

// Header fields in their order, each name and value stored one after another in one string: a
// header costs one growing string and one vector, not a string per long name or value (every
// kube-apiserver response has a few: Audit-Id, the X-Kubernetes-Pf-* UIDs). Views stay valid
// until the next add() or clear(). Its size is bounded by the header limits of the callbacks that
// fill it.
class HeaderList {
 public:
  struct Field {
    std::string_view name, value;
  };
  class iterator {
   public:
    iterator(const HeaderList& list, std::size_t index, std::size_t at) : list_(&list), index_(index), at_(at) {}
    Field operator*() const {
      auto [n, v] = list_->sizes_[index_];
      std::string_view text = list_->text_;
      return {text.substr(at_, n), text.substr(at_ + n, v)};
    }
    iterator& operator++() {
      auto [n, v] = list_->sizes_[index_++];
      at_ += n + v;
      return *this;
    }
    bool operator!=(const iterator& other) const { return index_ != other.index_; }

   private:
    const HeaderList* list_;
    std::size_t index_, at_;
  };

  void add(std::string_view name, std::string_view value) {
    text_.append(name).append(value);
    sizes_.emplace_back(static_cast<std::uint32_t>(name.size()), static_cast<std::uint32_t>(value.size()));
  }
  void clear() {
    text_.clear();
    sizes_.clear();
  }
  // Clears and gives the memory back (a string moved from an empty one keeps its buffer).
  void release() {
    std::string().swap(text_);
    decltype(sizes_)().swap(sizes_);
  }
  std::size_t size() const { return sizes_.size(); }
  iterator begin() const { return {*this, 0, 0}; }
  iterator end() const { return {*this, sizes_.size(), 0}; }

 private:
  std::string text_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes_;
};

// The HTTP/2 header memory of one connection (ServerOptions::h2_header_memory_*): decoded request
// header bytes of its streams not yet sent upstream, and serialized requests not yet written,
// counted for the connection and for the process.
class Http2HeaderBudget {
 public:
  Http2HeaderBudget(const ServerOptions& options, std::atomic<std::size_t>& total) : options_(options), total_(total) {}
  Http2HeaderBudget(const Http2HeaderBudget&) = delete;
  Http2HeaderBudget& operator=(const Http2HeaderBudget&) = delete;

  // Whether `more` decoded header bytes fit the connection's budget and the process's (of which
  // a connection may always use the floor).
  bool allows(std::size_t more) const {
    const std::size_t connection = charged_ + more;
    if (connection > options_.h2_header_memory_per_connection) return false;
    return connection <= options_.h2_header_memory_floor ||
           total_.load(std::memory_order_relaxed) + more <= options_.h2_header_memory_total;
  }

  // Bytes counted against the budget, given back when set lower, released or destroyed (so a
  // Charge must not outlive its budget).
  class Charge {
   public:
    Charge() = default;
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;
    ~Charge() { set(0); }
    void bind(Http2HeaderBudget& budget) { budget_ = &budget; }
    void add(std::size_t n) { set(n_ + n); }
    void release() { set(0); }
    void set(std::size_t n) {
      if (budget_ == nullptr || n == n_) return;
      if (n > n_) {
        budget_->charged_ += n - n_;
        budget_->total_.fetch_add(n - n_, std::memory_order_relaxed);
      } else {
        budget_->charged_ -= n_ - n;
        budget_->total_.fetch_sub(n_ - n, std::memory_order_relaxed);
      }
      n_ = n;
    }

   private:
    std::size_t n_ = 0;
    Http2HeaderBudget* budget_ = nullptr;
  };

 private:
  const ServerOptions& options_;
  std::atomic<std::size_t>& total_;
  std::size_t charged_ = 0;
};

// What the client sent.
enum class Http2RequestState : std::uint8_t {
  header,            // the header block is arriving
  header_too_large,  // ... and is past --header-limit: its fields are dropped (the answer is 431)
  body,              // the header is complete: classified and decided; body bytes may follow
  complete,          // the client ended the stream (END_STREAM)
};

// The stream on an upstream connection that carries the request.
enum class Http2UpstreamState : std::uint8_t {
  none,     // not forwarded (yet)
  waiting,  // forwarded, waiting for the upstream connection to be up
  open,     // submitted; its HEADERS frame not serialized yet (its fields charged to the budget)
  sent,     // its HEADERS frame serialized
  closed,   // ended (END_STREAM, RST_STREAM, GOAWAY, the connection lost), cancelled or never opened
};

// What goes back to the client.
enum class Http2ResponseState : std::uint8_t {
  none,      // nothing yet
  received,  // the upstream's final response header arrived, not relayed (yet; discard_response: never)
  relaying,  // a response is submitted to the client, more of its body to come
  complete,  // a response is submitted and all of its body is here (or on its way out)
  failing,   // a response is submitted; once what is buffered is out, the stream is reset
};

struct Http2Stream {
  int32_t id = 0;
  // The request as received.
  std::string method, path, authority, scheme;
  HeaderList headers;  // regular fields, lower-case names
  std::size_t header_bytes = 0;
  // The decoded fields held (these strings and `headers`), and then nghttp2's copy of them, until
  // the upstream HEADERS frame is serialized (Http2UpstreamState::sent).
  Http2HeaderBudget::Charge charge;
  ExchangeCore ex;
  // Whether the request body goes upstream (the effects forward the request, and nothing ended it
  // since): bytes received from the client, not yet taken by the upstream session (and not yet
  // consumed towards the client), wait in up_buf.
  bool forwarding = false;
  std::string up_buf;
  std::shared_ptr<Http2Upstream> up;
  int32_t up_id = 0;
  std::chrono::steady_clock::time_point sent;
  // Response from upstream.
  HeaderList resp_headers;
  std::size_t resp_header_bytes = 0;  // past kResponseHeaderLimit: its fields are dropped (502)
  int resp_status = 0;
  // Response body on its way to the client (relayed or local).
  std::string down_buf;
  std::size_t down_off = 0;
  std::size_t down_unconsumed = 0;  // bytes received from upstream, not yet consumed
  // Watch filter.
  WatchFilter* filter = nullptr;
  JsonFrameSplitter splitter;
  WatchFilter::End end = WatchFilter::End::none;
  bool watch_counted = false;
  std::optional<std::chrono::steady_clock::time_point> watch_wake;  // a timer of release_due_events is set for then
  // The fault's effects: the next one to carry out (proceed); the upstream's answer is lost.
  std::size_t next_effect = 0;
  bool discarding = false;
  GateHold gate;  // effect::Gate: its place in the rule's batch while held (left when the stream goes)

  std::size_t down_size() const { return down_buf.size() - down_off; }
  bool response_header_too_large() const { return resp_header_bytes > kResponseHeaderLimit; }

  Http2RequestState request() const { return request_; }
  Http2UpstreamState upstream() const { return upstream_; }
  Http2ResponseState response() const { return response_; }
  // Classified and decided (the exchange began: it is finished when the stream ends).
  bool started() const { return request_ == Http2RequestState::body || request_ == Http2RequestState::complete; }
  // An upstream stream is open for the request (submitted, not ended).
  bool upstream_open() const { return upstream_ == Http2UpstreamState::open || upstream_ == Http2UpstreamState::sent; }
  // A response (relayed or local) is submitted to the client.
  bool responded() const { return response_ >= Http2ResponseState::relaying; }

  // The transitions: each moves one side to `to` if the relay makes that move from where the side
  // is (staying where it is counts for `closed` and `complete`); any other is a bug, logged, and
  // the side stays where it is.
  void set(Http2RequestState to);
  void set(Http2UpstreamState to);
  void set(Http2ResponseState to);

 private:
  Http2RequestState request_ = Http2RequestState::header;
  Http2UpstreamState upstream_ = Http2UpstreamState::none;
  Http2ResponseState response_ = Http2ResponseState::none;
};

}  // namespace faultline::proxy
