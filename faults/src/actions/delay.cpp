#include "faultline/faults/actions/delay.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

Duration Delay::resolve(std::uint64_t random) const {
  if (jitter.count() <= 0) return latency;
  auto span = static_cast<std::uint64_t>(jitter.count()) + 1;  // [0, jitter] inclusive
  return latency + Duration{static_cast<Duration::rep>(random % span)};
}

Delay Delay::parse(detail::MapReader& reader) {
  Delay delay;
  if (auto latency = detail::positive_duration(reader, "latency", true)) delay.latency = *latency;
  if (auto jitter = reader.duration("jitter")) delay.jitter = *jitter;
  return delay;
}

}  // namespace faultline::faults::actions
