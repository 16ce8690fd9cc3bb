#pragma once
// Component faults (scenario key `componentFaults`) carried out on the local stack's processes:
// kill (SIGKILL, started again after downFor), pause (SIGSTOP, SIGCONT after downFor or at a
// resume), resume (SIGCONT), restart (SIGTERM, started again). scripts/stack records each
// component's pid (DIR/pids/NAME: "pid starttime") and command line; `scripts/stack start|restart
// NAME` starts it again exactly as `up` did and waits until it is healthy.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/faults/clock.hpp"
#include "faultline/harness/async.hpp"
#include "faultline/harness/report.hpp"
#include "faultline/harness/schema/component_fault.hpp"
#include "faultline/harness/services.hpp"
#include "faultline/harness/workload.hpp"

namespace faultline::harness {

class StackProcesses {
 public:
  // run_dir: the stack's run directory; stack_script: scripts/stack; log: where the script's
  // output goes (appended).
  StackProcesses(std::filesystem::path run_dir, std::filesystem::path stack_script, std::filesystem::path log,
                 const faults::Clock& clock);

  // The pid of a running component: the process of DIR/pids/NAME, if it is still the one the
  // stack started (same start time) and not a zombie. Throws naming the component otherwise.
  int pid(std::string_view component) const;
  // The state letter of /proc/PID/stat (R, S, D, T, Z, ...), '\0' when there is no such process.
  static char state(int pid);
  // Sends `signal` to the component's process; throws when it is not running or kill(2) fails.
  int signal(std::string_view component, int signal) const;
  // Polls /proc until the process's state satisfies `done` (state '\0' when gone), at most `limit`;
  // throws `what` after that.
  asio::awaitable<void> await_state(int pid, bool (*done)(char), std::chrono::milliseconds limit,
                                    const std::string& what) const;
  // `scripts/stack COMMAND NAME --run-dir DIR --timeout S`; throws with the end of its output when it fails.
  asio::awaitable<void> run_stack(std::string_view command, std::string_view component,
                                  std::chrono::seconds timeout) const;

  const std::filesystem::path& run_dir() const { return run_dir_; }

 private:
  std::filesystem::path run_dir_;
  std::filesystem::path script_;
  std::filesystem::path log_;
  const faults::Clock& clock_;
};

class ComponentFaults {
 public:
  // `proxy` counts the requests of afterMatches triggers (its audit log); it may be null when no
  // fault has a trigger.
  ComponentFaults(asio::any_io_executor executor, std::vector<schema::ComponentFault> faults, StackProcesses& stack,
                  ProxyAdmin* proxy, const faults::Clock& clock, ProgressFn progress);

  // Time zero of the faults' `at` (the proxy was just armed); starts watching the triggers.
  asio::awaitable<void> start();
  // A fault is being carried out (a component is down or paused until its downFor ends).
  bool busy() const { return in_flight_ > 0; }
  // Stops watching triggers, waits for the faults under way, resumes a component still paused, and
  // returns what was done, in the order the faults fired. A fault that never fired, or could not be
  // carried out, has an error.
  asio::awaitable<std::vector<StepRecord>> finish();

 private:
  asio::awaitable<void> watch_triggers();
  asio::awaitable<void> count_requests();
  asio::awaitable<void> carry_out(std::size_t index);
  asio::awaitable<void> act(const schema::ComponentFault& fault, StepRecord& record);

  asio::any_io_executor executor_;
  std::vector<schema::ComponentFault> faults_;
  StackProcesses& stack_;
  ProxyAdmin* proxy_;
  const faults::Clock& clock_;
  ProgressFn progress_;
  faults::Clock::time_point armed_{};
  WallTime armed_wall_{};
  std::uint64_t audit_since_ = 0;
  std::vector<std::uint64_t> matched_;  // per fault: requests matching its trigger since its `at`
  std::vector<bool> fired_;
  std::map<std::string, int> paused_;  // component -> pid stopped and not resumed yet
  std::vector<StepRecord> records_;
  int in_flight_ = 0;
  std::string count_error_;  // the last failed read of the proxy's audit log
  BackgroundTask triggers_;
};

}  // namespace faultline::harness
