#include "faultline/harness/kube_client.hpp"

#include <poll.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <boost/url/url.hpp>

#include <atomic>
#include <limits>
#include <memory>
#include <new>

#include "faultline/harness/async.hpp"
#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"

namespace faultline::harness {
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using error_code = boost::system::error_code;

namespace {

// A failed step of a connection: resolve, connect, TLS handshake, write, read. `no_response`: the
// connection failed before one byte of an answer arrived; on a reused keep-alive connection that is
// what a server closing it while idle looks like. what() is "<step>: <what happened>", without the
// library's error category and source location that boost::system::system_error::what() appends.
struct ExchangeError : boost::system::system_error {
  ExchangeError(error_code ec, const char* step, std::chrono::seconds timeout, bool no_response_bytes = false)
      : boost::system::system_error(ec, step),
        no_response(no_response_bytes),
        text(std::string(step) + ": " +
             (ec == beast::error::timeout ? "no answer within " + std::to_string(timeout.count()) + "s"
                                          : ec.message())) {}
  const char* what() const noexcept override { return text.c_str(); }
  bool no_response;
  std::string text;
};

void throw_step(error_code ec, const char* step, std::chrono::seconds timeout) {
  if (ec) throw ExchangeError(ec, step, timeout);
}

}  // namespace

// One TLS connection. Every operation runs under a tcp_stream deadline (the request timeout; five
// minutes for a watch stream's next bytes); cancelling the coroutine cancels the operation. What it
// reads is bounded by the client's ReadLimits (LimitError past them).
class KubeClient::Connection {
 public:
  static asio::awaitable<std::unique_ptr<Connection>> open(asio::ssl::context& tls, const net::Endpoint& ep,
                                                           const std::string& verify_name, bool verify,
                                                           std::chrono::seconds timeout, const ReadLimits& limits) {
    auto executor = co_await asio::this_coro::executor;
    std::unique_ptr<Connection> c(new Connection(executor, tls, timeout, limits, "https://" + ep.to_string()));
    asio::ip::tcp::resolver resolver(executor);
    // Each of the TCP connect and the TLS handshake has the whole timeout.
    const net::TlsConnectOptions connect{
        .verify_name = verify_name, .verify = verify, .timeout = timeout, .deadline_per_step = true};
    if (auto failure = co_await net::connect_tls(c->stream_, resolver, ep, connect)) {
      throw ExchangeError(failure->ec, failure->step_name().c_str(), timeout);
    }
    co_return c;
  }

  // Throws ExchangeError, or LimitError for an answer over the limits.
  asio::awaitable<HttpResult> exchange(const http::request<http::string_body>& req, bool& keep_alive) {
    tcp().expires_after(timeout_);
    auto [wec, written] = co_await http::async_write(stream_, req, use_tuple);
    if (wec) throw ExchangeError(wec, "write request", timeout_, true);
    http::response_parser<http::string_body> parser;
    limit(parser);
    tcp().expires_after(timeout_);
    auto [rec, read] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
    throw_if_limit(rec, limits_, describe(req));
    if (rec) {
      // A timeout is a server that did not answer, not one that closed the connection.
      throw ExchangeError(rec, "read response", timeout_, !parser.got_some() && rec != beast::error::timeout);
    }
    const auto& res = parser.get();
    keep_alive = res.keep_alive();
    HttpResult out;
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    if (auto it = res.find(http::field::retry_after); it != res.end()) out.retry_after = std::string(it->value());
    co_return out;
  }

