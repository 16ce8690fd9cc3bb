#pragma once
// A small Kubernetes API client: HTTPS keep-alive connection pool (Boost.Beast over faultline::net
// TLS), JSON bodies, create/get/list (paginated)/watch (resourceVersion, reconnect, 410 -> relist)/
// delete/patch. Transient failures (connection errors, 429, 5xx) are retried with exponential
// backoff and counted, so the report can say how much the harness itself had to retry.
// Every public call is thread-safe; each takes a pooled connection for its duration.
#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "faultline/net/kubeconfig.hpp"

namespace faultline::harness {

inline constexpr const char* kHarnessUserAgent = "faultline-harness/0.1";

// An answer from the apiserver that is an error (after retries), with its Status message.
struct ApiError : std::runtime_error {
    ApiError(int httpStatus, std::string statusReason, const std::string& message)
        : std::runtime_error(message), status(httpStatus), reason(std::move(statusReason)) {}
    int status;
    std::string reason;  // Status.reason, e.g. AlreadyExists, NotFound, Expired
};

// The apiserver could not be reached or the connection broke, after all retries.
struct TransportError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct RetryPolicy {
    int maxAttempts = 8;  // including the first
    std::chrono::milliseconds initialBackoff{100};
    std::chrono::milliseconds maxBackoff{3000};
};

struct KubeClientOptions {
    net::KubeconfigContext cluster;
    std::string userAgent = kHarnessUserAgent;
    RetryPolicy retry;
    std::chrono::seconds requestTimeout{30};
};

struct HttpResult {
    int status = 0;
    std::string body;
    std::string retryAfter;  // Retry-After header, if any
};

struct ListResult {
    std::vector<boost::json::value> items;
    std::string resourceVersion;
};

enum class WatchEnd { stopped, gone };  // gone: 410, the caller must relist

struct WatchEvent {
    std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
    const boost::json::value& object;
};

class KubeClient {
public:
    explicit KubeClient(KubeClientOptions options);
    ~KubeClient();
    KubeClient(const KubeClient&) = delete;
    KubeClient& operator=(const KubeClient&) = delete;

    // One HTTP exchange with retries of transient failures; non-2xx answers are returned, not thrown.
    HttpResult request(const std::string& method, const std::string& target, const std::string& body = {},
                       const std::string& contentType = "application/json");

    boost::json::value create(const std::string& collectionPath, const boost::json::value& object);
    std::optional<boost::json::value> get(const std::string& path);  // nullopt on 404
    // All pages (limit/continue); a 410 on a continue token restarts the list from scratch.
    ListResult list(const std::string& collectionPath, const std::string& labelSelector = {}, int pageSize = 500);
    bool remove(const std::string& path);  // false on 404
    boost::json::value patch(const std::string& path, const boost::json::value& mergePatch);

    // Watches collectionPath from resourceVersion until `stop` is set (returns stopped) or the
    // server says the version is gone (returns gone). Dropped streams are resumed from the last
    // version seen (including bookmarks), counting a retry.
    WatchEnd watch(const std::string& collectionPath, std::string resourceVersion,
                   const std::function<void(const WatchEvent&)>& onEvent, const std::atomic<bool>& stop,
                   const std::string& labelSelector = {});

    // Transient failures retried so far, by kind ("connection", "429", "500", ...).
    std::map<std::string, std::int64_t> retries() const;
    const std::string& userAgent() const { return options_.userAgent; }
    const std::string& server() const { return options_.cluster.server; }

    class Connection;  // one keep-alive TLS connection (implementation detail)

private:
    // An idle pooled connection (*reused = true) or a new one. An idle connection the server has
    // closed is dropped together with every other idle one.
    std::unique_ptr<Connection> acquire(bool* reused = nullptr);
    void release(std::unique_ptr<Connection> c);
    void discard_idle();
    void count_retry(const std::string& kind);
    std::chrono::milliseconds backoff(int attempt) const;

    KubeClientOptions options_;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Connection>> idle_;
    std::map<std::string, std::int64_t> retries_;
};

// Percent-encodes a query parameter value.
std::string url_encode(const std::string& value);

}  // namespace faultline::harness
