// The action registry: type name -> parser. The envelope is only `type`; every other key of the
// `action` mapping belongs to the action (toxiproxy's split of generic and specific attributes).
#include <functional>
#include <map>

#include "actions/parse.hpp"

namespace faultline::faults::detail {
namespace {

using Parser = std::function<Action(MapReader&)>;

template <typename T>
std::pair<const std::string_view, Parser> entry(T (*parse)(MapReader&)) {
  return {T::type, [parse](MapReader& reader) { return Action{parse(reader)}; }};
}

const std::map<std::string_view, Parser>& registry() {
  static const std::map<std::string_view, Parser> parsers{
      entry(&parse_respond),     entry(&parse_reset),       entry(&parse_close),
      entry(&parse_delay),       entry(&parse_hang),        entry(&parse_drop_response),
      entry(&parse_outage),      entry(&parse_watch_reset), entry(&parse_watch_gone),
      entry(&parse_watch_inject), entry(&parse_watch_drop),  entry(&parse_goaway),
      entry(&parse_stall),
  };
  return parsers;
}

}  // namespace

std::optional<Action> parse_action(MapReader& reader) {
  if (!reader.valid()) return std::nullopt;
  auto type = reader.string("type", true);
  if (!type) return std::nullopt;
  auto parser = registry().find(*type);
  if (parser == registry().end()) {
    auto names = known_action_types();
    reader.error_at("type", "unknown action type \"" + *type + "\" (known: " +
                                join({names.begin(), names.end()}) + ")");
    return std::nullopt;
  }
  return parser->second(reader);
}

std::optional<Duration> positive_duration(MapReader& reader, std::string_view key, bool required) {
  auto value = reader.duration(key, required);
  if (value && value->count() <= 0) {
    reader.error_at(key, "must be greater than 0");
    return std::nullopt;
  }
  return value;
}

}  // namespace faultline::faults::detail
