#pragma once
// The mapping of each fault action to its effects (faultline/proxy/effects.hpp): one explicit
// specialization of effects_of per action, each in its own file of this folder (<action>.cpp,
// built by glob). effects_of.cpp calls the one of the plan's action; an action without one does
// not link.

#include "faultline/proxy/effects.hpp"

namespace faultline::proxy::actions {

template <class Action>
Effects effects_of(const Action& action, const faults::Plan& plan);

// Effects one by one (Effects is a vector of a move-only variant: no initializer list).
template <class... E>
Effects sequence(E&&... effects) {
  Effects out;
  out.reserve(sizeof...(E));
  (out.emplace_back(std::forward<E>(effects)), ...);
  return out;
}

}  // namespace faultline::proxy::actions