  // Streams a chunked answer line by line. Returns the status; a non-200 answer's body goes to
  // error_body. Stops when on_line returns false or the server ends the stream; a cancelled read
  // throws (operation_aborted). What on_line throws, and a line over the limit (LimitError), is
  // thrown here, after the read it interrupted.
  asio::awaitable<int> stream(const http::request<http::string_body>& req,
                              const std::function<bool(std::string_view)>& on_line, std::string& error_body) {
    tcp().expires_after(timeout_);
    auto [wec, written] = co_await http::async_write(stream_, req, use_tuple);
    throw_step(wec, "write request", timeout_);
    http::response_parser<http::string_body> parser;
    limit(parser);
    tcp().expires_after(timeout_);
    auto [hec, header] = co_await http::async_read_header(stream_, buffer_, parser, use_tuple);
    throw_if_limit(hec, limits_, describe(req));
    throw_step(hec, "read watch header", timeout_);
    int status = static_cast<int>(parser.get().result_int());
    if (status != 200) {
      tcp().expires_after(timeout_);
      auto [bec, body] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
      throw_if_limit(bec, limits_, describe(req));
      throw_step(bec, "read error body", timeout_);
      error_body = parser.get().body();
      co_return status;
    }
    // Only the chunks are lines: a body without them would pile up in the parser unread.
    if (!parser.chunked()) throw std::runtime_error(describe(req) + ": the watch answer is not chunked");
    parser.body_limit(boost::none);  // a stream; each of its lines is bounded below
    std::string pending;
    bool wanted = true;
    std::exception_ptr failure;
    auto on_chunk = [&](std::uint64_t, std::string_view data, error_code& ec) -> std::size_t {
      try {
        const std::size_t unscanned = pending.size();  // what came before has no newline: not searched again
        pending.append(data.data(), data.size());
        std::size_t start = 0;
        for (auto nl = pending.find('\n', unscanned); nl != std::string::npos && wanted;
             nl = pending.find('\n', start)) {
          wanted = on_line(std::string_view(pending).substr(start, nl - start));
          start = nl + 1;
        }
        pending.erase(0, start);
        if (wanted && pending.size() > limits_.max_watch_line_bytes) {
          throw LimitError(describe(req) + ": a watch event (one line of the stream) is over the limit of " +
                           byte_limit_text(limits_.max_watch_line_bytes) + " (a fixed limit)");
        }
      } catch (...) {
        // Not thrown through Beast's read: the error ends the read, the coroutine rethrows.
        failure = std::current_exception();
        ec = asio::error::interrupted;
      }
      return data.size();
    };
    parser.on_chunk_body(on_chunk);
    while (!parser.is_done() && wanted) {
      // A quiet watch still gets bookmarks about once a minute; five silent minutes is dead.
      tcp().expires_after(std::chrono::minutes(5));
      auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser, use_tuple);
      if (failure) std::rethrow_exception(failure);
      throw_if_limit(ec, limits_, describe(req));
      throw_step(ec, "read watch stream", std::chrono::minutes(5));
    }
    co_return status;
  }

  // An idle keep-alive connection has nothing to read: anything readable (the server's TLS
  // close_notify, its FIN or a reset) means the server has closed it.
  bool closed_by_peer() {
    if (buffer_.size() > 0) return true;
    pollfd p{tcp().socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) != 0;  // readable, hung up, error, or poll itself failed
  }

 private:
  Connection(const asio::any_io_executor& executor, asio::ssl::context& tls, std::chrono::seconds timeout,
             const ReadLimits& limits, std::string origin)
      : stream_(executor, tls),
        buffer_(read_buffer_bound(limits)),
        timeout_(timeout),
        limits_(limits),
        origin_(std::move(origin)) {}

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void limit(http::response_parser<http::string_body>& parser) const {
    parser.body_limit(limits_.max_body_bytes);
    parser.header_limit(limits_.max_header_bytes);
  }

