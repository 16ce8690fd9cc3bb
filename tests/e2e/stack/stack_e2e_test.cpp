// End-to-end test of the local stack (scripts/stack): starts a real cluster of processes in a
// temporary run dir, then checks what a user would check, through the real APIs:
//   - `kubectl get nodes` shows the KWOK nodes Ready;
//   - a pod with the scheduler's schedulerName and the KWOK toleration is bound and Running within 10 s;
//   - YuniKorn: its REST API shows the pod as an allocation in queue root.default on that node;
//   - through faultline-proxy: the proxy's audit shows the scheduler's bind crossing it.
// The stack is torn down in every case (TearDown runs after failed assertions too) and the test
// checks that no process it started is left.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "local_stack.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 3;
constexpr auto kScheduleDeadline = std::chrono::seconds(10);

using namespace faultline::testing;  // tests/support/local_stack.hpp

struct StackVariant {
  std::string scheduler;  // yunikorn | kube-scheduler
  bool through_proxy;
};

// gtest prints the parameter into the test's listing (and so into ctest's test name); without
// this it would print the bytes of the struct, which include a heap pointer.
void PrintTo(const StackVariant& variant, std::ostream* os) {
  *os << variant.scheduler << (variant.through_proxy ? " through faultline-proxy" : " direct");
}

std::string variant_name(const testing::TestParamInfo<StackVariant>& info) {
  std::string name = info.param.scheduler == "yunikorn" ? "YuniKorn" : "KubeScheduler";
  return name + (info.param.through_proxy ? "ThroughProxy" : "Direct");
}

class StackE2E : public testing::TestWithParam<StackVariant> {
 protected:
  void SetUp() override {
    proxy_bin_ = std::string(FAULTLINE_BINARY_DIR) + "/proxy/faultline-proxy";
    // A missing binary is a broken build, not a reason to skip: the variant must run.
    if (GetParam().through_proxy) {
      ASSERT_TRUE(fs::exists(proxy_bin_)) << "faultline-proxy is not built at " << proxy_bin_;
    }
    char tmpl[] = "/tmp/faultline-stack-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    run_dir_ = tmpl;
    // --timeout 300: YuniKorn's REST port is fixed (9080), so `up` waits for any other YuniKorn
    // stack on this machine to go down first.
    std::string command = stack_script() + " up --scheduler " + GetParam().scheduler + " --run-dir " +
                          shell_quote(run_dir_.string()) + " --nodes " + std::to_string(kNodes) + " --timeout 300";
    command += GetParam().through_proxy ? " --proxy-bin " + shell_quote(proxy_bin_) : " --no-proxy";
    started_ = true;
    const auto up = run_command(command);
    ASSERT_EQ(up.exit_code, 0) << command << "\n" << up.output;
    env_ = read_env_file(run_dir_ / "env");
    ASSERT_FALSE(env_["FAULTLINE_ADMIN_KUBECONFIG"].empty()) << "no env written:\n" << up.output;
    ASSERT_EQ(env_["FAULTLINE_SCHEDULER"], GetParam().scheduler);
    // The name pods ask for: kube-scheduler's profile is default-scheduler.
    ASSERT_EQ(env_["FAULTLINE_SCHEDULER_NAME"], GetParam().scheduler == "yunikorn" ? "yunikorn" : "default-scheduler");
  }

  void TearDown() override {
    if (!started_) {
      return;
    }
    const auto down = run_command(stack_script() + " down --run-dir " + shell_quote(run_dir_.string()));
    EXPECT_EQ(down.exit_code, 0) << down.output;
    // `status` exits non-zero when none of the stack's processes is alive any more.
    const auto status = run_command(stack_script() + " status --run-dir " + shell_quote(run_dir_.string()));
    EXPECT_NE(status.exit_code, 0) << "processes left after down:\n" << status.output;
    if (HasFailure()) {
      std::cerr << "stack logs kept in " << (run_dir_ / "logs") << "\n";
    } else {
      fs::remove_all(run_dir_);
    }
  }

  CommandResult kubectl(const std::string& args) { return run_command(admin_kubectl_command(env_, args)); }

  json::value kubectl_json(const std::string& args) {
    const auto result = kubectl(args + " -o json");
    if (result.exit_code != 0) {
      ADD_FAILURE() << "kubectl " << args << ": " << result.output;
      return nullptr;
    }
    return json::parse(result.output);
  }

  std::string create_pod(const std::string& name) {
    const fs::path manifest = run_dir_ / (name + ".yaml");
    std::ofstream(manifest) << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " << name
                            << "\n  namespace: faultline\n  labels: {applicationId: " << name
                            << "}\nspec:\n  schedulerName: " << env_["FAULTLINE_SCHEDULER_NAME"]
                            << "\n  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]"
                            << "\n  containers:\n  - name: main\n    image: registry.invalid/fake:1\n"
                            << "    resources: {requests: {cpu: 100m, memory: 64Mi}}\n";
    const auto created = kubectl("create -f " + shell_quote(manifest.string()));
    EXPECT_EQ(created.exit_code, 0) << created.output;
    return name;
  }

