#pragma once
// close: close the client's connection cleanly (FIN) without answering the request.

#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Close {
  static constexpr std::string_view type = "close";
  static Close parse(detail::MapReader&) { return {}; }  // no attributes
};

}  // namespace faultline::faults::actions
