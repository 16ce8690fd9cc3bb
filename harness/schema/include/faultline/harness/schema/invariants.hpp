#pragma once
// The end-state invariants a scenario may ask the harness to check: their names, the order in which
// they are listed, which need YuniKorn's REST API, and which are checked when a scenario does not
// list any. This table is the only definition; the harness maps each entry to its check.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::harness::schema {

enum class Invariant {
  pods_bound,
  queue_accounting,
  no_orphan_allocations,
  no_unexpected_deletes,
  bound_to_live_node,
};

struct InvariantSpec {
  Invariant id;
  std::string_view name;
  bool needs_yunikorn;  // reads YuniKorn's REST API: skipped on another scheduler
  bool by_default;      // checked when the scenario leaves `checks.invariants` out
};

inline constexpr std::array<InvariantSpec, 5> invariant_specs{{
    {Invariant::pods_bound, "pods-bound", false, true},
    {Invariant::queue_accounting, "queue-accounting", true, false},
    {Invariant::no_orphan_allocations, "no-orphan-allocations", true, false},
    {Invariant::no_unexpected_deletes, "no-unexpected-deletes", false, true},
    {Invariant::bound_to_live_node, "bound-to-live-node", false, true},
}};

// nullptr for a name that is not an invariant.
const InvariantSpec* find_invariant(std::string_view name);

// Every invariant name, in table order.
std::vector<std::string> invariant_names();

// The names checked when a scenario leaves `checks.invariants` out, in table order.
std::vector<std::string> default_invariant_names();

}  // namespace faultline::harness::schema