  fs::path run_dir_;
  std::string proxy_bin_;
  std::map<std::string, std::string> env_;
  bool started_ = false;
};

std::string node_ready_status(const json::value& node) {
  for (const auto& condition : node.at("status").at("conditions").as_array()) {
    if (condition.at("type").as_string() == "Ready") {
      return std::string(condition.at("status").as_string());
    }
  }
  return "missing";
}

// Audit records are JSON lines (docs/proxy.md, "Audit record").
bool audit_has_binding(const std::string& jsonl, const std::string& pod_name) {
  std::istringstream lines(jsonl);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) {
      continue;
    }
    const json::value parsed = json::parse(line);
    const auto& record = parsed.as_object();
    const auto* subresource = record.if_contains("subresource");
    const auto* name = record.if_contains("name");
    if (subresource != nullptr && subresource->is_string() && subresource->as_string() == "binding" &&
        name != nullptr && name->is_string() && name->as_string() == pod_name) {
      return true;
    }
  }
  return false;
}

TEST_P(StackE2E, KwokNodesReadyAndPodScheduledAndRunning) {
  // 1. kubectl get nodes: the KWOK nodes, all Ready.
  const auto nodes = kubectl_json("get nodes");
  ASSERT_TRUE(nodes.is_object());
  const auto& items = nodes.at("items").as_array();
  ASSERT_EQ(items.size(), static_cast<size_t>(kNodes));
  for (const auto& node : items) {
    EXPECT_EQ(node.at("metadata").at("annotations").at("kwok.x-k8s.io/node").as_string(), "fake");
    EXPECT_EQ(node_ready_status(node), "True") << node.at("metadata").at("name").as_string();
  }

  // 2. A pod for this scheduler is bound and Running within 10 s.
  const auto created_at = Clock::now();
  const std::string pod_name = create_pod("e2e-" + GetParam().scheduler);
  json::value pod;
  std::string node_name;
  std::string phase;
  while (Clock::now() - created_at < kScheduleDeadline) {
    pod = kubectl_json("-n faultline get pod " + pod_name);
    ASSERT_TRUE(pod.is_object());
    const auto& spec = pod.at("spec").as_object();
    node_name = spec.contains("nodeName") ? std::string(spec.at("nodeName").as_string()) : "";
    const auto& status = pod.at("status").as_object();
    phase = status.contains("phase") ? std::string(status.at("phase").as_string()) : "";
    if (!node_name.empty() && phase == "Running") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - created_at).count();
  ASSERT_FALSE(node_name.empty()) << "pod not bound after " << elapsed_ms << " ms:\n" << json::serialize(pod);
  ASSERT_EQ(phase, "Running") << "pod bound to " << node_name << " but not Running after " << elapsed_ms << " ms";
  EXPECT_EQ(node_name.rfind("kwok-node-", 0), 0u) << node_name;
  std::cout << "pod " << pod_name << " bound to " << node_name << " and Running in " << elapsed_ms << " ms ("
            << GetParam().scheduler << ")\n";
  const std::string pod_uid(pod.at("metadata").at("uid").as_string());

  // 3. YuniKorn's own view: an allocation for this pod, in root.default, on the same node.
  if (GetParam().scheduler == "yunikorn") {
    const auto apps = run_command("curl -sf " + env_["FAULTLINE_YUNIKORN_URL"] +
                                  "/ws/v1/partition/default/queue/root.default/applications");
    ASSERT_EQ(apps.exit_code, 0) << apps.output;
    bool found = false;
    const json::value applications = json::parse(apps.output);
    for (const auto& app : applications.as_array()) {
      if (app.at("applicationID").as_string() != pod_name) {
        continue;
      }
      EXPECT_EQ(app.at("queueName").as_string(), "root.default");
      const auto& app_obj = app.as_object();
      ASSERT_TRUE(app_obj.contains("allocations")) << json::serialize(app);
      for (const auto& allocation : app_obj.at("allocations").as_array()) {
        if (allocation.at("allocationKey").as_string() == pod_uid) {
          found = true;
          EXPECT_EQ(allocation.at("nodeId").as_string(), node_name);
        }
      }
    }
    EXPECT_TRUE(found) << "no YuniKorn allocation with key " << pod_uid << " in root.default:\n" << apps.output;
  }

  // 4. Through the proxy, the bind crossed faultline-proxy: its audit (admin API, which is
  // current; the audit file is written behind) has the scheduler's binding of this pod.
  if (GetParam().through_proxy) {
    const std::string url = env_["FAULTLINE_PROXY_ADMIN_URL"] + "/v1/audit?since=0";
    bool bind_seen = false;
    std::string last_body;
    for (int attempt = 0; attempt < 50 && !bind_seen; ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      const auto audit = run_command("curl -sf " + shell_quote(url));
      ASSERT_EQ(audit.exit_code, 0) << "GET " << url << ": " << audit.output;
      last_body = audit.output;
      bind_seen = audit_has_binding(audit.output, pod_name);
    }
    EXPECT_TRUE(bind_seen) << "the scheduler's binding of " << pod_name << " is not in the proxy audit:\n" << last_body;
  }
}

