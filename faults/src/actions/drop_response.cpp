#include "faultline/faults/actions/drop_response.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

std::string_view to_string(DropResponse::Then then) {
  switch (then) {
    case DropResponse::Then::reset:
      return "reset";
    case DropResponse::Then::close:
      return "close";
    case DropResponse::Then::hang:
      return "hang";
  }
  return "reset";
}

DropResponse DropResponse::parse(detail::MapReader& reader) {
  using Then = DropResponse::Then;
  DropResponse drop;
  if (auto then = reader.choice("then", {"reset", "close", "hang"}))
    drop.then = *then == "close" ? Then::close : *then == "hang" ? Then::hang : Then::reset;
  return drop;
}

}  // namespace faultline::faults::actions
