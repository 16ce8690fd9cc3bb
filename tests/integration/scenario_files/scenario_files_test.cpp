// Scenario input against the real binaries. `faultline-harness validate` and faultline-proxy
// (--scenario at start-up, and the admin API through curl) get the inputs that used to crash them,
// block them or make them take gigabytes, and must answer each with a located error.
//
// Every child runs with a capped address space (not under AddressSanitizer, which reserves
// terabytes): an input that expands without bound then fails the test quickly with bad_alloc
// instead of exhausting the machine. A guard kills a child that never returns (a FIFO open that
// waits for a writer); the guard is a failure, not a timing measurement.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "faultline/net/certs.hpp"
#include "proxy_process.hpp"
#include "sanitizers.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using faultline::testing::ProxyProcess;
using faultline::testing::TempDir;
using namespace std::chrono_literals;

using faultline::testing::kAddressSanitizer;

// Far more than either program needs for any accepted scenario; far less than an alias bomb's
// expansion.
constexpr rlim_t kAddressSpace = rlim_t{2} << 30;

fs::path harness_binary() {
  if (const char* env = std::getenv("FAULTLINE_HARNESS_BIN"); env && *env) return env;
  return fs::path(FAULTLINE_BINARY_DIR) / "harness" / "faultline-harness";
}

std::string bad_file(const char* name) { return std::string(FAULTLINE_TEST_DATA_DIR) + "/scenarios/bad/" + name; }

using faultline::net::write_file;
using faultline::testing::slurp;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Lowers this process's soft address-space limit while alive, so children started meanwhile
// (ProxyProcess) inherit it.
class AddressSpaceLimit {
 public:
  AddressSpaceLimit() {
    if (kAddressSanitizer) return;
    ::getrlimit(RLIMIT_AS, &saved_);
    rlimit lower = saved_;
    lower.rlim_cur = std::min<rlim_t>(kAddressSpace, saved_.rlim_max);
    active_ = ::setrlimit(RLIMIT_AS, &lower) == 0;
  }
  ~AddressSpaceLimit() {
    if (active_) ::setrlimit(RLIMIT_AS, &saved_);
  }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_{};
  bool active_ = false;
};

struct Finished {
  int exit_code = -1;  // -1 when ended by a signal
  int signal = 0;
  bool guard_fired = false;
  std::string output;  // stdout and stderr
};

std::ostream& operator<<(std::ostream& out, const Finished& f) {
  return out << "exit " << f.exit_code << ", signal " << f.signal << (f.guard_fired ? ", killed by the guard" : "")
             << ", output:\n"
             << f.output.substr(0, 4000);
}

// Runs `argv` with stdin from /dev/null, stdout and stderr to `output`, the address space capped.
Finished run(const std::vector<std::string>& argv, const fs::path& output, std::chrono::seconds guard = 120s) {
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!kAddressSanitizer) {
      rlimit limit{kAddressSpace, kAddressSpace};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  Finished finished;
  if (pid < 0) return finished;
  const auto deadline = std::chrono::steady_clock::now() + guard;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      finished.guard_fired = true;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  if (WIFEXITED(status)) finished.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) finished.signal = WTERMSIG(status);
  finished.output = slurp(output);
  return finished;
}

// ---- faultline-harness validate -----------------------------------------------------------------

class HarnessValidate : public ::testing::Test {
 protected:
  Finished validate(const std::string& file, std::chrono::seconds guard = 120s) {
    return run({harness_binary().string(), "validate", file}, dir_.path() / "validate.out", guard);
  }
  TempDir dir_{"faultline-validate"};
};

TEST_F(HarnessValidate, AliasBombIsRefusedAtItsAnchorsAndAliases) {
  const std::string file = bad_file("alias-bomb.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  auto lines = lines_of(f.output);
  ASSERT_EQ(lines.size(), 51u) << f;
  EXPECT_EQ(lines[0],
            file + R"(:10:12: anchors are not supported in scenario files ("&a"): write the value out in full)");
  EXPECT_EQ(lines[50], file + ": ... and 31 more errors (only the first 50 are listed)");
}

TEST_F(HarnessValidate, ScalarAliasesInStringListsAreRefused) {
  const std::string file = bad_file("alias-strings.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_NE(f.output.find(file + R"(:8:15: aliases are not supported in scenario files ("*ua"))"), std::string::npos)
      << f;
}

TEST_F(HarnessValidate, DevZeroIsNotARegularFile) {
  Finished f = validate("/dev/zero");
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output,
            "/dev/zero: not a regular file (a character device): a scenario is read from a regular file only\n");
}

TEST_F(HarnessValidate, AFifoWithoutAWriterIsRefusedAtOnce) {
  const fs::path fifo = dir_.path() / "scenario.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Finished f = validate(fifo.string(), 30s);
  EXPECT_FALSE(f.guard_fired) << "validate waited for a writer";
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output, fifo.string() + ": not a regular file (a FIFO): a scenario is read from a regular file only\n");
}

