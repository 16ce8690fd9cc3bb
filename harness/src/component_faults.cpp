#include "faultline/harness/component_faults.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <boost/asio/detached.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "faultline/faults/request.hpp"
#include "faultline/harness/poll.hpp"

extern char** environ;

#include "faultline/harness/gcc12_coroutine_frames.hpp"

namespace faultline::harness {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kPoll{100};

std::string seconds_text(faults::Clock::duration d) {
  return fmt::format("{:.1f}s", std::chrono::duration<double>(d).count());
}

// The last `lines` lines of a file (the stack script's output after a failure).
std::string tail_of(const std::filesystem::path& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    kept.push_back(line.substr(0, 300));
    if (kept.size() > lines) kept.erase(kept.begin());
  }
  std::string out;
  for (const auto& l : kept) out += (out.empty() ? "" : " | ") + l;
  return out;
}

bool stopped(char state) { return state == 'T' || state == 't'; }
bool not_stopped(char state) { return state != 'T' && state != 't'; }
bool exited(char state) { return state == '\0' || state == 'Z' || state == 'X'; }

// An audit record as the engine would have seen the request (method, path, User-Agent).
faults::Request request_of(const AuditRecord& r) {
  return faults::make_request(r.method, r.path, {{"User-Agent", r.user_agent}});
}

}  // namespace

StackProcesses::StackProcesses(std::filesystem::path run_dir, std::filesystem::path stack_script,
                               std::filesystem::path log, const faults::Clock& clock)
    : run_dir_(std::move(run_dir)), script_(std::move(stack_script)), log_(std::move(log)), clock_(clock) {}

char StackProcesses::state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return '\0';
  auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= stat.size()) return '\0';
  return stat[close + 2];
}

