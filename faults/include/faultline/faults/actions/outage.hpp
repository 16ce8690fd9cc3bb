#pragma once
// outage: the apiserver "goes down" for every client request through the proxy for a while.

#include <optional>
#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Outage {
  static constexpr std::string_view type = "outage";
  static Outage parse(detail::MapReader& reader);
  enum class Mode {
    reset,      // reset live connections and new requests
    refuse,     // close the listener: new connections are refused, live ones reset
    blackhole,  // accept and read, never answer
  };
  Mode mode = Mode::reset;
  // nullopt: until the end of the rule's `when.for` window (validation requires one of the two)
  std::optional<Duration> duration;
};

std::string_view to_string(Outage::Mode mode);

}  // namespace faultline::faults::actions
