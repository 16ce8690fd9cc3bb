#pragma once
// What the engine sees of one HTTP request: the classification plus the headers rules can match.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/faults/request_info.hpp"

namespace faultline::faults {

struct Header {
  std::string name;
  std::string value;
};

struct Request {
  std::string method;
  std::string target;
  RequestInfo info;
  std::string user_agent;
  std::vector<Header> headers;

  // Case-insensitive header lookup; nullptr when absent.
  const std::string* header(std::string_view name) const;
};

// Classifies the target and picks the User-Agent out of `headers`.
Request make_request(std::string_view method, std::string_view target, std::vector<Header> headers = {});

}  // namespace faultline::faults