  // "GET https://host:port/path?query", for errors.
  std::string describe(const http::request<http::string_body>& req) const {
    return std::string(req.method_string()) + " " + origin_ + std::string(req.target());
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;  // bounded: holds at most one header or chunk header beyond what was parsed
  std::chrono::seconds timeout_;
  ReadLimits limits_;
  std::string origin_;
};

struct KubeClient::Impl {
  explicit Impl(const net::KubeconfigContext& c)
      : tls(net::make_client_context(c.tls_options())), url(net::parse_https_url(c.server)) {}
  asio::ssl::context tls;
  net::HttpsUrl url;
};

namespace {

// RFC 9110 section 9.2.2: repeating these has the same effect as sending them once.
bool idempotent(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" || method == "OPTIONS";
}

bool transient_status(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

ApiError api_error(int status, const std::string& body, const std::string& what) {
  std::string reason;
  std::string message = body.substr(0, 300);
  error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.get_object();
    if (auto* r = o.if_contains("reason"); r != nullptr && r->is_string()) reason = std::string(r->get_string());
    if (auto* m = o.if_contains("message"); m != nullptr && m->is_string()) message = std::string(m->get_string());
  }
  return ApiError(status, reason, what + ": HTTP " + std::to_string(status) + ": " + message);
}

json::value parse_body(const HttpResult& res, const std::string& what, json::storage_ptr storage = {}) {
  error_code ec;
  json::value v = json::parse(res.body, ec, std::move(storage));
  if (ec) throw std::runtime_error(what + ": answer is not JSON: " + ec.message());
  return v;
}

// Where the parsed pages of one list live, within a budget: an allocation past it throws, so
// parsing stops at the budget rather than after the page. Parsed JSON takes more memory than its
// text (a value is at least 16 bytes; "[1,1,1,...]" is two bytes per value), so a list is bounded
// by what it holds, not only by the bytes it was sent as. Thread-safe counting: the items outlive
// the list call and may be copied or freed anywhere. The counts are shared by the list call and
// the resource (json::make_shared_resource keeps the resource itself out of reach).
struct ListBudget {
  explicit ListBudget(std::uint64_t bytes) : budget(bytes) {}
  std::atomic<std::uint64_t> held{0};
  std::atomic<std::uint64_t> budget;
};

class ListMemory final : public json::memory_resource {  // allocates within a ListBudget
 public:
  struct OverBudget {};  // thrown by an allocation past the budget
  explicit ListMemory(std::shared_ptr<ListBudget> budget) : budget_(std::move(budget)) {}

 private:
  void* do_allocate(std::size_t n, std::size_t align) override {
    if (budget_->held.load() + n > budget_->budget.load()) throw OverBudget{};
    void* p = align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? ::operator new(n, std::align_val_t(align)) : ::operator new(n);
    budget_->held += n;
    return p;
  }
  void do_deallocate(void* p, std::size_t n, std::size_t align) override {
    // The form that allocated it (aligned only past the default alignment); unsized, as clang
    // does not enable sized deallocation.
    if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) ::operator delete(p, std::align_val_t(align));
    else ::operator delete(p);
    budget_->held -= n;
  }
  bool do_is_equal(const json::memory_resource& other) const noexcept override { return this == &other; }

  std::shared_ptr<ListBudget> budget_;
};

std::string resource_version_of(const json::value& object) {
  if (!object.is_object()) return {};
  auto* meta = object.get_object().if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return {};
  auto* rv = meta->get_object().if_contains("resourceVersion");
  return rv != nullptr && rv->is_string() ? std::string(rv->get_string()) : std::string();
}

http::request<http::string_body> make_request(const std::string& method, const std::string& target,
                                              const std::string& body, const std::string& content_type,
                                              const KubeClientOptions& o, const net::HttpsUrl& url) {
  http::request<http::string_body> req{http::string_to_verb(method), url.base_path + target, 11};
  req.set(http::field::host, url.endpoint.to_string());
  req.set(http::field::user_agent, o.user_agent);
  req.set(http::field::accept, "application/json");
  if (!o.cluster.token.empty()) req.set(http::field::authorization, "Bearer " + o.cluster.token);
  if (!body.empty()) {
    req.set(http::field::content_type, content_type);
    req.body() = body;
  }
  req.keep_alive(true);
  req.prepare_payload();
  return req;
}

}  // namespace

