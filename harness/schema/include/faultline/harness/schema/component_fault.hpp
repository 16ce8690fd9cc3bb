#pragma once
// Component faults (scenario key `componentFaults`): what the harness does to a process of the
// local stack (kill, pause, resume, restart), and when. The harness carries them out; the proxy
// ignores them. Pure model: names, validation and the trigger decision, no I/O.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/rule.hpp"

namespace faultline::harness::schema {

// The processes a component fault may act on, by the names of their pid files in the stack's run
// dir (DIR/pids/NAME): scripts/stack's, and `airflow-scheduler`, the first Airflow scheduler that
// scripts/airflow starts (pause and resume only: the stack cannot start it again).
enum class Component { kube_apiserver, scheduler, kwok, etcd, airflow_scheduler };
inline constexpr std::array<std::string_view, 5> component_names{"kube-apiserver", "scheduler", "kwok", "etcd",
                                                                 "airflow-scheduler"};

enum class ComponentAction {
  kill,     // SIGKILL; started again (same command line) after downFor
  pause,    // SIGSTOP; SIGCONT after downFor, or at a later `resume` of the same target
  resume,   // SIGCONT
  restart,  // SIGTERM, then started again and awaited healthy
};
inline constexpr std::array<std::string_view, 4> component_action_names{"kill", "pause", "resume", "restart"};

std::string_view name_of(Component c);
std::string_view name_of(ComponentAction a);

// Why `target` cannot take `action`, as error message text; "" when it can. airflow-scheduler is
// paused and resumed only: nothing can start it again after a kill or restart.
std::string component_action_problem(Component target, ComponentAction action);

struct ComponentFault {
  std::string name;
  Component target = Component::kube_apiserver;
  ComponentAction action = ComponentAction::kill;
  std::optional<faults::Duration> down_for;  // kill: required; pause: optional; others: none
  faults::Duration at{0};                    // not before this long after the proxy was armed
  std::optional<faults::Trigger> trigger;    // and (if set) once this many requests matching `of` were seen after `at`
};

// A component `faultline-harness explore` kills or pauses (a system file's explore.components):
// right after its own writes (those of `user_agents`), and right after the first request of a peer
// that started during the reference run.
struct ExploreComponent {
  Component target = Component::scheduler;
  std::vector<std::string> user_agents;    // globs of the User-Agent of its own requests
  std::vector<ComponentAction> actions;    // kill | pause, each one the target takes
  std::vector<faults::Duration> down_for;  // each length a plan of its own

  friend bool operator==(const ExploreComponent&, const ExploreComponent&) = default;
};

// Whether `fault` is due `since_arm` after arming, having seen `matched` requests matching its
// trigger's `of` since `at` (ignored without a trigger).
bool component_fault_due(const ComponentFault& fault, faults::Duration since_arm, std::uint64_t matched);

}  // namespace faultline::harness::schema
