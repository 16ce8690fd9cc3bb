#pragma once
// close: close the client's connection cleanly (FIN) without answering the request.

#include <string_view>

namespace faultline::faults::actions {

struct Close {
  static constexpr std::string_view type = "close";
};

}  // namespace faultline::faults::actions