TEST_F(HarnessValidate, AFiftyMegabyteFileIsRefusedUnread) {
  const fs::path file = dir_.path() / "big.yaml";
  {
    std::ofstream out(file, std::ios::binary);
    out << "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: big}\n";
    for (int i = 0; out.tellp() < 50'000'000; ++i) out << "unknown" << i << ": 1\n";
  }
  Finished f = validate(file.string());
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output, file.string() + ": the file is " + std::to_string(fs::file_size(file)) +
                          " bytes; the maximum is 1048576 bytes (1 MiB)\n");
}

TEST_F(HarnessValidate, AtMostFiftyErrorsAreListed) {
  const fs::path file = dir_.path() / "many.yaml";
  std::string text = "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: many}\n";
  // 40,000 keys: 80,000 values, within the limit of 100,000, so each key is an error of its own.
  const int keys = 40'000;
  for (int i = 0; i < keys; ++i) text += "unknown" + std::to_string(i) + ": 1\n";
  write_file(file, text);
  Finished f = validate(file.string());
  EXPECT_EQ(f.exit_code, 2) << f;
  auto lines = lines_of(f.output);
  ASSERT_EQ(lines.size(), 51u) << f;
  EXPECT_EQ(lines[50],
            file.string() + ": ... and " + std::to_string(keys - 50) + " more errors (only the first 50 are listed)");
}

TEST_F(HarnessValidate, InvalidUtf8IsRefusedWithItsPosition) {
  const std::string file = bad_file("invalid-utf8.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output, file + ":5:19: invalid UTF-8 (byte 0xE9): a scenario is UTF-8 text\n");
}

TEST_F(HarnessValidate, DurationsBeyondAYearAreRefused) {
  const std::string file = bad_file("too-long-durations.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_NE(
      f.output.find(file +
                    R"(:6:16: faults[0].when.at: duration "2562048h" is longer than the maximum of 8760h (365 days))"),
      std::string::npos)
      << f;
}

TEST_F(HarnessValidate, ASecondDocumentIsRefusedAtItsStart) {
  const std::string file = bad_file("two-documents.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output, file +
                          R"(:7:1: a second YAML document: a file holds one scenario (or matrix); remove this "---" )"
                          "and what follows, or put it in a file of its own\n");
}

TEST_F(HarnessValidate, UnboundedWorkloadsAreRefused) {
  const std::string file = bad_file("unbounded-workload.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  for (const char* error : {":5:18: workload.nodes.count: must be at most 100000 nodes, got 99999999999",
                            ":7:23: workload.phases[0].pods: must be at most 200000 pods, got 99999999999999",
                            ":7:45: workload.phases[0].rate: must be at most 10000 pods per second, got 1e308",
                            ":7:65: workload.phases[0].concurrency: must be at most 256, got 4294967297"})
    EXPECT_NE(f.output.find(file + error), std::string::npos) << error << "\n" << f;
}

