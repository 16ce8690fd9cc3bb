#include "admin_routes.hpp"

#include "bearer_token.hpp"
#include "faultline/audit/utf8.hpp"

#include <spdlog/spdlog.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "faultline/admin/metrics.hpp"
#include "faultline/faults/yaml_json.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

namespace faultline::admin {

namespace http = boost::beast::http;
namespace json = boost::json;
namespace urls = boost::urls;

namespace {

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kJsonLines = "application/x-ndjson";
constexpr std::string_view kYaml = "application/yaml";
constexpr std::string_view kHealthz = "/healthz";

// Everything a handler needs about one request.
struct Call {
  const AdminRequest& request;
  const urls::url_view& url;
  AdminBackend& backend;
  const AdminServerOptions& options;
};

using Handler = AdminResponse (*)(const Call&);

struct MethodHandler {
  http::verb method;
  Handler handler;
  std::vector<std::string_view> query_keys;  // accepted query parameter names
};

struct Route {
  std::string_view path;
  std::vector<MethodHandler> methods;
};

AdminResponse text_response(http::status status, std::string body, std::string_view content_type, unsigned version) {
  AdminResponse res{status, version};
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

AdminResponse json_response(http::status status, const json::value& body, unsigned version) {
  // Error messages echo request bytes (paths, query values), which need not be UTF-8.
  std::string text = audit::to_valid_utf8(json::serialize(body));
  text.push_back('\n');
  return text_response(status, std::move(text), kJson, version);
}

// ---- parameter helpers ------------------------------------------------------------------------

std::optional<std::string> query_param(const urls::url_view& url, std::string_view key) {
  auto it = url.params().find(key);
  if (it == url.params().end()) return std::nullopt;
  return std::string((*it).value);
}

std::optional<std::uint64_t> parse_uint(std::string_view text) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

bool accepts_json_over_yaml(const AdminRequest& req, const urls::url_view& url) {
  if (auto format = query_param(url, "format")) return *format == "json";
  std::string_view accept = req[http::field::accept];
  return accept.find("json") != std::string_view::npos && accept.find("yaml") == std::string_view::npos;
}

// ---- handlers -----------------------------------------------------------------------------------

AdminResponse get_scenario(const Call& c) {
  if (auto format = query_param(c.url, "format"); format && *format != "json" && *format != "yaml") {
    return error_response(http::status::bad_request, "format must be yaml or json", c.request.version());
  }
  const auto preferred = accepts_json_over_yaml(c.request, c.url) ? ScenarioFormat::json : ScenarioFormat::yaml;
  std::optional<ScenarioDocument> doc = c.backend.scenario(preferred);
  if (!doc) return error_response(http::status::not_found, "no scenario is loaded", c.request.version());
  if (preferred == ScenarioFormat::json && doc->format == ScenarioFormat::yaml) {
    doc->body = audit::to_valid_utf8(faults::yaml_to_json(doc->body)) + "\n";
    doc->format = ScenarioFormat::json;
  }
  return text_response(http::status::ok, std::move(doc->body), doc->format == ScenarioFormat::json ? kJson : kYaml,
                       c.request.version());
}

AdminResponse put_scenario(const Call& c) {
  ScenarioReplaceResult result = c.backend.replace_scenario(c.request.body());
  if (!result.errors.empty()) {
    json::array errors;
    for (auto& e : result.errors) errors.emplace_back(e);
    return json_response(
        http::status::bad_request,
        json::object{{"error", "scenario rejected; the running scenario is unchanged"}, {"errors", std::move(errors)}},
        c.request.version());
  }
  json::object body = std::move(result.info);
  body["accepted"] = true;
  return json_response(http::status::ok, body, c.request.version());
}

AdminResponse post_arm(const Call& c) { return json_response(http::status::ok, c.backend.arm(), c.request.version()); }

AdminResponse post_disarm(const Call& c) {
  return json_response(http::status::ok, c.backend.disarm(), c.request.version());
}

// Outage parameters come from the query or from a JSON object body, not both.
struct OutageParams {
  std::optional<std::string> duration;  // as written: "10s", "1m30s", or a JSON number of seconds
  std::optional<faults::Duration> duration_number;
  std::optional<std::string> mode;
};

std::variant<OutageParams, std::string> outage_params(const Call& c) {
  OutageParams p;
  const std::string& body = c.request.body();
  const bool has_body =
      std::any_of(body.begin(), body.end(), [](char ch) { return !std::isspace(static_cast<unsigned char>(ch)); });
  if (has_body && !c.url.params().empty())
    return std::string("give outage parameters in the query or in the body, not both");
  if (!has_body) {
    p.duration = query_param(c.url, "duration");
    p.mode = query_param(c.url, "mode");
    return p;
  }
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return std::string("body must be a JSON object like {\"duration\":\"10s\",\"mode\":\"reset\"}");
  for (const auto& [key, value] : v.get_object()) {
    if (key == "duration") {
      if (value.is_string()) {
        p.duration = std::string(value.get_string());
      } else if (value.is_number()) {
        const double seconds = value.to_number<double>();
        p.duration = json::serialize(value);
        // Out-of-range numbers become 0 and are rejected below like any non-positive duration.
        if (seconds > 0 && seconds < 365.0 * 24 * 3600) {
          p.duration_number = faults::Duration(std::llround(seconds * 1000));
        } else {
          p.duration_number = faults::Duration(0);
        }
      } else {
        return std::string("duration must be a string like \"10s\" or a number of seconds");
      }
    } else if (key == "mode") {
      if (!value.is_string()) return std::string("mode must be a string: reset, refuse or blackhole");
      p.mode = std::string(value.get_string());
    } else {
      return "unknown key \"" + std::string(key) + "\" (known: duration, mode)";
    }
  }
  return p;
}

AdminResponse post_outage(const Call& c) {
  const unsigned version = c.request.version();
  auto parsed = outage_params(c);
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    return error_response(http::status::bad_request, *problem, version);
  }
  const OutageParams& p = std::get<OutageParams>(parsed);
  if (!p.duration) return error_response(http::status::bad_request, "duration is required, e.g. duration=10s", version);
  OutageRequest request;
  auto duration = p.duration_number ? p.duration_number : faults::parse_duration(*p.duration);
  if (!duration || duration->count() <= 0) {
    return error_response(http::status::bad_request,
                          "duration \"" + *p.duration +
                              "\" is not a positive duration like 500ms, 10s, 1m30s (or a JSON number of seconds)",
                          version);
  }
  request.duration = *duration;
  if (p.mode) {
    auto mode = parse_outage_mode(*p.mode);
    if (!mode) {
      return error_response(http::status::bad_request,
                            "mode \"" + *p.mode + "\" is not one of reset, refuse, blackhole", version);
    }
    request.mode = *mode;
  }
  return json_response(http::status::ok, c.backend.outage(request), version);
}

AdminResponse get_rules(const Call& c) {
  return json_response(http::status::ok, c.backend.rules(), c.request.version());
}

AdminResponse get_audit(const Call& c) {
  const unsigned version = c.request.version();
  std::optional<std::uint64_t> since;
  if (auto text = query_param(c.url, "since")) {
    since = parse_uint(*text);
    if (!since)
      return error_response(http::status::bad_request, "since must be a sequence number (0 for all)", version);
  }
  std::size_t limit = c.options.audit_default_limit;
  if (auto text = query_param(c.url, "limit")) {
    auto n = parse_uint(*text);
    if (!n || *n == 0 || *n > c.options.audit_max_limit) {
      return error_response(http::status::bad_request,
                            "limit must be between 1 and " + std::to_string(c.options.audit_max_limit), version);
    }
    limit = static_cast<std::size_t>(*n);
  }
  AuditSince result = c.backend.audit_since(since, limit);
  if (result.truncated) {
    // Serving the rest silently would hide a gap from the consumer; make it decide.
    json::object body{
        {"error", "audit records after " + std::to_string(*since) + " are no longer in memory (oldest kept: " +
                      std::to_string(result.first_retained) + "); read the audit file, or ask again with since=" +
                      std::to_string(result.first_retained > 0 ? result.first_retained - 1 : result.last_seq) +
                      " to accept the gap"},
        {"firstRetained", result.first_retained},
        {"lastSeq", result.last_seq}};
    return json_response(http::status::gone, body, version);
  }
  std::string body;
  for (const auto& line : result.lines) body += line;
  AdminResponse res = text_response(http::status::ok, std::move(body), kJsonLines, version);
  res.set("Faultline-Audit-Last-Seq", std::to_string(result.last_seq));
  res.set("Faultline-Audit-First-Retained", std::to_string(result.first_retained));
  res.set("Faultline-Audit-More", result.more ? "true" : "false");
  res.set("Faultline-Audit-Next-Since",
          std::to_string(result.lines.empty() ? since.value_or(0) : result.last_returned));
  return res;
}

AdminResponse get_metrics(const Call& c) {
  return text_response(http::status::ok, c.backend.metrics_text(), metrics::kContentType, c.request.version());
}

AdminResponse get_healthz(const Call& c) {
  std::string problem = c.backend.health_problem();
  if (!problem.empty()) {
    return json_response(http::status::service_unavailable, json::object{{"status", "unhealthy"}, {"error", problem}},
                         c.request.version());
  }
  return json_response(http::status::ok, json::object{{"status", "ok"}}, c.request.version());
}

// ---- routing ------------------------------------------------------------------------------------

const std::vector<Route>& routes() {
  static const std::vector<Route> table = {
      {"/v1/scenario", {{http::verb::get, get_scenario, {"format"}}, {http::verb::put, put_scenario, {}}}},
      {"/v1/arm", {{http::verb::post, post_arm, {}}}},
      {"/v1/disarm", {{http::verb::post, post_disarm, {}}}},
      {"/v1/outage", {{http::verb::post, post_outage, {"duration", "mode"}}}},
      {"/v1/rules", {{http::verb::get, get_rules, {}}}},
      {"/v1/audit", {{http::verb::get, get_audit, {"since", "limit"}}}},
      {"/metrics", {{http::verb::get, get_metrics, {}}}},
      {kHealthz, {{http::verb::get, get_healthz, {}}}},
  };
  return table;
}

const Route* find_route(std::string_view path) {
  for (const Route& r : routes()) {
    if (r.path == path) return &r;
  }
  return nullptr;
}

const MethodHandler* find_method(const Route& route, http::verb method) {
  for (const MethodHandler& m : route.methods) {
    if (m.method == method) return &m;
  }
  return nullptr;
}

std::string allowed_methods(const Route& route) {
  std::string allow;
  for (const MethodHandler& m : route.methods) {
    if (!allow.empty()) allow += ", ";
    allow += std::string(http::to_string(m.method));
  }
  return allow;
}

std::optional<std::string> unknown_query_key(const urls::url_view& url, const MethodHandler& m) {
  for (auto param : url.params()) {
    if (std::find(m.query_keys.begin(), m.query_keys.end(), param.key) == m.query_keys.end()) {
      return std::string(param.key);
    }
  }
  return std::nullopt;
}

std::string describe_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

AdminResponse error_response(http::status status, std::string_view message, unsigned version) {
  return json_response(status, json::object{{"error", message}}, version);
}

std::optional<AdminResponse> check_request_header(const http::request_header<>& header,
                                                  const AdminServerOptions& options) {
  const unsigned version = header.version();
  auto url = urls::parse_origin_form(header.target());
  if (!url) return error_response(http::status::bad_request, "request target is not a path", version);
  const Route* route = find_route(url->path());
  const bool needs_token = !options.token.empty() && (route == nullptr || route->path != kHealthz);
  if (needs_token && !bearer_token_matches(header[http::field::authorization], options.token)) {
    AdminResponse res = error_response(http::status::unauthorized,
                                       "missing or wrong bearer token (Authorization: Bearer <token>)", version);
    res.set(http::field::www_authenticate, "Bearer realm=\"faultline-admin\"");
    return res;
  }
  if (!route) return error_response(http::status::not_found, "no such endpoint: " + std::string(url->path()), version);
  const MethodHandler* method = find_method(*route, header.method());
  if (!method) {
    AdminResponse res =
        error_response(http::status::method_not_allowed,
                       std::string(header.method_string()) + " is not allowed on " + std::string(route->path), version);
    res.set(http::field::allow, allowed_methods(*route));
    return res;
  }
  if (auto key = unknown_query_key(*url, *method)) {
    return error_response(http::status::bad_request, "unknown query parameter \"" + *key + "\"", version);
  }
  if (auto length = header[http::field::content_length]; !length.empty()) {
    auto n = parse_uint(length);
    if (n && *n > options.body_limit) {
      return error_response(
          http::status::payload_too_large,
          "body of " + std::to_string(*n) + " bytes exceeds the limit of " + std::to_string(options.body_limit),
          version);
    }
  }
  return std::nullopt;
}

AdminResponse handle_admin_request(const AdminRequest& request, AdminBackend& backend,
                                   const AdminServerOptions& options) {
  if (auto early = check_request_header(request, options)) return std::move(*early);
  const urls::url_view url = urls::parse_origin_form(request.target()).value();
  const MethodHandler* method = find_method(*find_route(url.path()), request.method());
  try {
    return method->handler(Call{request, url, backend, options});
  } catch (const AdminError& e) {
    // Only client and server error codes make sense here; anything else is a backend bug.
    const int code = e.status() >= 400 && e.status() <= 599 ? e.status() : 500;
    return error_response(static_cast<http::status>(code), e.what(), request.version());
  } catch (...) {
    std::string what = describe_exception();
    spdlog::error("admin API: {} {} failed: {}", std::string(request.method_string()), std::string(url.path()), what);
    return error_response(http::status::internal_server_error, "internal error: " + what, request.version());
  }
}

}  // namespace faultline::admin
