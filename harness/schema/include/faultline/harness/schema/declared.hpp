#pragma once
// Declared invariants (`checks.declared`): a scenario's own checks over the objects of any
// resource the harness watches, and the field paths they read. Parsed and bounded by the loader;
// faultline::harness watches the objects and evaluates them (declared_checks.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "faultline/faults/duration.hpp"

namespace faultline::harness::schema {

// A path into an object: dotted keys, `[N]` list indexes and `["key.with.dots"]` keys, e.g.
// spec.nodeName, metadata.ownerReferences[0].uid, metadata.labels["app.kubernetes.io/name"].
struct FieldPath {
  std::string text;                                           // as written
  std::vector<std::variant<std::string, std::size_t>> steps;  // a key or a list index
};

// The path, or nullopt with *problem saying what is wrong with it.
std::optional<FieldPath> parse_field_path(std::string_view text, std::string* problem);

inline constexpr std::size_t max_field_path_length = 256;
inline constexpr std::size_t max_declared_checks = 32;
inline constexpr std::size_t max_group_by = 8;
// Objects one declared check keeps track of; one more ends its watch with an error (no-data).
inline constexpr std::uint64_t max_declared_objects = 100'000;
inline constexpr std::uint64_t max_group_size = 100'000;  // atMostPerGroup.max

// The objects a declared check watches.
struct WatchSpec {
  std::string api_version;     // v1, apps/v1
  std::string resource;        // plural resource name: pods, daemonsets
  std::string namespace_;      // "" = the workload's namespace, "all" = every namespace
  std::string label_selector;  // "" = every object
  std::string group() const;   // "" for the core group (apiVersion v1), "apps" for apps/v1
  // The resource as the proxy's audit names it: daemonsets.apps, or pods for the core group.
  std::string audit_resource() const;
};

// At most `max` live objects share the same values of the `group_by` paths.
struct AtMostPerGroup {
  std::vector<FieldPath> group_by;
  std::uint64_t max = 1;
};

// Every object live at the end has `field` equal to `value` (or to the object's `equals_field`)
// at some moment no later than `within` after `after` (or after it was first seen, if later).
struct Reaches {
  enum class After { workload, last_fault };
  FieldPath field;
  std::optional<std::string> value;       // the JSON scalar as text: "3", "true", "Running"
  std::optional<FieldPath> equals_field;  // exactly one of value and equals_field
  faults::Duration within{0};
  After after = After::workload;
};

// No request of the listed verbs on the watched objects from a client whose user agent matches
// one of the patterns (`*` matches any text), as the proxy's audit saw them.
struct NoWriteBy {
  std::vector<std::string> user_agents;
  std::vector<std::string> verbs;
};

struct DeclaredCheck {
  std::string name;
  WatchSpec watch;
  std::variant<AtMostPerGroup, Reaches, NoWriteBy> kind;
};

// The verbs noWriteBy accepts.
inline constexpr std::string_view write_verbs[] = {"create", "update", "patch", "delete", "deletecollection"};

}  // namespace faultline::harness::schema
