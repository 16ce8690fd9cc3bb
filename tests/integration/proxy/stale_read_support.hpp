#pragma once
// What the stale-read tests over HTTP/1.1 and HTTP/2 share: the names and resourceVersion of a
// list answer, the proxy's stale-read counter, and compacting etcd as kube-apiserver does.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "proxy_test.hpp"

namespace faultline::testing::stale_read {

struct ListAnswer {
  std::string resource_version;
  std::vector<std::string> names;
};

inline ListAnswer list_answer(const std::string& body) {
  ListAnswer out;
  auto v = boost::json::parse(body).as_object();
  out.resource_version = std::string(v.at("metadata").at("resourceVersion").as_string());
  for (const auto& item : v.at("items").as_array()) out.names.emplace_back(item.at("metadata").at("name").as_string());
  return out;
}

// faultline_stale_reads_total{rule,outcome} from the proxy's metrics (0 when absent).
inline std::uint64_t stale_reads(const std::string& metrics, const std::string& rule, const std::string& outcome) {
  std::smatch m;
  std::regex series("faultline_stale_reads_total\\{rule=\"" + rule + "\",outcome=\"" + outcome + "\"\\} (\\d+)");
  return std::regex_search(metrics, m, series) ? std::stoull(m[1]) : 0;
}

// Compacts etcd at its current revision the way kube-apiserver's compactor does (compact_rev_key,
// then the compaction), so kube-apiserver learns of it and drops its older cache snapshots. Over
// etcd's HTTP gateway with curl. Returns the revision compacted at.
inline std::uint64_t compact_etcd(const std::string& etcd_url) {
  auto post = [&](const std::string& path, const std::string& body) {
    return run_command("curl -sS -X POST " + shell_quote(etcd_url + path) + " -d " + shell_quote(body)).output;
  };
  auto range = boost::json::parse(post("/v3/kv/range", R"({"key":"AA=="})"));
  const std::string rev(range.at("header").at("revision").as_string());
  auto base64 = [](const std::string& text) {
    return run_command("printf %s " + shell_quote(text) + " | base64").output;
  };
  std::string key = base64("compact_rev_key"), value = base64(rev);
  key.erase(key.find_last_not_of("\n") + 1);
  value.erase(value.find_last_not_of("\n") + 1);
  post("/v3/kv/put", R"({"key":")" + key + R"(","value":")" + value + R"("})");
  std::string done = post("/v3/kv/compaction", R"({"revision":")" + rev + R"(","physical":true})");
  EXPECT_THAT(done, ::testing::HasSubstr("\"header\"")) << done;
  return std::stoull(rev);
}

}  // namespace faultline::testing::stale_read