int StackProcesses::pid(std::string_view component) const {
  const auto file = run_dir_ / "pids" / std::string(component);
  std::ifstream in(file);
  long pid = 0;
  std::string start;
  if (!(in >> pid >> start) || pid <= 0)
    throw std::runtime_error(std::string(component) + ": no pid in " + file.string() + " (is the stack up?)");
  std::ifstream stat_in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(stat_in, stat);
  // Fields after "(comm)": state is the 1st, starttime the 20th.
  auto close = stat.rfind(')');
  std::istringstream fields(close == std::string::npos ? std::string() : stat.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
  if (f.size() < 20 || f[19] != start || exited(f[0][0]))
    throw std::runtime_error(std::string(component) + " is not running (pid " + std::to_string(pid) + " of " +
                             file.string() + " is gone)");
  return static_cast<int>(pid);
}

int StackProcesses::signal(std::string_view component, int sig) const {
  int p = pid(component);
  if (::kill(p, sig) != 0)
    throw std::runtime_error(
        fmt::format("{}: kill({}, {}) failed: {}", component, p, sigabbrev_np(sig), std::strerror(errno)));
  return p;
}

asio::awaitable<void> StackProcesses::await_state(int pid, bool (*done)(char), milliseconds limit,
                                                  const std::string& what) const {
  co_await poll_until(
      clock_, {limit, milliseconds(20)}, [&]() -> asio::awaitable<bool> { co_return done(state(pid)); },
      [&] { return what; });
}

asio::awaitable<void> StackProcesses::run_stack(std::string_view command, std::string_view component,
                                                seconds timeout) const {
  std::vector<std::string> args{script_.string(),  std::string(command), std::string(component),         "--run-dir",
                                run_dir_.string(), "--timeout",          std::to_string(timeout.count())};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  {
    std::ofstream log(log_, std::ios::app);
    log << "$";
    for (const auto& a : args) log << " " << a;
    log << "\n";
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, log_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  pid_t child = 0;
  int rc = ::posix_spawn(&child, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  const std::string what = script_.filename().string() + " " + std::string(command) + " " + std::string(component);
  if (rc != 0) throw std::runtime_error(what + ": cannot run " + script_.string() + ": " + std::strerror(rc));
  // The script bounds its own wait (--timeout); this bound only catches a script that hangs.
  int status = 0;
  const auto exited = [&]() -> asio::awaitable<bool> {
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done < 0 && errno != EINTR) throw std::runtime_error(what + ": waitpid: " + std::strerror(errno));
    co_return done == child;
  };
  const auto hung = [&] {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    return what + ": did not finish within " + std::to_string(timeout.count() + 30) + "s";
  };
  co_await poll_until(clock_, {timeout + seconds(30), kPoll}, exited, hung);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(
        what + " failed (" +
        (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed")) +
        "): " + tail_of(log_, 6));
}

ComponentFaults::ComponentFaults(asio::any_io_executor executor, std::vector<schema::ComponentFault> faults,
                                 StackProcesses& stack, ProxyAdmin* proxy, const faults::Clock& clock,
                                 ProgressFn progress)
    : executor_(executor),
      faults_(std::move(faults)),
      stack_(stack),
      proxy_(proxy),
      clock_(clock),
      progress_(std::move(progress)),
      matched_(faults_.size(), 0),
      fired_(faults_.size(), false),
      triggers_(executor) {
  for (const auto& f : faults_)
    if (f.trigger && proxy_ == nullptr)
      throw std::runtime_error("component fault '" + f.name +
                               "' counts requests at the proxy (afterMatches), but no proxy admin URL was given");
}

asio::awaitable<void> ComponentFaults::start() {
  armed_ = clock_.now();
  armed_wall_ = WallClock::now();
  if (proxy_ != nullptr) audit_since_ = co_await proxy_->audit_head();
  triggers_.start(watch_triggers());
}

asio::awaitable<void> ComponentFaults::count_requests() {
  audit::DecodedLines batch;
  try {
    co_await proxy_->read_audit(audit_since_, batch);
    count_error_.clear();
  } catch (const std::exception& e) {
    count_error_ = e.what();  // the next poll tries again; a fault that never fires says why
  }
  for (const auto& record : batch.records) {
    std::optional<faults::Request> request;
    for (std::size_t i = 0; i < faults_.size(); ++i) {
      const auto& f = faults_[i];
      if (fired_[i] || !f.trigger || record.ts < armed_wall_ + f.at) continue;
      if (!request) request = request_of(record);
      if (f.trigger->of.matches(*request)) ++matched_[i];
    }
  }
}

asio::awaitable<void> ComponentFaults::watch_triggers() {
  const bool counting =
      std::any_of(faults_.begin(), faults_.end(), [](const auto& f) { return f.trigger.has_value(); });
  for (;;) {
    if (counting && std::find(fired_.begin(), fired_.end(), false) != fired_.end()) co_await count_requests();
    const auto since_arm = std::chrono::duration_cast<faults::Duration>(clock_.now() - armed_);
    for (std::size_t i = 0; i < faults_.size(); ++i) {
      if (fired_[i] || !schema::component_fault_due(faults_[i], since_arm, matched_[i])) continue;
      fired_[i] = true;
      ++in_flight_;
      // Not cancelled with the trigger watch: a killed component is always started again.
      asio::co_spawn(executor_, carry_out(i), asio::detached);
    }
    if (std::find(fired_.begin(), fired_.end(), false) == fired_.end()) co_return;
    co_await sleep_for(milliseconds(200));
  }
}

asio::awaitable<void> ComponentFaults::carry_out(std::size_t index) {
  const auto& fault = faults_[index];
  StepRecord record;
  record.name = fault.name;
  record.kind = std::string(schema::name_of(fault.action));
  record.target = std::string(schema::name_of(fault.target));
  record.started = WallClock::now();
  progress_("component fault " + fault.name + ": " + record.kind + " " + record.target, true);
  try {
    co_await act(fault, record);
  } catch (const std::exception& e) {
    record.error = "component fault " + fault.name + " (" + record.kind + " " + record.target + "): " + e.what();
  }
  if (!record.error.empty()) progress_(record.error, true);
  records_.push_back(std::move(record));
  --in_flight_;
}

asio::awaitable<void> ComponentFaults::act(const schema::ComponentFault& fault, StepRecord& record) {
  const std::string target(schema::name_of(fault.target));
  // Generous: kube-apiserver reaches /readyz in 4 to 15 s on this loaded machine.
  const seconds start_timeout{120};
  const auto t0 = clock_.now();
  switch (fault.action) {
    case schema::ComponentAction::kill: {
      int pid = stack_.signal(target, SIGKILL);
      const std::string still_runs = target + " (pid " + std::to_string(pid) + ") still runs 10s after SIGKILL";
      co_await stack_.await_state(pid, exited, seconds(10), still_runs);
      record.detail = "SIGKILL to pid " + std::to_string(pid);
      co_await sleep_for(*fault.down_for);
      co_await stack_.run_stack("start", target, start_timeout);
      record.recovered = WallClock::now();
      record.detail += fmt::format("; started again after {} (pid {}), healthy {} after the kill",
                                   seconds_text(*fault.down_for), stack_.pid(target), seconds_text(clock_.now() - t0));
      break;
    }
    case schema::ComponentAction::pause: {
      int pid = stack_.signal(target, SIGSTOP);
      paused_[target] = pid;
      const std::string not_stopped_yet = target + " (pid " + std::to_string(pid) + ") not stopped 5s after SIGSTOP";
      co_await stack_.await_state(pid, stopped, seconds(5), not_stopped_yet);
      record.detail = "SIGSTOP to pid " + std::to_string(pid) + ", state T";
      if (!fault.down_for) {
        record.detail += "; stopped until a resume";
        break;
      }
      co_await sleep_for(*fault.down_for);
      if (::kill(pid, SIGCONT) != 0) throw std::runtime_error("SIGCONT to pid " + std::to_string(pid) + " failed");
      paused_.erase(target);
      const std::string still_stopped = target + " (pid " + std::to_string(pid) + ") still stopped 5s after SIGCONT";
      co_await stack_.await_state(pid, not_stopped, seconds(5), still_stopped);
      record.recovered = WallClock::now();
      record.detail += "; SIGCONT after " + seconds_text(*fault.down_for) + ", running again";
      break;
    }
    case schema::ComponentAction::resume: {
      int pid = stack_.signal(target, SIGCONT);
      paused_.erase(target);
      const std::string still_stopped = target + " (pid " + std::to_string(pid) + ") still stopped 5s after SIGCONT";
      co_await stack_.await_state(pid, not_stopped, seconds(5), still_stopped);
      record.recovered = WallClock::now();
      record.detail = "SIGCONT to pid " + std::to_string(pid) + ", running again";
      break;
    }
    case schema::ComponentAction::restart: {
      int pid = stack_.pid(target);
      co_await stack_.run_stack("restart", target, start_timeout);
      record.recovered = WallClock::now();
      record.detail = fmt::format("pid {} stopped (SIGTERM) and started again (pid {}), healthy after {}", pid,
                                  stack_.pid(target), seconds_text(clock_.now() - t0));
      break;
    }
  }
}

asio::awaitable<std::vector<StepRecord>> ComponentFaults::finish() {
  co_await triggers_.stop();
  while (in_flight_ > 0) co_await sleep_for(kPoll);
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (fired_[i]) continue;
    const auto& f = faults_[i];
    StepRecord never{f.name,
                     std::string(schema::name_of(f.action)),
                     std::string(schema::name_of(f.target)),
                     WallClock::now(),
                     std::nullopt,
                     "",
                     ""};
    never.error = "component fault " + f.name + " never fired";
    if (f.trigger)
      never.error += fmt::format(" ({} of the {} requests its afterMatches waits for were seen at the proxy)",
                                 matched_[i], f.trigger->after_matches);
    else never.error += " (the run ended before its `at`)";
    if (!count_error_.empty()) never.error += "; the last read of the proxy's audit log failed: " + count_error_;
    records_.push_back(std::move(never));
  }
  // A pause whose resume never came: the stack must not be left with a stopped component.
  for (const auto& [component, pid] : paused_) {
    ::kill(pid, SIGCONT);
    StepRecord resumed{"(end of run)", "resume", component, WallClock::now(), WallClock::now(), "", ""};
    resumed.error = component + " (pid " + std::to_string(pid) + ") was still paused at the end of the run: resumed";
    records_.push_back(std::move(resumed));
  }
  paused_.clear();
  std::stable_sort(records_.begin(), records_.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.started < b.started; });
  co_return records_;
}

}  // namespace faultline::harness
