// The watch event framer (JsonFrameSplitter) and the event accessors the watch actions use.
// Input: the bytes of a watch stream as the apiserver would send them. The stream is fed once
// whole and once in chunks whose sizes come from the stream itself; both must give the same
// events, and the events plus what is still pending must be the stream, byte for byte.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/proxy/watch_stream.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;

struct Framed {
  std::vector<std::string> events;
  std::string pending;
  bool too_large = false;
};

// Chunk sizes 1..16 from a hash of the stream, so every input always replays the same way.
Framed frame(std::string_view stream, bool chunked, std::size_t limit) {
  proxy::JsonFrameSplitter splitter;
  splitter.set_limit(limit);
  Framed out;
  std::uint32_t state = 2166136261u;
  for (unsigned char c : stream) state = (state ^ c) * 16777619u;
  try {
    while (!stream.empty()) {
      std::size_t n = stream.size();
      if (chunked) {
        state = state * 1103515245u + 12345u;
        n = std::min<std::size_t>(n, 1 + (state >> 16) % 16);
      }
      for (auto& event : splitter.feed(stream.substr(0, n))) out.events.push_back(std::move(event));
      stream.remove_prefix(n);
    }
  } catch (const std::length_error&) {
    out.too_large = true;  // the documented answer to an event over the limit
  }
  out.pending = splitter.pending();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  // A small limit on some inputs so the over-limit path is exercised as well.
  const std::size_t limit = (size % 7 == 0) ? 64 : 64 * 1024 * 1024;

  const Framed whole = frame(stream, false, limit);
  const Framed chunked = frame(stream, true, limit);
  check(whole.too_large == chunked.too_large, "chunking changed whether the limit was hit");
  if (whole.too_large) return 0;
  check(whole.events == chunked.events, "chunking changed the events");
  check(whole.pending == chunked.pending, "chunking changed what is pending");

  std::string rebuilt;
  for (const auto& event : whole.events) {
    check(!event.empty(), "empty event");
    // Trailing whitespace is part of an event (it is relayed with it), so it counts too.
    check(event.size() <= limit, "an event larger than the limit came out without length_error");
    rebuilt += event;
    (void)proxy::watch_event_type(event);
    (void)proxy::watch_event_object(event);
  }
  check(whole.pending.size() <= limit, "more than the limit is pending without length_error");
  rebuilt += whole.pending;
  check(rebuilt == stream, "events + pending are not the stream byte for byte");
  return 0;
}
