#pragma once
// stall: the client's connection goes half-dead for `duration`: it stays open over TCP but sends
// nothing and reads nothing (over HTTP/2 no frames, no PING ACKs: what client-go's HTTP/2 health
// check, ReadIdleTimeout/PingTimeout, exists to detect). Then the request is carried out and the
// connection goes on. Over HTTP/1.1 a connection carries one request at a time: the same as delay.

#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Stall {
  static constexpr std::string_view type = "stall";
  static Stall parse(detail::MapReader& reader);
  Duration duration{0};  // required, > 0
};

}  // namespace faultline::faults::actions
