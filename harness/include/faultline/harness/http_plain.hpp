#pragma once
// Plain-HTTP calls to the local services that are not the apiserver: YuniKorn's REST API and the
// proxy's admin API (both http://127.0.0.1:PORT). One connection per call: these are rare.
#include <chrono>
#include <map>
#include <string>

namespace faultline::harness {

struct PlainResponse {
    int status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string header(const std::string& lowerName) const {
        auto it = headers.find(lowerName);
        return it == headers.end() ? std::string() : it->second;
    }
};

// Throws std::runtime_error naming the URL when the service cannot be reached or the URL is not http://.
PlainResponse http_call(const std::string& method, const std::string& url, const std::string& body = {},
                        const std::string& contentType = {}, const std::string& bearerToken = {},
                        std::chrono::seconds timeout = std::chrono::seconds(30));

}  // namespace faultline::harness
