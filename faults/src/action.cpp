// The action registry, generated from the Action variant: every alternative carries its `type`
// name, its static `parse` and (watch actions) `acts_on_watch`, so there is no table to keep. The
// envelope is only `type`; every other key of the `action` mapping belongs to the action
// (toxiproxy's split of generic and specific attributes).
#include "faultline/faults/action.hpp"

#include <array>
#include <utility>

#include "actions/parse.hpp"

namespace faultline::faults {
namespace {

template <typename T>
concept WatchAction = requires {
  requires T::acts_on_watch;
};

constexpr std::size_t action_count = std::variant_size_v<Action>;

template <std::size_t... I>
constexpr auto type_names(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{std::variant_alternative_t<I, Action>::type...};
}

constexpr auto all_type_names = type_names(std::make_index_sequence<action_count>{});

constexpr bool names_are_unique() {
  for (std::size_t i = 0; i < all_type_names.size(); ++i)
    for (std::size_t j = i + 1; j < all_type_names.size(); ++j)
      if (all_type_names[i] == all_type_names[j]) return false;
  return true;
}
static_assert(names_are_unique(), "two Action alternatives share a `type` name");

// The alternative named `type`, parsed by its own `parse`; nullopt for an unknown name.
template <std::size_t... I>
std::optional<Action> parse_named(std::string_view type, detail::MapReader& reader, std::index_sequence<I...>) {
  std::optional<Action> action;
  static_cast<void>(
      ((std::variant_alternative_t<I, Action>::type == type &&
        (action.emplace(std::in_place_index<I>, std::variant_alternative_t<I, Action>::parse(reader)), true)) ||
       ...));
  return action;
}

}  // namespace

std::string_view action_type(const Action& action) {
  return std::visit([](const auto& a) { return std::decay_t<decltype(a)>::type; }, action);
}

bool is_watch_action(const Action& action) {
  return std::visit([](const auto& a) { return WatchAction<std::decay_t<decltype(a)>>; }, action);
}

std::span<const std::string_view> known_action_types() { return all_type_names; }

namespace detail {

std::optional<Action> parse_action(MapReader& reader) {
  if (!reader.valid()) return std::nullopt;
  auto type = reader.string("type", true);
  if (!type) return std::nullopt;
  auto action = parse_named(*type, reader, std::make_index_sequence<action_count>{});
  if (!action)
    reader.error_at("type", "unknown action type \"" + *type +
                                "\" (known: " + join({all_type_names.begin(), all_type_names.end()}) + ")");
  return action;
}

std::optional<Duration> positive_duration(MapReader& reader, std::string_view key, bool required) {
  auto value = reader.duration(key, required);
  if (value && value->count() <= 0) {
    reader.error_at(key, "must be greater than 0");
    return std::nullopt;
  }
  return value;
}

}  // namespace detail
}  // namespace faultline::faults
