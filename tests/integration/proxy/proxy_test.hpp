#pragma once
// The fixture of the tests against the real kube-apiserver (apiserver_test.cpp, h2_test.cpp: one
// program, one local stack): kubectl direct and through the proxy, the admin API, scenarios.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/algorithm/string/case_conv.hpp>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "faultline/net/kubeconfig.hpp"
#include "stack_fixture.hpp"
#include "tls_client.hpp"

namespace faultline::testing {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;

// The program's stack and proxy (set up by main()).
extern StackWithProxy* env;

// The events of a watch body (JSON, one per line).
inline std::vector<json::object> events_of(const std::string& body) {
  std::vector<json::object> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line).as_object());
  return out;
}

struct AdminReply {
  int code = 0;
  std::string body;
};

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env->ready()) << env->why_not_ready();
    // A namespace of its own per test, suite and name (the same name in two suites, as for an action
    // over HTTP/1.1 and over HTTP/2, must not meet the other's namespace still being deleted).
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string full = boost::algorithm::to_lower_copy(std::string(test->test_suite_name()) + "-" + test->name());
    ns_ = "it-" + (full.size() <= 60 ? full : full.substr(0, 51) + "-" + hex8(std::hash<std::string>{}(full)));
    kubectl_direct("create namespace " + ns_);
  }
  void TearDown() override {
    if (!env->ready()) return;
    admin("POST", "/v1/disarm");
    run_command(kubectl_cmd(env->var("FAULTLINE_ADMIN_KUBECONFIG")) + " delete namespace " + ns_ + " --wait=false");
  }

  static std::string kubectl_cmd(const std::string& kubeconfig) {
    return shell_quote(env->kubectl()) + " --kubeconfig " + shell_quote(kubeconfig);
  }
  std::string kubectl_direct(const std::string& args, const std::string& stdin_text = {}) {
    return kubectl(env->var("FAULTLINE_ADMIN_KUBECONFIG"), args, stdin_text);
  }
  std::string kubectl_proxied(const std::string& args, const std::string& stdin_text = {}) {
    return kubectl(env->proxy->kubeconfig().string(), args, stdin_text);
  }
  std::string kubectl(const std::string& kubeconfig, const std::string& args, const std::string& stdin_text) {
    std::string cmd = kubectl_cmd(kubeconfig) + " " + args;
    if (!stdin_text.empty()) cmd = "printf '%s' " + shell_quote(stdin_text) + " | " + cmd;
    CommandResult result = run_command(cmd);
    EXPECT_EQ(result.exit_code, 0) << cmd << "\n" << result.output;
    return result.output;
  }

  // The proxy's audit as served by the admin API (the file is written in batches). The record of
  // an exchange is appended once the proxy has finished it, which can be just after the client
  // saw its end, so wait a little for it.
  std::string audit_containing(const std::string& needle) {
    std::string audit;
    for (int i = 0; i < 50; ++i) {
      audit = admin("GET", "/v1/audit").body;
      if (audit.find(needle) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return audit;
  }

  AdminReply admin(const std::string& method, const std::string& path, const std::string& body = {}) {
    return admin_at(env->proxy_admin(), method, path, body);
  }

  // The admin API of any proxy (the fixture's or one a test starts).
  static AdminReply admin_at(const std::string& address, const std::string& method, const std::string& path,
                             const std::string& body = {}) {
    std::string cmd = "curl -sS -X " + method + " -w '\\n%{http_code}' " + shell_quote("http://" + address + path);
    if (!body.empty()) {
      std::ofstream(env->dir() / "admin-body") << body;
      cmd += " --data-binary @" + (env->dir() / "admin-body").string();
    }
    std::string out = run_command(cmd).output;
    AdminReply reply;
    auto nl = out.rfind('\n');
    reply.body = out.substr(0, nl);
    reply.code = std::atoi(out.substr(nl + 1).c_str());
    return reply;
  }

  // The audit line of the request whose path ends with `path_end` (waits for it).
  std::string audit_line(const std::string& path_end) {
    std::string needle = path_end + "\"";
    std::string audit = audit_containing(needle);
    std::istringstream in(audit);
    std::string found;
    for (std::string line; std::getline(in, line);) {
      if (line.find(needle) != std::string::npos) found = line;
    }
    return found;
  }
  // One rule on the object `object` of the test's namespace that fires once.
  std::string rule(const std::string& name, const std::string& object, const std::string& action) {
    return "  - {name: " + name + ", match: {" + match_ns() + ", names: [" + object +
           "]}, when: {limit: 1}, action: " + action + "}\n";
  }

  // Loads a scenario with the given rules (YAML list items) and arms it.
  void arm(const std::string& rules) {
    std::string yaml =
        "apiVersion: faultline/v1\nkind: Scenario\nmetadata: {name: " + ns_ + "}\nseed: 7\nfaults:\n" + rules;
    AdminReply put = admin("PUT", "/v1/scenario", yaml);
    ASSERT_EQ(put.code, 200) << put.body;
    AdminReply armed = admin("POST", "/v1/arm");
    ASSERT_EQ(armed.code, 200) << armed.body;
  }

  // How often the rule fired, from the admin API.
  std::uint64_t fired(const std::string& rule) {
    AdminReply r = admin("GET", "/v1/rules");
    auto v = json::parse(r.body);
    for (const auto& item : v.at("rules").as_array()) {
      if (item.at("name").as_string() == rule) return item.at("fired").to_number<std::uint64_t>();
    }
    ADD_FAILURE() << "rule " << rule << " not in " << r.body;
    return 0;
  }

  // GET `path` until it answers `code`, for at most 30 s (no timing claim: the proxy flushes its
  // audit log every second, on a loaded machine later); the last answer.
  static AdminReply admin_until(const std::string& address, const std::string& path, int code) {
    AdminReply reply = admin_at(address, "GET", path);
    for (int i = 0; i < 300 && reply.code != code; ++i) {
      std::this_thread::sleep_for(100ms);
      reply = admin_at(address, "GET", path);
    }
    return reply;
  }

  // The file's content once it contains `needle`, or after 30 s without it.
  static std::string file_containing(const fs::path& file, const std::string& needle) {
    std::string text = slurp(file);
    for (int i = 0; i < 300 && text.find(needle) == std::string::npos; ++i) {
      std::this_thread::sleep_for(100ms);
      text = slurp(file);
    }
    return text;
  }

  // Trusts every proxy of this program: their serving certificates are minted from the stack's CA.
  static net::ClientTlsOptions proxy_tls() {
    net::ClientTlsOptions tls;
    tls.ca_pem = net::read_file(env->var("FAULTLINE_CA_CERT"));
    return tls;
  }
  TlsClient proxied() { return TlsClient(net::parse_host_port(env->proxy_listen()), proxy_tls()); }
  TlsClient direct() {
    auto kc = net::load_kubeconfig(env->var("FAULTLINE_ADMIN_KUBECONFIG"));
    return TlsClient(net::parse_https_url(kc.server).endpoint, kc.tls_options());
  }

  void create_configmap(const std::string& name) {
    kubectl_direct("-n " + ns_ + " create configmap " + name + " --from-literal=k=v");
  }
  std::string cm_path(const std::string& name = {}) {
    return "/api/v1/namespaces/" + ns_ + "/configmaps" + (name.empty() ? "" : "/" + name);
  }
  std::string match_ns() { return "namespaces: [" + ns_ + "]"; }
  static std::string hex8(std::size_t value) {
    char out[9];
    std::snprintf(out, sizeof out, "%08zx", value & 0xffffffffu);
    return out;
  }

  std::string ns_;
};

}  // namespace faultline::testing
