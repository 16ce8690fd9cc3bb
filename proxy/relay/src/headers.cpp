#include "faultline/proxy/headers.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>

namespace faultline::proxy {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view value) {
  std::vector<std::string_view> out;
  while (true) {
    auto comma = value.find(',');
    out.push_back(trim(value.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

// Every hop-by-hop name is one Beast knows, so a field's enum decides.
bool is_hop_by_hop(boost::beast::http::field known) {
  using boost::beast::http::field;
  switch (known) {
    case field::connection:
    case field::keep_alive:
    case field::proxy_connection:
    case field::proxy_authenticate:
    case field::proxy_authorization:
    case field::te:
    case field::trailer:
    case field::upgrade:
      return true;
    default:
      return false;
  }
}

bool is_hop_by_hop(std::string_view name) { return is_hop_by_hop(boost::beast::http::string_to_field(name)); }

std::vector<std::string> connection_tokens(std::string_view connection_value) {
  std::vector<std::string> out;
  if (connection_value.empty()) return out;  // most requests and responses: no Connection header
  for (auto token : split_commas(connection_value)) {
    if (token.empty()) continue;
    // ASCII lower case (header tokens are ASCII): no locale lookup per token.
    std::string lower(token);
    for (char& c : lower) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    out.push_back(std::move(lower));
  }
  return out;
}

// Connection and Upgrade of an upgrade stay: they are the handshake being relayed.
static bool kept_for_upgrade(boost::beast::http::field known, bool keep_upgrade) {
  return keep_upgrade &&
         (known == boost::beast::http::field::connection || known == boost::beast::http::field::upgrade);
}

bool drops_field(boost::beast::http::field known, bool keep_upgrade) {
  return !kept_for_upgrade(known, keep_upgrade) && is_hop_by_hop(known);
}

bool drops_field(boost::beast::http::field known, std::string_view name,
                 const std::vector<std::string>& connection_named, bool keep_upgrade) {
  if (kept_for_upgrade(known, keep_upgrade)) return false;  // even when Connection names them
  if (is_hop_by_hop(known)) return true;
  // Compared in place, without a lower-cased copy of every name (one per header per message).
  bool listed = std::any_of(connection_named.begin(), connection_named.end(),
                            [&](const std::string& token) { return boost::beast::iequals(token, name); });
  return listed && !(keep_upgrade && boost::beast::iequals(name, "upgrade"));
}

std::string accept_json_instead_of_protobuf(std::string_view accept) {
  if (!boost::algorithm::icontains(accept, "protobuf")) return std::string(accept);
  std::string out;
  bool has_json = false;
  for (auto item : split_commas(accept)) {
    std::string_view media = trim(item.substr(0, item.find(';')));
    if (boost::algorithm::icontains(media, "protobuf")) continue;
    if (boost::beast::iequals(media, "application/json")) has_json = true;
    if (!out.empty()) out += ", ";
    out += item;
  }
  if (!has_json) out = out.empty() ? "application/json" : "application/json, " + out;
  return out;
}

bool is_json_content_type(std::string_view content_type) {
  return boost::beast::iequals(trim(content_type.substr(0, content_type.find(';'))), "application/json");
}

}  // namespace faultline::proxy
