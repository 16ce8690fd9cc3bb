#pragma once
// Every fault action, as one variant. Each alternative is a small value type in actions/ with its
// `type` name (how scenario files name it), its static `parse` (reads its attributes) and, for
// actions on a watch stream, `acts_on_watch = true`; the registry (action.cpp) is generated from
// this variant. Adding an action: its header here and in the variant, its source in src/actions/
// (built by glob), and how the proxy carries it out (proxy/relay/src/actions/).

#include <span>
#include <string_view>
#include <variant>

#include "faultline/faults/actions/close.hpp"
#include "faultline/faults/actions/delay.hpp"
#include "faultline/faults/actions/drop_response.hpp"
#include "faultline/faults/actions/goaway.hpp"
#include "faultline/faults/actions/hang.hpp"
#include "faultline/faults/actions/hold.hpp"
#include "faultline/faults/actions/outage.hpp"
#include "faultline/faults/actions/reset.hpp"
#include "faultline/faults/actions/respond.hpp"
#include "faultline/faults/actions/stale_read.hpp"
#include "faultline/faults/actions/stall.hpp"
#include "faultline/faults/actions/watch_coalesce.hpp"
#include "faultline/faults/actions/watch_delay.hpp"
#include "faultline/faults/actions/watch_drop.hpp"
#include "faultline/faults/actions/watch_gone.hpp"
#include "faultline/faults/actions/watch_inject.hpp"
#include "faultline/faults/actions/watch_reset.hpp"

namespace faultline::faults {

using Action = std::variant<actions::Respond, actions::Reset, actions::Close, actions::Delay, actions::Hang,
                            actions::DropResponse, actions::Outage, actions::WatchReset, actions::WatchGone,
                            actions::WatchInject, actions::WatchDrop, actions::GoAway, actions::Stall, actions::Hold,
                            actions::WatchDelay, actions::WatchCoalesce, actions::StaleRead>;

// The `type` name of the action ("respond", "watch-reset", ...).
std::string_view action_type(const Action& action);

// True for actions that act on a watch stream (watch-*): they only apply to watch requests.
bool is_watch_action(const Action& action);

// Every type name the registry knows, in declaration order.
std::span<const std::string_view> known_action_types();

}  // namespace faultline::faults
