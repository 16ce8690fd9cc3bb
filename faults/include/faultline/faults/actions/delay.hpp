#pragma once
// delay: hold the request for latency (+ a seeded random share of jitter), then forward it.

#include <cstdint>
#include <string_view>

#include "faultline/faults/duration.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Delay {
  static constexpr std::string_view type = "delay";
  static Delay parse(detail::MapReader& reader);
  Duration latency{0};
  Duration jitter{0};

  // latency + a uniform draw from [0, jitter], from a 64-bit random value of the rule's RNG.
  Duration resolve(std::uint64_t random) const;
};

}  // namespace faultline::faults::actions
