#pragma once
// watch-gone: after N relayed events, send an ERROR event carrying a 410 Expired Status (what
// kube-apiserver sends when the resourceVersion is too old) and end the stream.

#include <cstdint>
#include <string>
#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchGone {
  static constexpr std::string_view type = "watch-gone";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchGone parse(detail::MapReader& reader);
  std::uint64_t after_events = 0;
  std::string message;  // "" -> "too old resource version: 1 (2)" style text

  // {"type":"ERROR","object":{"kind":"Status",...,"reason":"Expired",...,"code":410}}\n
  std::string render_event() const;
};

}  // namespace faultline::faults::actions
