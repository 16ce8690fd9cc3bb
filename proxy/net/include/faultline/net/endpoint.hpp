#pragma once
// host:port and https:// URL parsing for flags and kubeconfig servers.

#include <cstdint>
#include <string>

namespace faultline::net {

struct Endpoint {
  std::string host;  // DNS name or IP literal, without brackets
  std::uint16_t port = 0;
  std::string to_string() const;  // host:port, IPv6 in brackets
};

// "HOST:PORT" or "[v6]:PORT"; port 0 allowed. Throws std::invalid_argument with the input.
Endpoint parse_host_port(const std::string& text);

// "https://HOST[:PORT][/base-path]" -> endpoint (port 443 by default) and base path (no trailing
// '/'). Throws std::invalid_argument for other schemes or malformed URLs.
struct HttpsUrl {
  Endpoint endpoint;
  std::string base_path;
};
HttpsUrl parse_https_url(const std::string& url);

}  // namespace faultline::net