// System files (docs/systems.md) through the binary: `validate` recognises kind: System, `system`
// prints the JSON scripts/stack reads, with the placeholders of --set filled, and refuses what
// `validate` refuses.
TEST_F(HarnessValidate, SystemFilesAreValidatedAndPrintedAsJson) {
  const fs::path shipped = fs::path(FAULTLINE_SOURCE_DIR) / "harness" / "systems";
  for (const char* name : {"yunikorn", "kube-scheduler", "kube-controller-manager"}) {
    const std::string file = (shipped / (std::string(name) + ".yaml")).string();
    Finished f = validate(file);
    EXPECT_EQ(f.exit_code, 0) << f;
    EXPECT_NE(f.output.find(": ok (system " + std::string(name)), std::string::npos) << f;
  }
  Finished printed = run({harness_binary().string(), "system", "kube-scheduler", "--systems-dir", shipped.string(),
                          "--set", "port=10259", "--set", "kubeconfig=/k"},
                         dir_.path() / "system.out");
  ASSERT_EQ(printed.exit_code, 0) << printed;
  const auto doc = boost::json::parse(printed.output);
  EXPECT_EQ(doc.at("name").as_string(), "kube-scheduler");
  EXPECT_EQ(doc.at("ready").at("https").as_string(), "https://127.0.0.1:10259/readyz");
  EXPECT_EQ(doc.at("command").at(1).as_string(), "--kubeconfig=/k");
  EXPECT_EQ(doc.at("scheduler").at("name").as_string(), "default-scheduler");

  const fs::path bad = dir_.path() / "bad-system.yaml";
  write_file(bad,
             "apiVersion: faultline/v1\nkind: System\nmetadata: {name: x}\nidentity: {user: u}\n"
             "command: ['{bni}']\nready: {http: 'http://127.0.0.1:{port}/'}\n");
  for (const auto& argv : {std::vector<std::string>{harness_binary().string(), "validate", bad.string()},
                           std::vector<std::string>{harness_binary().string(), "system", bad.string()}}) {
    Finished f = run(argv, dir_.path() / "bad.out");
    EXPECT_EQ(f.exit_code, 2) << f;
    EXPECT_EQ(lines_of(f.output),
              std::vector<std::string>{bad.string() + ":5:11: command[0]: unknown placeholder {bni} (known: "
                                                      "{kubeconfig}, {workdir}, {port}, {bin}, {ca}, {system_dir}, "
                                                      "{run_dir}, {nodes}, {name}; write {{ for a literal {)"})
        << f;
  }
  Finished zero = run({harness_binary().string(), "system", "/dev/zero"}, dir_.path() / "zero.out");
  EXPECT_EQ(zero.exit_code, 2) << zero;
}

// Escapes in quoted YAML strings (\n, \e) put any character into a value; the errors that quote
// it stay one line each, without terminal control sequences.
TEST_F(HarnessValidate, ErrorsQuotingEscapedTextStayOneLineEach) {
  const std::string file = bad_file("escapes-in-errors.yaml");
  Finished f = validate(file);
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output.find('\x1b'), std::string::npos) << f;
  for (const auto& line : lines_of(f.output)) EXPECT_TRUE(line.starts_with(file + ":")) << line;
  EXPECT_NE(f.output.find(R"(must be "Scenario", got "Sc\nenery \x1b[31m")"), std::string::npos) << f;
}

// A scenario's name reaches the harness's console (progress, summary) and its default report
// directory (.run/reports/<name>-<time>): it forges no line, drives no terminal and picks no
// other directory. The run itself fails at once (no kubeconfig); its reports are still written.
TEST_F(HarnessValidate, AScenarioNameNeitherForgesLinesNorPicksTheReportDirectory) {
  const fs::path work = dir_.path() / "work";
  fs::create_directories(work);
  write_file(work / "forge.yaml",
             "apiVersion: faultline/v1\nkind: Scenario\nmetadata:\n"
             "  name: \"../../escaped\\nfake line \\e[31mred\"\n"
             "workload: {nodes: {count: 1}, phases: [{name: p, pods: 1}]}\n");
  Finished f = run({"/bin/sh", "-c",
                    "cd " + work.string() + " && exec " + harness_binary().string() +
                        " run forge.yaml --scheduler kube-scheduler --kubeconfig " + (work / "none").string()},
                   dir_.path() / "run.out");
  EXPECT_EQ(f.exit_code, 2) << f;
  EXPECT_EQ(f.output.find('\x1b'), std::string::npos) << f;
  for (const auto& line : lines_of(f.output)) EXPECT_FALSE(line.starts_with("fake")) << "a forged line: " << line;
  EXPECT_NE(f.output.find(R"(faultline: ../../escaped\nfake line \x1b[31mred on kube-scheduler)"), std::string::npos)
      << f;
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(work)) entries.push_back(entry.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{".run", "forge.yaml"}));
  std::vector<fs::path> reports;
  if (fs::exists(work / ".run" / "reports"))
    for (const auto& entry : fs::directory_iterator(work / ".run" / "reports")) reports.push_back(entry.path());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].filename().string().starts_with("_._.._escaped_fake_line___31mred-")) << reports[0];
  EXPECT_TRUE(fs::exists(reports[0] / "report.json")) << reports[0];
}

