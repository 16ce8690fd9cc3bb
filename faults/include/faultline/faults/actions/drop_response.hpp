#pragma once
// drop-response: forward the request, let the apiserver do the write, then lose the answer: the
// client never learns that its create/bind happened.

#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct DropResponse {
  static constexpr std::string_view type = "drop-response";
  static DropResponse parse(detail::MapReader& reader);
  enum class Then { reset, close, hang };
  Then then = Then::reset;  // what the client sees instead of the answer
};

std::string_view to_string(DropResponse::Then then);

}  // namespace faultline::faults::actions
