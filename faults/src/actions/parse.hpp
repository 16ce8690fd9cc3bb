#pragma once
// Scenario parsing of actions: the registry reads the envelope (`type`), then hands the same
// mapping to the action's own parser, which reads only its attributes. Each parser lives in the
// action's source file.

#include <optional>

#include "faultline/faults/action.hpp"
#include "yaml_reader.hpp"

namespace faultline::faults::detail {

// nullopt when `type` is missing or unknown (reported); otherwise the action, whose attribute
// errors (if any) are in reader.errors().
std::optional<Action> parse_action(MapReader& reader);

actions::Respond parse_respond(MapReader& reader);
actions::Reset parse_reset(MapReader& reader);
actions::Close parse_close(MapReader& reader);
actions::Delay parse_delay(MapReader& reader);
actions::Hang parse_hang(MapReader& reader);
actions::DropResponse parse_drop_response(MapReader& reader);
actions::Outage parse_outage(MapReader& reader);
actions::WatchReset parse_watch_reset(MapReader& reader);
actions::WatchGone parse_watch_gone(MapReader& reader);
actions::WatchInject parse_watch_inject(MapReader& reader);
actions::WatchDrop parse_watch_drop(MapReader& reader);
actions::GoAway parse_goaway(MapReader& reader);
actions::Stall parse_stall(MapReader& reader);

// A positive duration or nullopt (reporting "must be greater than 0").
std::optional<Duration> positive_duration(MapReader& reader, std::string_view key, bool required = false);

}  // namespace faultline::faults::detail
