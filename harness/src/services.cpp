#include "faultline/harness/services.hpp"

#include <boost/json.hpp>
#include <stdexcept>

#include "faultline/harness/http_plain.hpp"
#include "faultline/harness/yunikorn_rest.hpp"

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

ProxyAdmin::ProxyAdmin(std::string baseUrl, std::string bearerToken)
    : base_(trim_slash(std::move(baseUrl))), token_(std::move(bearerToken)) {}

void ProxyAdmin::put_scenario(const std::string& yaml) {
    expect_ok(http_call("PUT", base_ + "/v1/scenario", yaml, "application/yaml", token_),
              "proxy refused the scenario (PUT " + base_ + "/v1/scenario)");
}

void ProxyAdmin::arm() { expect_ok(http_call("POST", base_ + "/v1/arm", {}, {}, token_), "POST /v1/arm"); }

void ProxyAdmin::disarm() { expect_ok(http_call("POST", base_ + "/v1/disarm", {}, {}, token_), "POST /v1/disarm"); }

std::vector<FaultCounter> ProxyAdmin::rules() {
    auto res = expect_ok(http_call("GET", base_ + "/v1/rules", {}, {}, token_), "GET /v1/rules");
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
    return out;
}

std::uint64_t ProxyAdmin::audit_head() {
    auto res = http_call("GET", base_ + "/v1/audit?since=0&limit=1", {}, {}, token_);
    if (res.status == 410) {
        boost::system::error_code ec;
        json::value doc = json::parse(res.body, ec);
        if (!ec && doc.is_object()) return static_cast<std::uint64_t>(number(doc.get_object(), {"lastSeq"}));
    }
    expect_ok(res, "GET /v1/audit");
    std::string last = res.header("faultline-audit-last-seq");
    if (last.empty()) throw std::runtime_error("GET /v1/audit: no Faultline-Audit-Last-Seq header");
    return std::stoull(last);
}

void ProxyAdmin::read_audit(std::uint64_t& since, std::vector<AuditRecord>& out) {
    for (;;) {
        auto res = http_call("GET", base_ + "/v1/audit?since=" + std::to_string(since), {}, {}, token_);
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
        if (res.header("faultline-audit-more") != "true" || records.empty()) return;
    }
}

YunikornSnapshot take_yunikorn_snapshot(const std::string& baseUrl, std::string* fullStateDump,
                                        const std::string& partition) {
    std::string base = trim_slash(baseUrl) + "/ws/v1/partition/" + partition;
    YunikornSnapshot s;
    s.at = WallClock::now();
    s.queues = decode_queues(expect_ok(http_call("GET", base + "/queues"), "YuniKorn queues").body);
    s.applications = decode_applications(
        expect_ok(http_call("GET", base + "/applications/active"), "YuniKorn applications").body);
    s.nodes = decode_nodes(expect_ok(http_call("GET", base + "/nodes"), "YuniKorn nodes").body);
    if (fullStateDump != nullptr) {
        // v1.9.0 serves it under /debug and redirects the old /ws/v1 path there.
        auto dump = http_call("GET", trim_slash(baseUrl) + "/ws/v1/fullstatedump");
        if ((dump.status == 301 || dump.status == 302 || dump.status == 307 || dump.status == 308) &&
            !dump.header("location").empty()) {
            std::string location = dump.header("location");
            dump = http_call("GET", location.rfind("http", 0) == 0 ? location : trim_slash(baseUrl) + location);
        }
        *fullStateDump = expect_ok(dump, "YuniKorn fullstatedump").body;
    }
    return s;
}

}  // namespace faultline::harness