// A system that is not in the tree: a file written here, a shell loop of kubectl labelling pods.
// The stack issues its identity, binds its role, applies its manifest, starts it behind
// faultline-proxy and awaits its ready command; its patches cross the proxy with kubectl's agent.
TEST(StackSystemFile, ProgramOutsideTheTreeRunsThroughTheProxy) {
  const std::string proxy_bin = std::string(FAULTLINE_BINARY_DIR) + "/proxy/faultline-proxy";
  ASSERT_TRUE(fs::exists(proxy_bin)) << "faultline-proxy is not built at " << proxy_bin;
  const auto components = run_command(std::string(FAULTLINE_SOURCE_DIR) + "/scripts/components path");
  ASSERT_EQ(components.exit_code, 0) << components.output;
  const std::string kubectl = components.output.substr(0, components.output.find('\n')) + "/kubectl";
  char tmpl[] = "/tmp/faultline-system-e2e-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const fs::path run_dir = dir / "run";
  std::ofstream(dir / "role.yaml")
      << "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'faultline:labeller'}\n"
         "rules: [{apiGroups: [''], resources: [pods], verbs: [get, list, patch]}]\n";
  std::ofstream(dir / "labeller.yaml")
      << "apiVersion: faultline/v1\nkind: System\nmetadata: {name: labeller}\n"
      << "build: {path: " << kubectl << "}\n"
      << "identity: {user: 'faultline:labeller', clusterRoles: ['faultline:labeller'], userAgents: ['kubectl/*']}\n"
      << "setup: {manifests: [role.yaml]}\n"
      << "command: [bash, -c, 'while true; do {bin} --kubeconfig {kubeconfig} -n faultline label pods "
         "-l faultline.io/e2e=1 labelled=yes --overwrite; sleep 1; done']\n"
      << "ready: {command: ['{bin}', --kubeconfig, '{kubeconfig}', -n, faultline, auth, can-i, patch, pods], "
         "timeout: 60s}\n";
  const std::string up_command = stack_script() + " up --system " + shell_quote((dir / "labeller.yaml").string()) +
                                 " --run-dir " + shell_quote(run_dir.string()) + " --nodes 0 --proxy-bin " +
                                 shell_quote(proxy_bin);
  const auto up = run_command(up_command);
  auto env = read_env_file(run_dir / "env");
  bool labelled = false;
  bool audited = false;
  std::string audit_body;
  if (up.exit_code == 0) {
    EXPECT_EQ(env["FAULTLINE_SCHEDULER"], "labeller");
    EXPECT_EQ(env["FAULTLINE_SYSTEM_FILE"], (dir / "labeller.yaml").string());
    const auto created = run_command(admin_kubectl_command(
        env, "-n faultline run e2e-labelled --image=x --labels=faultline.io/e2e=1 --restart=Never"));
    EXPECT_EQ(created.exit_code, 0) << created.output;
    for (int i = 0; i < 200 && !(labelled && audited); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto label = run_command(
          admin_kubectl_command(env, "-n faultline get pod e2e-labelled -o jsonpath='{.metadata.labels.labelled}'"));
      labelled = label.exit_code == 0 && label.output.find("yes") != std::string::npos;
      const auto audit = run_command("curl -sf " + shell_quote(env["FAULTLINE_PROXY_ADMIN_URL"] + "/v1/audit?since=0"));
      audit_body = audit.output;
      std::istringstream lines(audit.output);
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty()) continue;
        const json::value record = json::parse(line);
        const auto* verb = record.as_object().if_contains("verb");
        const auto* agent = record.as_object().if_contains("userAgent");
        const auto* name = record.as_object().if_contains("name");
        if (verb && verb->is_string() && verb->as_string() == "patch" && agent && agent->is_string() &&
            agent->as_string().starts_with("kubectl/") && name && name->is_string() &&
            name->as_string() == "e2e-labelled")
          audited = true;
      }
    }
  }
  const auto down = run_command(stack_script() + " down --run-dir " + shell_quote(run_dir.string()));
  ASSERT_EQ(up.exit_code, 0) << up_command << "\n" << up.output;
  EXPECT_TRUE(labelled) << "the system did not label the pod; logs in " << run_dir / "logs";
  EXPECT_TRUE(audited) << "no patch of e2e-labelled by kubectl in the proxy audit:\n" << audit_body;
  EXPECT_EQ(down.exit_code, 0) << down.output;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Schedulers, StackE2E,
                         testing::Values(StackVariant{"yunikorn", false}, StackVariant{"kube-scheduler", false},
                                         StackVariant{"yunikorn", true}, StackVariant{"kube-scheduler", true}),
                         variant_name);

}  // namespace