std::string with_query(const std::string& path,
                       std::initializer_list<std::pair<std::string_view, std::string_view>> params) {
  boost::urls::url url = boost::urls::parse_uri_reference(path).value();
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    // Everything but the unreserved characters is percent-encoded: Go's query parser reads a
    // literal '+' (as in a base64 continue token) as a space.
    url.encoded_params().append({boost::urls::encode(key, boost::urls::unreserved_chars),
                                 boost::urls::encode(value, boost::urls::unreserved_chars)});
  }
  return std::string(url.buffer());
}

KubeClient::KubeClient(asio::any_io_executor executor, KubeClientOptions options)
    : executor_(std::move(executor)), options_(std::move(options)), impl_(std::make_unique<Impl>(options_.cluster)) {}

KubeClient::~KubeClient() = default;

asio::awaitable<std::unique_ptr<KubeClient::Connection>> KubeClient::acquire(bool* reused) {
  if (reused != nullptr) *reused = false;
  std::unique_ptr<Connection> pooled;
  if (!idle_.empty()) {
    pooled = std::move(idle_.back());
    idle_.pop_back();
  }
  if (pooled) {
    if (!pooled->closed_by_peer()) {
      if (reused != nullptr) *reused = true;
      co_return pooled;
    }
    // The server closed the most recently used idle connection (its idle timeout): the others
    // have been idle at least as long.
    discard_idle();
  }
  const auto& c = options_.cluster;
  const std::string verify_name = c.tls_server_name.empty() ? impl_->url.endpoint.host : c.tls_server_name;
  co_return co_await Connection::open(impl_->tls, impl_->url.endpoint, verify_name, !c.insecure_skip_verify,
                                      options_.request_timeout, options_.limits);
}

void KubeClient::discard_idle() { idle_.clear(); }

void KubeClient::release(std::unique_ptr<Connection> c) { idle_.push_back(std::move(c)); }

void KubeClient::count_retry(const std::string& kind) { ++retries_[kind]; }

std::map<std::string, std::int64_t> KubeClient::retries() const { return retries_; }

std::chrono::milliseconds KubeClient::backoff(int attempt) const {
  auto d = options_.retry.initial_backoff * (1LL << std::min(attempt, 10));
  return std::min<std::chrono::milliseconds>(d, options_.retry.max_backoff);
}

asio::awaitable<HttpResult> KubeClient::request(std::string method, std::string target, std::string body,
                                                std::string content_type) {
  const auto req = make_request(method, target, body, content_type, options_, impl_->url);
  int stale_connections = 0;
  for (int attempt = 1;; ++attempt) {
    bool reused = false;
    std::chrono::milliseconds wait{0};
    try {
      std::unique_ptr<Connection> conn = co_await acquire(&reused);
      bool keep_alive = false;
      HttpResult res = co_await conn->exchange(req, keep_alive);
      if (keep_alive) release(std::move(conn));
      if (!transient_status(res.status) || attempt >= options_.retry.max_attempts) co_return res;
      count_retry(std::to_string(res.status));
      wait = backoff(attempt);
      if (!res.retry_after.empty() && std::isdigit(static_cast<unsigned char>(res.retry_after[0]))) {
        wait = std::max<std::chrono::milliseconds>(wait, std::chrono::seconds(std::stoi(res.retry_after)));
      }
    } catch (const boost::system::system_error& e) {
      const auto* exchange = dynamic_cast<const ExchangeError*>(&e);
      if (reused && exchange != nullptr && exchange->no_response) {
        // The server closed this keep-alive connection while it was idle, just before or
        // as the request arrived. Its idle siblings are as old: drop them all. That is not
        // a failure of the API, so a request that may safely be repeated goes out again
        // at once on a new connection (the pool is empty now) without counting an attempt.
        discard_idle();
        if (idempotent(method) && ++stale_connections <= options_.retry.max_attempts) {
          --attempt;
          continue;
        }
      }
      if (attempt >= options_.retry.max_attempts) {
        // what() of an ExchangeError names the step; any other system_error only by its message.
        const std::string what = exchange != nullptr ? exchange->what() : e.code().message();
        throw TransportError(method + " " + server() + target + ": " + what + " (after " + std::to_string(attempt) +
                             " attempts)");
      }
      count_retry("connection");
      wait = backoff(attempt);
    }
    co_await sleep_for(wait);  // not inside the catch block: a handler cannot co_await
  }
}

