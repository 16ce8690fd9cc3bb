#pragma once
// watch-inject: after N relayed events, put a synthetic event into the stream. Without an object
// template the last relayed object is re-sent with the given event type and its
// metadata.deletionTimestamp removed: a DELETED for an object that is still alive (the
// label-selector watch case that makes careless clients delete live work).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct WatchInject {
  static constexpr std::string_view type = "watch-inject";
  static constexpr bool acts_on_watch = true;  // only applies to watch requests
  static WatchInject parse(detail::MapReader& reader);
  std::string event = "DELETED";  // ADDED | MODIFIED | DELETED
  std::uint64_t after_events = 1;
  std::optional<std::string> object_json;  // the template, as compact JSON

  // The event line to insert; `last_object_json` is the object of the last relayed event (used when
  // there is no template). nullopt when there is neither a template nor a usable last object.
  std::optional<std::string> render_event(std::string_view last_object_json) const;
};

// Removes metadata.deletionTimestamp (and deletionGracePeriodSeconds) from a JSON object;
// nullopt when `object_json` is not a JSON object.
std::optional<std::string> without_deletion_timestamp(std::string_view object_json);

}  // namespace faultline::faults::actions
