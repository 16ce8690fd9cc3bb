#include "faultline/net/endpoint.hpp"

#include <boost/url/parse.hpp>

#include <charconv>
#include <stdexcept>

namespace faultline::net {
namespace {

std::uint16_t parse_port(const std::string& text, const std::string& input) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535) {
    throw std::invalid_argument("bad port in '" + input + "' (want 0-65535)");
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace

std::string Endpoint::to_string() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Endpoint parse_host_port(const std::string& text) {
  Endpoint endpoint;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      throw std::invalid_argument("bad address '" + text + "' (want [IPv6]:PORT)");
    }
    endpoint.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || text.find(':') != colon) {
      throw std::invalid_argument("bad address '" + text + "' (want HOST:PORT)");
    }
    endpoint.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  endpoint.port = parse_port(port, text);
  return endpoint;
}

HttpsUrl parse_https_url(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) throw std::invalid_argument("bad URL '" + url + "': " + parsed.error().message());
  if (parsed->scheme() != "https") throw std::invalid_argument("URL '" + url + "' must start with https://");
  if (parsed->host().empty()) throw std::invalid_argument("URL '" + url + "' has no host");
  if (parsed->has_query() || parsed->has_fragment()) {
    throw std::invalid_argument("URL '" + url + "' must not have a query or fragment");
  }
  HttpsUrl out;
  out.endpoint.host = parsed->host_type() == boost::urls::host_type::ipv6 ? std::string(parsed->encoded_host_address())
                                                                          : std::string(parsed->host());
  if (!out.endpoint.host.empty() && out.endpoint.host.front() == '[') {
    out.endpoint.host = out.endpoint.host.substr(1, out.endpoint.host.size() - 2);
  }
  out.endpoint.port = parsed->has_port() ? parse_port(std::string(parsed->port()), url) : 443;
  out.base_path = std::string(parsed->encoded_path());
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  return out;
}

}  // namespace faultline::net