asio::awaitable<json::value> KubeClient::create(std::string collection_path, json::value object) {
  const std::string body = json::serialize(object);
  HttpResult res = co_await request("POST", collection_path, body);
  if (res.status < 200 || res.status > 202) throw api_error(res.status, res.body, "create " + collection_path);
  co_return parse_body(res, "create " + collection_path);
}

asio::awaitable<std::optional<json::value>> KubeClient::get(std::string path) {
  HttpResult res = co_await request("GET", path);
  if (res.status == 404) co_return std::nullopt;
  if (res.status != 200) throw api_error(res.status, res.body, "get " + path);
  co_return parse_body(res, "get " + path);
}

asio::awaitable<ListResult> KubeClient::list(std::string collection_path, std::string label_selector, int page_size) {
  // Page by page first. A 410 for a continue token means etcd compacted the revision of the first
  // page meanwhile (a list slower than kube-apiserver's compaction interval). Then, as client-go's
  // pager does (FullListIfExpired), the list is made once more in one request without a limit,
  // which has no continue token to expire: starting the pages over could expire again, forever.
  std::string limit = std::to_string(page_size);
  for (;;) {
    ListResult out;
    std::string token;
    bool expired = false;
    std::uint64_t bytes = 0;  // of all pages: the list is held whole, as one answer would be
    // The parsed items of all pages and the page being parsed share the budget of one answer.
    const std::uint64_t budget = options_.limits.max_body_bytes;
    auto memory = std::make_shared<ListBudget>(budget);
    json::storage_ptr storage = json::make_shared_resource<ListMemory>(memory);
    const auto over_limit = [&](const std::string& target) {
      return LimitError("list " + server() + target + ": the pages of the list together are over the limit of " +
                        byte_limit_text(budget) + "; raise it with " + kMaxResponseFlag);
    };
    do {
      std::string target =
          with_query(collection_path, {{"limit", limit}, {"continue", token}, {"labelSelector", label_selector}});
      HttpResult res = co_await request("GET", target);
      if (res.status == 410 && !token.empty() && !limit.empty()) {
        expired = true;
        break;
      }
      if (res.status != 200) throw api_error(res.status, res.body, "list " + collection_path);
      bytes += res.body.size();
      if (bytes > budget) throw over_limit(target);
      // What the items of earlier pages hold, this page's text and its parsed values: within budget.
      if (memory->held.load() + res.body.size() > budget) throw over_limit(target);
      memory->budget.store(budget - res.body.size());
      json::value page(storage);  // of the same storage: the assignment below moves, never copies
      try {
        page = parse_body(res, "list " + collection_path, storage);
      } catch (const ListMemory::OverBudget&) {
        throw over_limit(target);
      }
      if (!page.is_object()) throw std::runtime_error("list " + collection_path + ": the answer is not a JSON object");
      auto& o = page.get_object();
      if (out.resource_version.empty()) out.resource_version = resource_version_of(page);
      if (auto* items = o.if_contains("items"); items != nullptr && items->is_array()) {
        for (auto& item : items->get_array()) out.items.push_back(std::move(item));  // stays in `storage`
      }
      token.clear();
      if (auto* meta = o.if_contains("metadata"); meta != nullptr && meta->is_object()) {
        if (auto* c = meta->get_object().if_contains("continue"); c != nullptr && c->is_string()) {
          token = std::string(c->get_string());
        }
      }
    } while (!token.empty());
    // The items are the caller's now: copies of them may be made from `storage` without a budget.
    memory->budget.store(std::numeric_limits<std::uint64_t>::max());
    if (!expired) co_return out;
    count_retry("410-continue");
    limit.clear();  // the whole list in one answer
  }
}

