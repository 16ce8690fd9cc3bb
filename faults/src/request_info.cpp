// Mirrors kube-apiserver's RequestInfoFactory.NewRequestInfo (APIPrefixes {api, apis}, groupless
// prefix api), including the list/watch and fieldSelector=metadata.name rules of newer releases.
#include "faultline/faults/request_info.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

#include <boost/algorithm/string/predicate.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace faultline::faults {
namespace {

struct Target {
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;  // decoded, '+' as space, in order
};

// Percent-decoded path and query parameters, as Go's url.URL.Path and URL.Query() give them.
Target parse_target(std::string_view target) {
  Target out;
  // Most requests (a GET of one object, a list without options) have neither a query nor an
  // escape: the path is the target as it is, whether Boost.URL accepts it or not (see below).
  if (target.starts_with('/') && target.find_first_of("?%") == std::string_view::npos) {
    out.path = std::string(target);
    return out;
  }
  // Origin form ("/api/v1/pods?watch=1") is what clients send; like Go's ParseRequestURI, a
  // leading "//" is part of the path, not an authority. Absolute form only from proxy clients.
  auto parsed = target.starts_with('/') ? boost::urls::parse_origin_form(target) : boost::urls::parse_uri(target);
  if (!parsed) {
    // Not a valid URL: keep the raw path, which is what a lenient server would route on.
    out.path = std::string(target.substr(0, target.find('?')));
    return out;
  }
  out.path = parsed->path();
  for (auto param : parsed->params()) out.query.emplace_back(param.key, param.value);
  return out;
}

const std::string* first_query_value(const Target& target, std::string_view key) {
  for (const auto& [k, v] : target.query)
    if (k == key) return &v;
  return nullptr;
}

// Go's strings.Split(strings.Trim(path, "/"), "/"), empty for "" or "/". The parts are views
// into `path` (no string per segment per request).
std::vector<std::string_view> split_path(std::string_view path) {
  auto first = path.find_first_not_of('/');
  if (first == std::string_view::npos) return {};
  auto last = path.find_last_not_of('/');
  path = path.substr(first, last - first + 1);
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  while (true) {
    auto slash = path.find('/', begin);
    parts.emplace_back(path.substr(begin, slash - begin));
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return parts;
}

std::string verb_for_method(std::string_view method) {
  if (method == "POST") return "create";
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return "";
}

// Go's conversion of a ListOptions bool: any value except "0" / "false" (any case) is true.
bool query_bool(const std::string& value) { return value != "0" && !boost::algorithm::iequals(value, "false"); }

// fields.splitTerms: split on commas that no backslash escapes.
std::vector<std::string_view> split_terms(std::string_view selector) {
  std::vector<std::string_view> terms;
  std::size_t start = 0;
  bool escaped = false;
  for (std::size_t i = 0; i < selector.size(); ++i) {
    if (escaped) escaped = false;
    else if (selector[i] == '\\') escaped = true;
    else if (selector[i] == ',') terms.push_back(selector.substr(start, i - start)), start = i + 1;
  }
  terms.push_back(selector.substr(start));
  return terms;
}

struct Term {
  std::string_view key, op, value;
};

// fields.splitTerm: the first "!=", "==" or "=" splits key from value.
std::optional<Term> split_term(std::string_view term) {
  for (std::size_t i = 0; i < term.size(); ++i)
    for (std::string_view op : {"!=", "==", "="})
      if (term.substr(i).starts_with(op)) return Term{term.substr(0, i), op, term.substr(i + op.size())};
  return std::nullopt;
}

// fields.UnescapeValue: "\\", "\," and "\=" are escapes; a bare ',' or '=' is an error.
std::optional<std::string> unescape_value(std::string_view raw) {
  std::string out;
  bool escaped = false;
  for (char c : raw) {
    if (escaped) {
      if (c != '\\' && c != ',' && c != '=') return std::nullopt;
      out += c, escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == ',' || c == '=') {
      return std::nullopt;
    } else {
      out += c;
    }
  }
  if (escaped) return std::nullopt;
  return out;
}

// fields.ParseSelector(selector).RequiresExactMatch("metadata.name"): the value of the first
// "metadata.name=" or "metadata.name==" term; nullopt when there is none or the selector is invalid.
std::optional<std::string> exact_name_in_field_selector(std::string_view selector) {
  std::optional<std::string> name;
  for (std::string_view text : split_terms(selector)) {
    if (text.empty()) continue;
    auto term = split_term(text);
    if (!term) return std::nullopt;
    auto value = unescape_value(term->value);
    if (!value) return std::nullopt;
    if (!name && term->key == "metadata.name" && term->op != "!=") name = *value;
  }
  return name;
}

// path.IsValidPathSegmentName
bool valid_path_segment_name(const std::string& name) {
  return name != "." && name != ".." && name.find('/') == std::string::npos && name.find('%') == std::string::npos;
}

// kube-apiserver decodes all ListOptions at once; when an integer option does not parse it keeps
// only the watch flag, so the fieldSelector name is not used either.
bool integer_options_parse(const Target& target) {
  for (const char* key : {"limit", "timeoutSeconds"}) {
    const std::string* value = first_query_value(target, key);
    if (!value) continue;
    long long number = 0;
    auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), number);
    if (ec != std::errc() || end != value->data() + value->size()) return false;
  }
  return true;
}

