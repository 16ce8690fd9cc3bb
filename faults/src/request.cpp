#include "faultline/faults/request.hpp"

#include <strings.h>

namespace faultline::faults {

const std::string* Request::header(std::string_view name) const {
  for (const auto& h : headers)
    if (h.name.size() == name.size() && strncasecmp(h.name.data(), name.data(), name.size()) == 0) return &h.value;
  return nullptr;
}

Request make_request(std::string_view method, std::string_view target, std::vector<Header> headers) {
  Request request;
  request.method = std::string(method);
  request.target = std::string(target);
  request.info = classify(method, target);
  request.headers = std::move(headers);
  if (const auto* agent = request.header("User-Agent")) request.user_agent = *agent;
  return request;
}

}  // namespace faultline::faults
