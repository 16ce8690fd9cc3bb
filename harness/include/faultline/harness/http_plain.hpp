#pragma once
// HTTP calls to the local services that are not the apiserver: YuniKorn's REST API and the
// proxy's admin API (both http://127.0.0.1:PORT), the system's metrics (http:// or https:// with a
// self-signed certificate, not verified). One connection per call: these are rare.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <string>

#include "faultline/harness/limits.hpp"

namespace faultline::harness {

struct PlainResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// A coroutine on the caller's executor; one deadline (timeout) covers connect, write and read.
// Throws std::runtime_error naming the URL when the service cannot be reached or the URL is not
// http:// or https://, LimitError when the answer's header or body is over `limits`.
boost::asio::awaitable<PlainResponse> http_call(std::string method, std::string url, std::string body = {},
                                                std::string content_type = {}, std::string bearer_token = {},
                                                std::chrono::seconds timeout = std::chrono::seconds(30),
                                                ReadLimits limits = {});

}  // namespace faultline::harness
