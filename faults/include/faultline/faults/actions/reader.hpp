#pragma once
// What an action's static `parse` reads: the `action` mapping of a scenario rule. MapReader lives in
// faultline/faults/yaml_reader.hpp, so yaml-cpp stays out of the action headers.

namespace faultline::faults::detail {
class MapReader;
}  // namespace faultline::faults::detail