// The list/watch refinement for a GET without a name.
void refine_collection_get(RequestInfo& info, const Target& target) {
  const std::string* watch = first_query_value(target, "watch");
  info.verb = (watch && query_bool(*watch)) ? "watch" : "list";
  const std::string* field_selector = first_query_value(target, "fieldSelector");
  if (!field_selector || !integer_options_parse(target)) return;
  auto name = exact_name_in_field_selector(*field_selector);
  if (name && valid_path_segment_name(*name)) info.name = *name;
}

void record_selectors(RequestInfo& info, const Target& target) {
  if (info.verb != "list" && info.verb != "watch" && info.verb != "deletecollection") return;
  if (const auto* labels = first_query_value(target, "labelSelector")) info.label_selector = *labels;
  if (const auto* fields = first_query_value(target, "fieldSelector")) info.field_selector = *fields;
}

// Fills resource/subresource/name from parts "resource/name/subresource/...".
void assign_parts(RequestInfo& info, const std::vector<std::string_view>& parts) {
  if (parts.size() >= 3 && info.verb != "proxy") info.subresource = parts[2];
  if (parts.size() >= 2) info.name = parts[1];
  if (!parts.empty()) info.resource = parts[0];
}

void classify_resource(RequestInfo& info, std::string_view method, std::vector<std::string_view> parts,
                       const Target& target) {
  info.is_resource_request = true;
  info.api_version = parts.front();
  parts.erase(parts.begin());

  if (parts.front() == "proxy" || parts.front() == "watch") {
    if (parts.size() < 2) {
      info.malformed = true;
      return;
    }
    info.verb = parts.front();
    parts.erase(parts.begin());
  } else {
    info.verb = verb_for_method(method);
  }

  if (parts.front() == "namespaces") {
    if (parts.size() > 1) {
      info.namespace_ = parts[1];
      if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize")
        parts.erase(parts.begin(), parts.begin() + 2);
    }
  }
  assign_parts(info, parts);

  if (info.name.empty() && info.verb == "get") refine_collection_get(info, target);
  if (info.name.empty() && info.verb == "delete") info.verb = "deletecollection";
  record_selectors(info, target);
}

}  // namespace

RequestInfo classify(std::string_view method, std::string_view target) {
  Target parsed = parse_target(target);
  RequestInfo info;
  info.path = std::move(parsed.path);
  // ASCII lower case (a method is a token): no locale lookup per character.
  info.verb.reserve(method.size());
  for (char c : method) info.verb += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;

  std::vector<std::string_view> parts = split_path(info.path);
  if (parts.size() < 3 || (parts[0] != "api" && parts[0] != "apis")) return info;
  info.api_prefix = parts[0];
  parts.erase(parts.begin());
  if (info.api_prefix == "apis") {
    if (parts.size() < 3) return info;
    info.api_group = parts[0];
    parts.erase(parts.begin());
  }
  classify_resource(info, method, std::move(parts), parsed);
  return info;
}

bool RequestInfo::is_connect() const {
  if (!is_resource_request) return false;
  if (verb == "proxy") return true;
  if (!api_group.empty()) return false;
  if (resource == "pods")
    return subresource == "exec" || subresource == "attach" || subresource == "portforward" || subresource == "proxy";
  return (resource == "services" || resource == "nodes") && subresource == "proxy";
}

std::string RequestInfo::resource_path() const { return subresource.empty() ? resource : resource + "/" + subresource; }

}  // namespace faultline::faults
