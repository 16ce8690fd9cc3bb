#pragma once
// reset: abort the client's TCP connection with RST (SO_LINGER 0) instead of answering.

#include <string_view>

namespace faultline::faults::actions {

struct Reset {
  static constexpr std::string_view type = "reset";
};

}  // namespace faultline::faults::actions
