#pragma once
// goaway: end the client's connection the HTTP/2 way. Graceful: GOAWAY naming this request's
// stream as the last one (NO_ERROR by default); it and the requests before it finish, the client
// opens a new connection for the next ones. Abrupt: GOAWAY naming the stream before this one,
// then the connection closes; this request and every other open one go unanswered.
// Over HTTP/1.1: graceful answers with `Connection: close`, abrupt closes without an answer.

#include <cstdint>
#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct GoAway {
  static constexpr std::string_view type = "goaway";
  static GoAway parse(detail::MapReader& reader);
  enum class Mode { graceful, abrupt };
  Mode mode = Mode::graceful;
  // HTTP/2 error code (RFC 9113 section 7): NO_ERROR 0x0 ... HTTP_1_1_REQUIRED 0xd.
  std::uint32_t error_code = 0;
};

// The RFC 9113 name of an HTTP/2 error code ("NO_ERROR", "ENHANCE_YOUR_CALM", ...).
std::string_view h2_error_name(std::uint32_t code);

}  // namespace faultline::faults::actions