// ---- faultline-proxy ----------------------------------------------------------------------------

// The admin API needs no upstream traffic: the upstream is an address nobody is asked.
const std::vector<std::string> kUpstream = {"--upstream", "https://127.0.0.1:9", "--upstream-insecure"};

TEST(ProxyStart, AliasBombScenarioIsRefusedAtStartUp) {
  TempDir dir("faultline-proxy-start");
  const std::string file = bad_file("alias-bomb.yaml");
  std::vector<std::string> argv = {faultline::testing::proxy_binary().string(),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--admin",
                                   "127.0.0.1:0",
                                   "--scenario",
                                   file};
  argv.insert(argv.end(), kUpstream.begin(), kUpstream.end());
  Finished f = run(argv, dir.path() / "proxy.out");
  EXPECT_EQ(f.exit_code, 1) << f;
  EXPECT_NE(f.output.find(file +
                          R"(:10:12: anchors are not supported in scenario files ("&a"): write the value out in full)"),
            std::string::npos)
      << f;
  EXPECT_NE(f.output.find("faultline-proxy: invalid scenario " + file), std::string::npos) << f;
}

// A scenario whose name, written with YAML escapes, holds a line break and a terminal escape.
const std::string kForgingName = R"(inj\nfake 2026 info line \e[31mred)";
std::string forging_scenario() {
  return "apiVersion: faultline/v1\nkind: Scenario\nmetadata:\n  name: \"" + kForgingName +
         "\"\nfaults:\n  - {name: \"r\\nforged rule\", action: {type: reset}}\n";
}

// Every line of the proxy's log starts with its timestamp; nothing a scenario names starts a line
// of its own or reaches the terminal as a control sequence.
void expect_log_not_forged(const std::string& log) {
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  for (const auto& line : lines_of(log)) EXPECT_TRUE(line.starts_with("20")) << "a forged line: " << line;
  EXPECT_NE(log.find(R"(scenario 'inj\nfake 2026 info line \x1b[31mred' loaded)"), std::string::npos) << log;
}

TEST(ProxyStart, ScenarioNamesCannotForgeLogLines) {
  TempDir dir("faultline-proxy-forge");
  const fs::path file = dir.path() / "forge.yaml";
  write_file(file, forging_scenario());
  std::vector<std::string> args = kUpstream;
  args.insert(args.end(), {"--scenario", file.string(), "--arm"});
  ProxyProcess proxy(dir.path(), "proxy", args);
  const std::string log = proxy.log();
  proxy.stop();
  expect_log_not_forged(log);
}

struct Answer {
  int status = 0;  // 0: no HTTP answer (the proxy died)
  std::string body;
};

class AdminApi : public ::testing::Test {
 protected:
  void SetUp() override {
    AddressSpaceLimit limit;
    proxy_ = std::make_unique<ProxyProcess>(dir_.path(), "proxy", kUpstream);
  }

  // curl, the body (if any) from a file.
  Answer request(const std::string& method, const std::string& target, const std::optional<std::string>& body = {},
                 const std::string& content_type = "application/yaml") {
    const fs::path body_in = dir_.path() / "request.body", body_out = dir_.path() / "response.body";
    fs::remove(body_out);
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "-o",   body_out.string(), "-w",
                                     "%{http_code}",  "-X",  method, "--max-time",      "60"};
    if (body) {
      write_file(body_in, *body);
      argv.insert(argv.end(), {"-H", "Content-Type: " + content_type, "--data-binary", "@" + body_in.string()});
    }
    argv.push_back("http://" + proxy_->admin() + target);
    Finished f = run(argv, dir_.path() / "curl.out");
    Answer answer;
    answer.status = std::atoi(f.output.c_str());
    answer.body = slurp(body_out);
    return answer;
  }

  // The error lines of a 400 from PUT /v1/scenario.
  static std::vector<std::string> errors_of(const Answer& answer) {
    std::vector<std::string> out;
    json::value v = json::parse(answer.body);
    for (const auto& e : v.at("errors").as_array()) out.emplace_back(e.as_string());
    return out;
  }

  TempDir dir_{"faultline-admin-scenario"};
  std::unique_ptr<ProxyProcess> proxy_;
};

const std::string kHeader = "apiVersion: faultline/v1\nkind: Scenario\n";

