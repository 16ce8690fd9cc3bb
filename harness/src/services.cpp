#include "faultline/harness/services.hpp"

#include <boost/json.hpp>
#include <charconv>
#include <stdexcept>

#include "faultline/harness/async.hpp"
#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/yunikorn_rest.hpp"

#include "faultline/harness/gcc12_coroutine_frames.hpp"

namespace faultline::harness {
namespace json = boost::json;
namespace {

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

PlainResponse expect_ok(PlainResponse res, const std::string& what) {
  if (res.status < 200 || res.status > 299) {
    throw std::runtime_error(what + ": HTTP " + std::to_string(res.status) + ": " + res.body.substr(0, 2000));
  }
  return res;
}

// A key of GET /v1/rules that must be there with the given type (docs/proxy.md, "Admin API").
const json::value& key_of(const json::object& o, std::string_view key, std::string_view what) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr)
    throw std::runtime_error("GET /v1/rules: " + std::string(what) + " has no \"" + std::string(key) + "\"");
  return *v;
}

std::int64_t count_of(const json::object& o, std::string_view key) {
  const json::value& v = key_of(o, key, "a rule");
  if (!v.is_int64() && !v.is_uint64())
    throw std::runtime_error("GET /v1/rules: \"" + std::string(key) + "\" is not a count");
  return v.to_number<std::int64_t>();
}

}  // namespace

ProxyAdmin::ProxyAdmin(std::string base_url, std::string bearer_token, ReadLimits limits)
    : base_(trim_slash(std::move(base_url))), token_(std::move(bearer_token)), limits_(limits) {}

asio::awaitable<PlainResponse> ProxyAdmin::call(std::string method, std::string url, std::string body,
                                                std::string content_type) {
  co_return co_await http_call(std::move(method), std::move(url), std::move(body), std::move(content_type), token_,
                               std::chrono::seconds(30), limits_);
}

asio::awaitable<void> ProxyAdmin::put_scenario(std::string yaml) {
  const std::string url = base_ + "/v1/scenario";
  expect_ok(co_await call("PUT", url, yaml, "application/yaml"), "proxy refused the scenario (PUT " + url + ")");
}

asio::awaitable<void> ProxyAdmin::arm() { expect_ok(co_await call("POST", base_ + "/v1/arm"), "POST /v1/arm"); }

asio::awaitable<void> ProxyAdmin::disarm() {
  expect_ok(co_await call("POST", base_ + "/v1/disarm"), "POST /v1/disarm");
}

asio::awaitable<std::vector<FaultCounter>> ProxyAdmin::rules() { co_return (co_await activity()).rules; }

asio::awaitable<ProxyAdmin::Activity> ProxyAdmin::activity() {
  auto res = expect_ok(co_await call("GET", base_ + "/v1/rules"), "GET /v1/rules");
  boost::system::error_code ec;
  json::value doc = json::parse(res.body, ec);
  if (ec || !doc.is_object()) throw std::runtime_error("GET /v1/rules: not a JSON object: " + res.body.substr(0, 200));
  const json::value& list = key_of(doc.get_object(), "rules", "the answer");
  if (!list.is_array()) throw std::runtime_error("GET /v1/rules: \"rules\" is not an array");
  Activity out;
  if (const auto* outage = doc.get_object().if_contains("outage"); outage != nullptr && outage->is_bool())
    out.outage = outage->get_bool();
  for (const auto& r : list.get_array()) {
    if (!r.is_object()) throw std::runtime_error("GET /v1/rules: a rule is not an object");
    const auto& o = r.get_object();
    const json::value& name = key_of(o, "name", "a rule");
    if (!name.is_string()) throw std::runtime_error("GET /v1/rules: a rule's \"name\" is not a string");
    FaultCounter c;
    c.rule = std::string(name.get_string());
    c.matched = count_of(o, "matched");
    c.fired = count_of(o, "fired");
    const auto* phase = o.if_contains("phase");
    out.phases.push_back(phase != nullptr && phase->is_string() ? std::string(phase->get_string()) : std::string());
    out.rules.push_back(std::move(c));
  }
  co_return out;
}

