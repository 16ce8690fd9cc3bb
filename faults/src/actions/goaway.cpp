#include "faultline/faults/actions/goaway.hpp"

#include <array>
#include <vector>

#include "actions/parse.hpp"

namespace faultline::faults::actions {
namespace {
constexpr std::array<std::string_view, 14> kErrorNames{"NO_ERROR",
                                                       "PROTOCOL_ERROR",
                                                       "INTERNAL_ERROR",
                                                       "FLOW_CONTROL_ERROR",
                                                       "SETTINGS_TIMEOUT",
                                                       "STREAM_CLOSED",
                                                       "FRAME_SIZE_ERROR",
                                                       "REFUSED_STREAM",
                                                       "CANCEL",
                                                       "COMPRESSION_ERROR",
                                                       "CONNECT_ERROR",
                                                       "ENHANCE_YOUR_CALM",
                                                       "INADEQUATE_SECURITY",
                                                       "HTTP_1_1_REQUIRED"};
}  // namespace

std::string_view h2_error_name(std::uint32_t code) {
  return code < kErrorNames.size() ? kErrorNames[code] : std::string_view("UNKNOWN");
}

GoAway GoAway::parse(detail::MapReader& reader) {
  GoAway goaway;
  if (auto mode = reader.choice("mode", {"graceful", "abrupt"}, false)) {
    goaway.mode = *mode == "abrupt" ? Mode::abrupt : Mode::graceful;
  }
  std::vector<std::string_view> names;
  for (std::uint32_t code = 0; code <= 0xd; ++code) names.push_back(h2_error_name(code));
  if (auto name = reader.choice("errorCode", names, false)) {
    for (std::uint32_t code = 0; code <= 0xd; ++code) {
      if (h2_error_name(code) == *name) goaway.error_code = code;
    }
  }
  return goaway;
}

}  // namespace faultline::faults::actions
