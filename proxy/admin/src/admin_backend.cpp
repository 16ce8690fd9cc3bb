#include "faultline/admin/admin_backend.hpp"

namespace faultline::admin {

std::optional<OutageMode> parse_outage_mode(std::string_view text) {
  for (OutageMode mode : {OutageMode::reset, OutageMode::refuse, OutageMode::blackhole}) {
    if (text == faults::actions::to_string(mode)) return mode;
  }
  return std::nullopt;
}

}  // namespace faultline::admin
