#include "faultline/faults/actions/stale_read.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded, as Go's url.ParseQuery reads it ('+' is a space; a bad escape
// is kept as it is).
std::string form_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// Calls f(name, raw_pair) for each `&`-separated pair of the query of `target`.
template <class F>
void for_each_pair(std::string_view target, F&& f) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;
    f(form_decode(pair.substr(0, pair.find('='))), pair);
  }
}

}  // namespace

bool is_resource_version(std::string_view text) {
  if (text.empty() || text.size() > 20 || text[0] == '0') return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return text.size() < 20 || text <= "18446744073709551615";
}

std::optional<std::string> query_parameter(std::string_view target, std::string_view name) {
  std::optional<std::string> value;
  for_each_pair(target, [&](const std::string& key, std::string_view pair) {
    if (value || key != name) return;
    auto eq = pair.find('=');
    value = eq == std::string_view::npos ? std::string() : form_decode(pair.substr(eq + 1));
  });
  return value;
}

std::string rewrite_to_exact(std::string_view target, std::string_view rv) {
  std::string out(target.substr(0, target.find('?')));
  char sep = '?';
  for_each_pair(target, [&](const std::string& key, std::string_view pair) {
    if (key == "resourceVersion" || key == "resourceVersionMatch") return;
    out += sep;
    out += pair;
    sep = '&';
  });
  out += sep;
  out += "resourceVersion=";
  out += rv;
  out += "&resourceVersionMatch=Exact";
  return out;
}

bool StaleRead::applies_to(const Request& request) {
  if (request.info.verb != "list") return false;
  auto next = query_parameter(request.target, "continue");
  return !next || next->empty();
}

StaleRead StaleRead::parse(detail::MapReader& reader) {
  StaleRead stale;
  if (auto rv = reader.string("resourceVersion")) {
    if (is_resource_version(*rv)) stale.resource_version = *rv;
    else
      reader.error_at("resourceVersion", "must be a resourceVersion as kube-apiserver writes one (1 to " +
                                             std::string("18446744073709551615, decimal, no leading zero), got \"") +
                                             *rv + "\"");
  }
  return stale;
}

}  // namespace faultline::faults::actions