asio::awaitable<std::uint64_t> ProxyAdmin::audit_head() {
  const std::string url = with_query(base_ + "/v1/audit", {{"since", "0"}, {"limit", "1"}});
  auto res = co_await call("GET", url);
  if (res.status == 410) {
    boost::system::error_code ec;
    json::value doc = json::parse(res.body, ec);
    const json::value* last = !ec && doc.is_object() ? doc.get_object().if_contains("lastSeq") : nullptr;
    if (last != nullptr && last->is_number()) {
      auto seq = last->to_number<std::uint64_t>(ec);
      if (!ec) co_return seq;
    }
  }
  expect_ok(res, "GET /v1/audit");
  std::string last = res.header("faultline-audit-last-seq");
  if (last.empty()) throw std::runtime_error("GET /v1/audit: no Faultline-Audit-Last-Seq header");
  co_return std::stoull(last);
}

asio::awaitable<void> ProxyAdmin::read_audit(std::uint64_t& since, audit::DecodedLines& out) {
  for (;;) {
    const std::string target = "/v1/audit?since=" + std::to_string(since);
    const std::string url = with_query(base_ + "/v1/audit", {{"since", std::to_string(since)}});
    auto res = co_await call("GET", url);
    if (res.status == 410) {
      throw std::runtime_error("the proxy no longer holds audit records after #" + std::to_string(since) +
                               " (evicted from memory): " + res.body.substr(0, 300));
    }
    expect_ok(res, "GET /v1/audit");
    // Where the next read starts, even when the lines of this answer could not be decoded.
    const std::string next = res.header("faultline-audit-next-since");
    std::uint64_t next_since = 0;
    if (auto [end, ec] = std::from_chars(next.data(), next.data() + next.size(), next_since);
        next.empty() || ec != std::errc() || end != next.data() + next.size()) {
      throw std::runtime_error("GET " + target + ": no valid Faultline-Audit-Next-Since header");
    }
    audit::DecodedLines lines = audit::decode_lines(res.body);
    if (out.records.size() + lines.records.size() > limits_.max_audit_records) {
      throw LimitError("GET " + url + ": the run's audit records would be more than the limit of " +
                       std::to_string(limits_.max_audit_records) + "; raise it with " + kMaxAuditRecordsFlag);
    }
    if (lines.malformed > 0 && out.malformed == 0) out.first_error = "GET " + target + ": " + lines.first_error;
    out.malformed += lines.malformed;
    for (auto& r : lines.records) out.records.push_back(std::move(r));
    if (res.header("faultline-audit-more") != "true" || next_since <= since) {
      since = std::max(since, next_since);
      co_return;
    }
    since = next_since;
  }
}

asio::awaitable<YunikornSnapshot> take_yunikorn_snapshot(std::string base_url, std::string* full_state_dump,
                                                         std::string partition, ReadLimits limits) {
  const std::string base = trim_slash(base_url) + "/ws/v1/partition/" + partition;
  auto get = [&limits](std::string url) {
    return http_call("GET", std::move(url), {}, {}, {}, std::chrono::seconds(30), limits);
  };
  YunikornSnapshot s;
  s.at = WallClock::now();
  s.queues = decode_queues(expect_ok(co_await get(base + "/queues"), "YuniKorn queues").body);
  s.applications =
      decode_applications(expect_ok(co_await get(base + "/applications/active"), "YuniKorn applications").body);
  s.nodes = decode_nodes(expect_ok(co_await get(base + "/nodes"), "YuniKorn nodes").body);
  if (full_state_dump != nullptr) {
    // v1.9.0 serves it under /debug and redirects the old /ws/v1 path there.
    auto dump = co_await get(trim_slash(base_url) + "/ws/v1/fullstatedump");
    if ((dump.status == 301 || dump.status == 302 || dump.status == 307 || dump.status == 308) &&
        !dump.header("location").empty()) {
      std::string location = dump.header("location");
      if (location.rfind("http", 0) != 0) location = trim_slash(base_url) + location;
      dump = co_await get(location);
    }
    *full_state_dump = expect_ok(dump, "YuniKorn fullstatedump").body;
  }
  co_return s;
}

}  // namespace faultline::harness