asio::awaitable<bool> KubeClient::remove(std::string path) {
  HttpResult res = co_await request("DELETE", path);
  if (res.status == 404) co_return false;
  if (res.status != 200 && res.status != 202) throw api_error(res.status, res.body, "delete " + path);
  co_return true;
}

asio::awaitable<json::value> KubeClient::patch(std::string path, json::value merge_patch) {
  const std::string body = json::serialize(merge_patch);
  HttpResult res = co_await request("PATCH", path, body, "application/merge-patch+json");
  if (res.status != 200) throw api_error(res.status, res.body, "patch " + path);
  co_return parse_body(res, "patch " + path);
}

asio::awaitable<WatchEnd> KubeClient::watch(std::string collection_path, std::string resource_version,
                                            std::function<void(const WatchEvent&)> on_event,
                                            std::string label_selector) {
  int failures = 0;
  for (;;) {
    bool gone = false;
    auto on_line = [&](std::string_view line) {
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) return true;
      error_code ec;
      json::value ev = json::parse(line, ec);
      if (ec || !ev.is_object()) throw std::runtime_error("watch " + collection_path + ": malformed event");
      const auto& o = ev.get_object();
      std::string type = o.contains("type") && o.at("type").is_string() ? std::string(o.at("type").get_string()) : "";
      const json::value& object = o.contains("object") ? o.at("object") : ev;
      if (type == "ERROR") {
        auto* code = object.is_object() ? object.get_object().if_contains("code") : nullptr;
        if (code != nullptr && code->is_int64() && code->get_int64() == 410) {
          gone = true;
          return false;
        }
        throw api_error(500, json::serialize(object), "watch " + collection_path + " ERROR event");
      }
      if (auto rv = resource_version_of(object); !rv.empty()) resource_version = rv;
      on_event(WatchEvent{type, object});
      failures = 0;
      return true;
    };
    const std::string target = with_query(collection_path, {{"watch", "1"},
                                                            {"allowWatchBookmarks", "true"},
                                                            {"timeoutSeconds", "240"},
                                                            {"resourceVersion", resource_version},
                                                            {"labelSelector", label_selector}});
    const auto req = make_request("GET", target, {}, {}, options_, impl_->url);
    std::string retry_kind;  // empty: the stream ended normally (the server's timeoutSeconds)
    try {
      auto conn = co_await acquire();  // never returned to the pool: a watch owns its connection
      std::string error_body;
      int status = co_await conn->stream(req, on_line, error_body);
      if (gone || status == 410) co_return WatchEnd::gone;
      if (status != 200 && !transient_status(status)) throw api_error(status, error_body, "watch " + collection_path);
      if (status != 200) retry_kind = std::to_string(status);
    } catch (const boost::system::system_error&) {
      retry_kind = "watch-reconnect";  // or the caller cancelled us: checked next
    }
    // Read inline: awaiting a nested coroutine would throw once the caller has cancelled us.
    auto cancellation = co_await asio::this_coro::cancellation_state;
    if (cancellation.cancelled() != asio::cancellation_type::none) co_return WatchEnd::stopped;
    if (!retry_kind.empty()) {
      count_retry(retry_kind);
      try {
        co_await sleep_for(backoff(++failures));
      } catch (const boost::system::system_error&) {
        co_return WatchEnd::stopped;  // cancelled while waiting
      }
    }
    // Resume from resource_version.
  }
}

}  // namespace faultline::harness
