#include "faultline/harness/services.hpp"

#include <boost/json.hpp>
#include <stdexcept>

#include "faultline/harness/async.hpp"
#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/kube_client.hpp"
#include "faultline/harness/yunikorn_rest.hpp"

// GCC 12 reports a mismatched new/delete for the coroutine frames of this file (a false positive:
// Asio's awaitable frames allocate and free through the same pair of its own operators).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

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

std::int64_t number(const json::object& o, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
        if (auto* v = o.if_contains(k); v != nullptr && v->is_number()) return v->to_number<std::int64_t>();
    }
    return 0;
}

}  // namespace

ProxyAdmin::ProxyAdmin(std::string base_url, std::string bearer_token)
    : base_(trim_slash(std::move(base_url))), token_(std::move(bearer_token)) {}

asio::awaitable<void> ProxyAdmin::put_scenario(std::string yaml) {
    const std::string url = base_ + "/v1/scenario";
    expect_ok(co_await http_call("PUT", url, yaml, "application/yaml", token_), "proxy refused the scenario (PUT " + url + ")");
}

asio::awaitable<void> ProxyAdmin::arm() {
    expect_ok(co_await http_call("POST", base_ + "/v1/arm", {}, {}, token_), "POST /v1/arm");
}

asio::awaitable<void> ProxyAdmin::disarm() {
    expect_ok(co_await http_call("POST", base_ + "/v1/disarm", {}, {}, token_), "POST /v1/disarm");
}

asio::awaitable<std::vector<FaultCounter>> ProxyAdmin::rules() {
    auto res = expect_ok(co_await http_call("GET", base_ + "/v1/rules", {}, {}, token_), "GET /v1/rules");
    boost::system::error_code ec;
    json::value doc = json::parse(res.body, ec);
    if (ec) throw std::runtime_error("GET /v1/rules: not JSON");
    const json::value* list = &doc;
    if (doc.is_object()) list = doc.get_object().if_contains("rules");
    std::vector<FaultCounter> out;
    if (list == nullptr || !list->is_array()) throw std::runtime_error("GET /v1/rules: no rules array in " + res.body.substr(0, 200));
    for (const auto& r : list->get_array()) {
        if (!r.is_object()) continue;
        const auto& o = r.get_object();
        FaultCounter c;
        if (auto* n = o.if_contains("name"); n != nullptr && n->is_string()) c.rule = std::string(n->get_string());
        if (auto* n = o.if_contains("rule"); c.rule.empty() && n != nullptr && n->is_string()) c.rule = std::string(n->get_string());
        c.matched = number(o, {"matched"});
        c.injected = number(o, {"injected", "fired"});
        out.push_back(std::move(c));
    }
    co_return out;
}

asio::awaitable<std::uint64_t> ProxyAdmin::audit_head() {
    const std::string url = with_query(base_ + "/v1/audit", {{"since", "0"}, {"limit", "1"}});
    auto res = co_await http_call("GET", url, {}, {}, token_);
    if (res.status == 410) {
        boost::system::error_code ec;
        json::value doc = json::parse(res.body, ec);
        if (!ec && doc.is_object()) co_return static_cast<std::uint64_t>(number(doc.get_object(), {"lastSeq"}));
    }
    expect_ok(res, "GET /v1/audit");
    std::string last = res.header("faultline-audit-last-seq");
    if (last.empty()) throw std::runtime_error("GET /v1/audit: no Faultline-Audit-Last-Seq header");
    co_return std::stoull(last);
}

asio::awaitable<void> ProxyAdmin::read_audit(std::uint64_t& since, std::vector<AuditRecord>& out) {
    for (;;) {
        const std::string url = with_query(base_ + "/v1/audit", {{"since", std::to_string(since)}});
        auto res = co_await http_call("GET", url, {}, {}, token_);
        if (res.status == 410) {
            throw std::runtime_error("the proxy no longer holds audit records after #" + std::to_string(since) +
                                     " (evicted from memory): " + res.body.substr(0, 300));
        }
        expect_ok(res, "GET /v1/audit");
        auto records = decode_audit_lines(res.body);
        for (auto& r : records) {
            since = std::max(since, r.seq);
            out.push_back(std::move(r));
        }
        if (res.header("faultline-audit-more") != "true" || records.empty()) co_return;
    }
}

asio::awaitable<YunikornSnapshot> take_yunikorn_snapshot(std::string base_url, std::string* full_state_dump,
                                                         std::string partition) {
    const std::string base = trim_slash(base_url) + "/ws/v1/partition/" + partition;
    YunikornSnapshot s;
    s.at = WallClock::now();
    s.queues = decode_queues(expect_ok(co_await http_call("GET", base + "/queues"), "YuniKorn queues").body);
    s.applications = decode_applications(
        expect_ok(co_await http_call("GET", base + "/applications/active"), "YuniKorn applications").body);
    s.nodes = decode_nodes(expect_ok(co_await http_call("GET", base + "/nodes"), "YuniKorn nodes").body);
    if (full_state_dump != nullptr) {
        // v1.9.0 serves it under /debug and redirects the old /ws/v1 path there.
        auto dump = co_await http_call("GET", trim_slash(base_url) + "/ws/v1/fullstatedump");
        if ((dump.status == 301 || dump.status == 302 || dump.status == 307 || dump.status == 308) &&
            !dump.header("location").empty()) {
            std::string location = dump.header("location");
            if (location.rfind("http", 0) != 0) location = trim_slash(base_url) + location;
            dump = co_await http_call("GET", location);
        }
        *full_state_dump = expect_ok(dump, "YuniKorn fullstatedump").body;
    }
    co_return s;
}

}  // namespace faultline::harness
