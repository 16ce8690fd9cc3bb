#pragma once
// A small Kubernetes API client: HTTPS keep-alive connection pool (Boost.Beast over faultline::net
// TLS), JSON bodies, create/get/list (paginated)/watch (resourceVersion, reconnect, 410 -> relist)/
// delete/patch. Transient failures (connection errors, 429, 5xx) are retried with exponential
// backoff and counted, so the report can say how much the harness itself had to retry.
// Every call is a coroutine (faultline/harness/async.hpp) on the client's executor, which must be
// single-threaded (the pool and the retry counters are not locked); concurrent calls each take a
// pooled connection for their duration. A watch stops when it is cancelled. Answers are read
// within ReadLimits: past one, a call throws LimitError (not retried).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultline/harness/limits.hpp"
#include "faultline/net/kubeconfig.hpp"

namespace faultline::harness {

inline constexpr const char* kHarnessUserAgent = "faultline-harness/0.1";

// An answer from the apiserver that is an error (after retries), with its Status message.
struct ApiError : std::runtime_error {
  ApiError(int http_status, std::string status_reason, const std::string& message)
      : std::runtime_error(message), status(http_status), reason(std::move(status_reason)) {}
  int status;
  std::string reason;  // Status.reason, e.g. AlreadyExists, NotFound, Expired
};

// The apiserver could not be reached or the connection broke, after all retries.
struct TransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RetryPolicy {
  int max_attempts = 8;  // including the first
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{3000};
};

struct KubeClientOptions {
  net::KubeconfigContext cluster;
  std::string user_agent = kHarnessUserAgent;
  RetryPolicy retry;
  std::chrono::seconds request_timeout{30};
  ReadLimits limits;
};

struct HttpResult {
  int status = 0;
  std::string body;
  std::string retry_after;  // Retry-After header, if any
};

struct ListResult {
  std::vector<boost::json::value> items;
  std::string resource_version;
};

enum class WatchEnd { stopped, gone };  // gone: 410, the caller must relist

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  const boost::json::value& object;
};

class KubeClient {
 public:
  KubeClient(boost::asio::any_io_executor executor, KubeClientOptions options);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  // One HTTP exchange with retries of transient failures; non-2xx answers are returned, not thrown.
  // target: path and query (build queries with with_query()).
  boost::asio::awaitable<HttpResult> request(std::string method, std::string target, std::string body = {},
                                             std::string content_type = "application/json");

  boost::asio::awaitable<boost::json::value> create(std::string collection_path, boost::json::value object);
  boost::asio::awaitable<std::optional<boost::json::value>> get(std::string path);  // nullopt on 404
  // All pages (limit/continue); a 410 on a continue token (its snapshot was compacted) makes the
  // list once more in one request without a limit, as client-go's pager does. The pages together
  // are bounded by limits.max_body_bytes, like one answer.
  boost::asio::awaitable<ListResult> list(std::string collection_path, std::string label_selector = {},
                                          int page_size = 500);
  boost::asio::awaitable<bool> remove(std::string path);  // false on 404
  boost::asio::awaitable<boost::json::value> patch(std::string path, boost::json::value merge_patch);

  // Watches collection_path from resource_version until the server says the version is gone
  // (returns gone) or the caller cancels the coroutine (returns stopped; e.g. co_spawn with
  // asio::bind_cancellation_slot and a cancellation_signal the caller emits). Dropped streams are
  // resumed from the last version seen (including bookmarks), counting a retry.
  boost::asio::awaitable<WatchEnd> watch(std::string collection_path, std::string resource_version,
                                         std::function<void(const WatchEvent&)> on_event,
                                         std::string label_selector = {});

  // Transient failures retried so far, by kind ("connection", "429", "500", ...).
  std::map<std::string, std::int64_t> retries() const;
  const std::string& user_agent() const { return options_.user_agent; }
  const std::string& server() const { return options_.cluster.server; }
  const boost::asio::any_io_executor& executor() const { return executor_; }

  class Connection;  // one keep-alive TLS connection (implementation detail)

 private:
  // An idle pooled connection (*reused = true) or a new one. An idle connection the server has
  // closed is dropped together with every other idle one.
  boost::asio::awaitable<std::unique_ptr<Connection>> acquire(bool* reused = nullptr);
  void release(std::unique_ptr<Connection> c);
  void discard_idle();
  void count_retry(const std::string& kind);
  std::chrono::milliseconds backoff(int attempt) const;

  boost::asio::any_io_executor executor_;
  KubeClientOptions options_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::map<std::string, std::int64_t> retries_;
};

// path (or a whole URL) with the query parameters appended, percent-encoded by Boost.URL; empty
// values are left out.
std::string with_query(const std::string& path,
                       std::initializer_list<std::pair<std::string_view, std::string_view>> params);

}  // namespace faultline::harness
