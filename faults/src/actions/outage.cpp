#include "faultline/faults/actions/outage.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

std::string_view to_string(Outage::Mode mode) {
  switch (mode) {
    case Outage::Mode::reset:
      return "reset";
    case Outage::Mode::refuse:
      return "refuse";
    case Outage::Mode::blackhole:
      return "blackhole";
  }
  return "reset";
}

Outage Outage::parse(detail::MapReader& reader) {
  using Mode = Outage::Mode;
  Outage outage;
  if (auto mode = reader.choice("mode", {"reset", "refuse", "blackhole"}, true))
    outage.mode = *mode == "refuse" ? Mode::refuse : *mode == "blackhole" ? Mode::blackhole : Mode::reset;
  outage.duration = detail::positive_duration(reader, "duration");
  return outage;
}

}  // namespace faultline::faults::actions
