#include "faultline/faults/action.hpp"

#include <array>

namespace faultline::faults {
namespace {

template <std::size_t... I>
constexpr auto type_names(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{std::variant_alternative_t<I, Action>::type...};
}

constexpr auto all_type_names = type_names(std::make_index_sequence<std::variant_size_v<Action>>{});

}  // namespace

std::string_view action_type(const Action& action) {
  return std::visit([](const auto& a) { return std::decay_t<decltype(a)>::type; }, action);
}

bool is_watch_action(const Action& action) {
  return std::holds_alternative<actions::WatchReset>(action) ||
         std::holds_alternative<actions::WatchGone>(action) ||
         std::holds_alternative<actions::WatchInject>(action) ||
         std::holds_alternative<actions::WatchDrop>(action);
}

std::span<const std::string_view> known_action_types() { return all_type_names; }

}  // namespace faultline::faults
