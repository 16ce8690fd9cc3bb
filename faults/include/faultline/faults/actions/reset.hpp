#pragma once
// reset: abort the client's TCP connection with RST (SO_LINGER 0) instead of answering.

#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Reset {
  static constexpr std::string_view type = "reset";
  static Reset parse(detail::MapReader&) { return {}; }  // no attributes
};

}  // namespace faultline::faults::actions
