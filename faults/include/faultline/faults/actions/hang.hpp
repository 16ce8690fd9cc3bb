#pragma once
// hang: accept the request and never answer; after `duration` (if set) close the connection.

#include <optional>
#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Hang {
  static constexpr std::string_view type = "hang";
  static Hang parse(detail::MapReader& reader);
  std::optional<Duration> duration;  // nullopt: until the client gives up
};

}  // namespace faultline::faults::actions