TEST_F(AdminApi, AFiftyThousandDigitDescriptionComesBackAsValidJson) {
  const std::string digits(50'000, '9');
  Answer put = request("PUT", "/v1/scenario", kHeader + "metadata:\n  name: digits\n  description: " + digits + "\n");
  ASSERT_EQ(put.status, 200) << put.body;
  Answer get = request("GET", "/v1/scenario?format=json");
  ASSERT_EQ(get.status, 200) << "the proxy died: " << proxy_->log().substr(0, 2000);
  json::value scenario = json::parse(get.body);
  EXPECT_EQ(scenario.at("metadata").at("description"), json::value(digits));
  EXPECT_EQ(scenario.at("metadata").at("name"), json::value("digits"));
}

TEST_F(AdminApi, AliasBombIsRefusedAndMemoryStaysBounded) {
  Answer put = request("PUT", "/v1/scenario", slurp(bad_file("alias-bomb.yaml")));
  ASSERT_EQ(put.status, 400) << put.body << proxy_->log().substr(0, 2000);
  auto errors = errors_of(put);
  ASSERT_EQ(errors.size(), 51u);
  EXPECT_EQ(
      errors[0],
      R"(PUT /v1/scenario:10:12: anchors are not supported in scenario files ("&a"): write the value out in full)");
  Answer strings = request("PUT", "/v1/scenario", slurp(bad_file("alias-strings.yaml")));
  EXPECT_EQ(strings.status, 400) << strings.body;
  EXPECT_EQ(request("GET", "/v1/scenario").status, 404);  // nothing was loaded
  // The expansion would need gigabytes; the refusal needs next to nothing.
  EXPECT_LT(proxy_->peak_rss_kib(), 256u * 1024);
}

TEST_F(AdminApi, ScenarioNamesCannotForgeLogLines) {
  Answer put = request("PUT", "/v1/scenario", forging_scenario());
  ASSERT_EQ(put.status, 200) << put.body;
  ASSERT_EQ(request("POST", "/v1/arm").status, 200);
  expect_log_not_forged(proxy_->log());
}

TEST_F(AdminApi, ASecondDocumentIsRefusedAtItsStart) {
  Answer put = request("PUT", "/v1/scenario", slurp(bad_file("two-documents.yaml")));
  ASSERT_EQ(put.status, 400) << put.body;
  EXPECT_EQ(errors_of(put), std::vector<std::string>{
                                R"(PUT /v1/scenario:7:1: a second YAML document: a file holds one scenario )"
                                R"((or matrix); remove this "---" and what follows, or put it in a file of its own)"});
  EXPECT_EQ(request("GET", "/v1/scenario").status, 404);  // nothing was loaded
}

TEST_F(AdminApi, ABodyOverOneMebibyteIsRefused) {
  const std::string body = kHeader + "metadata: {name: big}\n# " + std::string(1 << 20, 'x') + "\n";
  Answer put = request("PUT", "/v1/scenario", body);
  ASSERT_EQ(put.status, 400) << put.body.substr(0, 2000);
  EXPECT_EQ(errors_of(put),
            std::vector<std::string>{"PUT /v1/scenario: the scenario is " + std::to_string(body.size()) +
                                     " bytes; the maximum is 1048576 bytes (1 MiB)"});
}

TEST_F(AdminApi, InvalidUtf8IsRefusedSoTheJsonViewStaysValid) {
  Answer put = request("PUT", "/v1/scenario", slurp(bad_file("invalid-utf8.yaml")));
  ASSERT_EQ(put.status, 400) << put.body;
  EXPECT_EQ(errors_of(put),
            std::vector<std::string>{"PUT /v1/scenario:5:19: invalid UTF-8 (byte 0xE9): a scenario is UTF-8 text"});
}

TEST_F(AdminApi, DurationsBeyondAYearAreRefused) {
  Answer put = request("PUT", "/v1/scenario", slurp(bad_file("too-long-durations.yaml")));
  ASSERT_EQ(put.status, 400) << put.body;
  auto errors = errors_of(put);
  EXPECT_NE(
      std::find(
          errors.begin(), errors.end(),
          R"(PUT /v1/scenario:6:16: faults[0].when.at: duration "2562048h" is longer than the maximum of 8760h (365 days))"),
      errors.end())
      << put.body;
  EXPECT_EQ(request("POST", "/v1/outage?duration=2562048h").status, 400);
  EXPECT_EQ(request("POST", "/v1/outage", R"({"duration":"2562048h"})", "application/json").status, 400);
}

}  // namespace
