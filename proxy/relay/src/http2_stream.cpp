// The transitions of an HTTP/2 relay stream (see http2_stream.hpp).
#include "http2_stream.hpp"

#include <spdlog/spdlog.h>

namespace faultline::proxy {
namespace {

bool allowed(Http2RequestState from, Http2RequestState to) {
  using S = Http2RequestState;
  switch (from) {
    case S::header:
      return to == S::header_too_large || to == S::body || to == S::complete;
    case S::header_too_large:
      return to == S::body || to == S::complete;
    case S::body:
      return to == S::complete;
    case S::complete:
      return false;
  }
  return false;
}

bool allowed(Http2UpstreamState from, Http2UpstreamState to) {
  using S = Http2UpstreamState;
  switch (from) {
    case S::none:
      return to == S::waiting;
    case S::waiting:
      return to == S::open || to == S::closed;  // submitted, or the connection failed
    case S::open:
      return to == S::sent || to == S::closed;
    case S::sent:
    case S::closed:
      return to == S::closed;
  }
  return false;
}

bool allowed(Http2ResponseState from, Http2ResponseState to) {
  using S = Http2ResponseState;
  switch (from) {
    case S::none:
      return to == S::received || to == S::relaying || to == S::complete;
    case S::received:
      return to == S::relaying || to == S::complete;  // relayed, or answered in its place
    case S::relaying:
      return to == S::complete || to == S::failing;
    case S::complete:
      return to == S::complete;
    case S::failing:
      return false;
  }
  return false;
}

template <typename State>
void move(State& state, State to, int32_t id, const char* side) {
  if (!allowed(state, to)) {
    spdlog::error("h2 relay: stream {}: no {} transition from {} to {}", id, side, static_cast<int>(state),
                  static_cast<int>(to));
    return;
  }
  state = to;
}

}  // namespace

void Http2Stream::set(Http2RequestState to) { move(request_, to, id, "request"); }
void Http2Stream::set(Http2UpstreamState to) { move(upstream_, to, id, "upstream"); }
void Http2Stream::set(Http2ResponseState to) { move(response_, to, id, "response"); }

}  // namespace faultline::proxy
