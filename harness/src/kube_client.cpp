#include "faultline/harness/kube_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <limits>
#include <thread>

#include <poll.h>

#include "faultline/net/endpoint.hpp"
#include "faultline/net/tls.hpp"

namespace faultline::harness {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using error_code = boost::system::error_code;

namespace {

// A failed exchange. `noResponse`: the connection failed before one byte of an answer arrived; on
// a reused keep-alive connection that is what a server closing it while idle looks like.
struct ExchangeError : boost::system::system_error {
    ExchangeError(error_code ec, const char* what, bool noResponseBytes)
        : boost::system::system_error(ec, what), noResponse(noResponseBytes) {}
    bool noResponse;
};

}  // namespace

// One TLS connection, driven by its own io_context on the calling thread. Asynchronous operations
// with tcp_stream deadlines give timeouts, and a stop flag can cancel a long watch read.
class KubeClient::Connection {
public:
    Connection(asio::ssl::context& tls, const net::Endpoint& ep, const std::string& verifyName, bool verify,
               std::chrono::seconds timeout)
        : stream_(ioc_, tls), timeout_(timeout) {
        asio::ip::tcp::resolver resolver(ioc_);
        auto endpoints = resolver.resolve(ep.host, std::to_string(ep.port));
        net::prepare_client_ssl(stream_.native_handle(), verifyName, verify);
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        throw_if(run([&](auto done) { beast::get_lowest_layer(stream_).async_connect(endpoints, done); }), "connect");
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        throw_if(run([&](auto done) { stream_.async_handshake(asio::ssl::stream_base::client, done); }),
                 "TLS handshake");
    }

    HttpResult exchange(const http::request<http::string_body>& req, bool& keepAlive) {
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        if (auto ec = run([&](auto done) { http::async_write(stream_, req, done); })) {
            throw ExchangeError(ec, "write request", true);
        }
        http::response_parser<http::string_body> parser;
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        if (auto ec = run([&](auto done) { http::async_read(stream_, buffer_, parser, done); })) {
            // A timeout is a server that did not answer, not one that closed the connection.
            throw ExchangeError(ec, "read response", !parser.got_some() && ec != beast::error::timeout);
        }
        const auto& res = parser.get();
        keepAlive = res.keep_alive();
        HttpResult out;
        out.status = static_cast<int>(res.result_int());
        out.body = res.body();
        if (auto it = res.find(http::field::retry_after); it != res.end()) out.retryAfter = std::string(it->value());
        return out;
    }

    // Streams a chunked answer line by line. Returns the status; a non-200 answer's body goes to
    // errorBody. Stops when onLine returns false, the server ends the stream, or stop is set.
    int stream(const http::request<http::string_body>& req, const std::function<bool(std::string_view)>& onLine,
               const std::atomic<bool>& stop, std::string& errorBody) {
        write(req);
        http::response_parser<http::string_body> parser;
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        throw_if(run([&](auto done) { http::async_read_header(stream_, buffer_, parser, done); }, &stop),
                 "read watch header");
        int status = static_cast<int>(parser.get().result_int());
        if (status != 200) {
            beast::get_lowest_layer(stream_).expires_after(timeout_);
            throw_if(run([&](auto done) { http::async_read(stream_, buffer_, parser, done); }), "read error body");
            errorBody = parser.get().body();
            return status;
        }
        std::string pending;
        bool wanted = true;
        auto on_chunk = [&](std::uint64_t, std::string_view data, error_code&) -> std::size_t {
            pending.append(data.data(), data.size());
            std::size_t start = 0;
            for (auto nl = pending.find('\n'); nl != std::string::npos && wanted; nl = pending.find('\n', start)) {
                wanted = onLine(std::string_view(pending).substr(start, nl - start));
                start = nl + 1;
            }
            pending.erase(0, start);
            return data.size();
        };
        parser.on_chunk_body(on_chunk);
        while (!parser.is_done() && wanted && !stop.load()) {
            // A quiet watch still gets bookmarks about once a minute; five silent minutes is dead.
            beast::get_lowest_layer(stream_).expires_after(std::chrono::minutes(5));
            error_code ec = run([&](auto done) { http::async_read_some(stream_, buffer_, parser, done); }, &stop);
            if (stop.load()) break;
            throw_if(ec, "read watch stream");
        }
        return status;
    }

    // An idle keep-alive connection has nothing to read: anything readable (the server's TLS
    // close_notify, its FIN or a reset) means the server has closed it.
    bool closedByPeer() {
        if (buffer_.size() > 0) return true;
        pollfd p{beast::get_lowest_layer(stream_).socket().native_handle(), POLLIN, 0};
        return ::poll(&p, 1, 0) != 0;  // readable, hung up, error, or poll itself failed
    }

private:
    void write(const http::request<http::string_body>& req) {
        beast::get_lowest_layer(stream_).expires_after(timeout_);
        throw_if(run([&](auto done) { http::async_write(stream_, req, done); }), "write request");
    }

    template <class Start>
    error_code run(Start&& start, const std::atomic<bool>* stop = nullptr) {
        error_code result;
        bool finished = false;
        start([&](error_code ec, auto&&...) {
            result = ec;
            finished = true;
        });
        ioc_.restart();
        while (!finished) {
            // One handler at a time: return as soon as our operation completes, not when the
            // io_context runs dry (a cancelled deadline timer may still be queued).
            ioc_.run_one_for(std::chrono::milliseconds(200));
            if (!finished && stop != nullptr && stop->load()) beast::get_lowest_layer(stream_).cancel();
        }
        return result;
    }

    static void throw_if(error_code ec, const char* what) {
        if (ec) throw boost::system::system_error(ec, what);
    }

    asio::io_context ioc_;
    beast::ssl_stream<beast::tcp_stream> stream_;
    beast::flat_buffer buffer_;
    std::chrono::seconds timeout_;
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

json::value parse_body(const HttpResult& res, const std::string& what) {
    error_code ec;
    json::value v = json::parse(res.body, ec);
    if (ec) throw std::runtime_error(what + ": answer is not JSON: " + ec.message());
    return v;
}

std::string with_query(const std::string& path, const std::vector<std::pair<std::string, std::string>>& params) {
    std::string out = path;
    char sep = path.find('?') == std::string::npos ? '?' : '&';
    for (const auto& [k, v] : params) {
        if (v.empty()) continue;
        out += sep + k + "=" + url_encode(v);
        sep = '&';
    }
    return out;
}

std::string resource_version_of(const json::value& object) {
    if (!object.is_object()) return {};
    auto* meta = object.get_object().if_contains("metadata");
    if (meta == nullptr || !meta->is_object()) return {};
    auto* rv = meta->get_object().if_contains("resourceVersion");
    return rv != nullptr && rv->is_string() ? std::string(rv->get_string()) : std::string();
}

void sleep_unless_stopped(std::chrono::milliseconds d, const std::atomic<bool>* stop) {
    auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
        if (stop != nullptr && stop->load()) return;
        std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(d, std::chrono::milliseconds(50)));
    }
}

}  // namespace

std::string url_encode(const std::string& value) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

KubeClient::KubeClient(KubeClientOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_.cluster)) {}

KubeClient::~KubeClient() = default;

std::unique_ptr<KubeClient::Connection> KubeClient::acquire(bool* reused) {
    if (reused != nullptr) *reused = false;
    std::unique_ptr<Connection> pooled;
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            pooled = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (pooled) {
        if (!pooled->closedByPeer()) {
            if (reused != nullptr) *reused = true;
            return pooled;
        }
        // The server closed the most recently used idle connection (its idle timeout): the others
        // have been idle at least as long.
        discard_idle();
    }
    const auto& c = options_.cluster;
    std::string verify_name = c.tls_server_name.empty() ? impl_->url.endpoint.host : c.tls_server_name;
    return std::make_unique<Connection>(impl_->tls, impl_->url.endpoint, verify_name, !c.insecure_skip_verify,
                                        options_.requestTimeout);
}

void KubeClient::discard_idle() {
    std::vector<std::unique_ptr<Connection>> stale;
    {
        std::lock_guard lock(mutex_);
        stale.swap(idle_);
    }
}  // closed here, outside the lock

void KubeClient::release(std::unique_ptr<Connection> c) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(c));
}

void KubeClient::count_retry(const std::string& kind) {
    std::lock_guard lock(mutex_);
    ++retries_[kind];
}

std::map<std::string, std::int64_t> KubeClient::retries() const {
    std::lock_guard lock(mutex_);
    return retries_;
}

std::chrono::milliseconds KubeClient::backoff(int attempt) const {
    auto d = options_.retry.initialBackoff * (1LL << std::min(attempt, 10));
    return std::min<std::chrono::milliseconds>(d, options_.retry.maxBackoff);
}

namespace {
http::request<http::string_body> make_request(const std::string& method, const std::string& target,
                                              const std::string& body, const std::string& contentType,
                                              const KubeClientOptions& o, const net::HttpsUrl& url) {
    http::request<http::string_body> req{http::string_to_verb(method), url.base_path + target, 11};
    req.set(http::field::host, url.endpoint.to_string());
    req.set(http::field::user_agent, o.userAgent);
    req.set(http::field::accept, "application/json");
    if (!o.cluster.token.empty()) req.set(http::field::authorization, "Bearer " + o.cluster.token);
    if (!body.empty()) {
        req.set(http::field::content_type, contentType);
        req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
}
}  // namespace

HttpResult KubeClient::request(const std::string& method, const std::string& target, const std::string& body,
                               const std::string& contentType) {
    auto req = make_request(method, target, body, contentType, options_, impl_->url);
    int stale_connections = 0;
    for (int attempt = 1;; ++attempt) {
        bool reused = false;
        try {
            std::unique_ptr<Connection> conn = acquire(&reused);
            bool keep_alive = false;
            HttpResult res = conn->exchange(req, keep_alive);
            if (keep_alive) release(std::move(conn));
            if (!transient_status(res.status) || attempt >= options_.retry.maxAttempts) return res;
            count_retry(std::to_string(res.status));
            auto wait = backoff(attempt);
            if (!res.retryAfter.empty() && std::isdigit(static_cast<unsigned char>(res.retryAfter[0]))) {
                wait = std::max<std::chrono::milliseconds>(wait, std::chrono::seconds(std::stoi(res.retryAfter)));
            }
            sleep_unless_stopped(wait, nullptr);
        } catch (const boost::system::system_error& e) {
            const auto* exchange = dynamic_cast<const ExchangeError*>(&e);
            if (reused && exchange != nullptr && exchange->noResponse) {
                // The server closed this keep-alive connection while it was idle, just before or
                // as the request arrived. Its idle siblings are as old: drop them all. That is not
                // a failure of the API, so a request that may safely be repeated goes out again
                // at once on a new connection (the pool is empty now) without counting an attempt.
                discard_idle();
                if (idempotent(method) && ++stale_connections <= options_.retry.maxAttempts) {
                    --attempt;
                    continue;
                }
            }
            if (attempt >= options_.retry.maxAttempts) {
                throw TransportError(method + " " + target + ": " + e.what() + " (after " + std::to_string(attempt) +
                                     " attempts)");
            }
            count_retry("connection");
            sleep_unless_stopped(backoff(attempt), nullptr);
        }
    }
}

json::value KubeClient::create(const std::string& collectionPath, const json::value& object) {
    HttpResult res = request("POST", collectionPath, json::serialize(object));
    if (res.status < 200 || res.status > 202) throw api_error(res.status, res.body, "create " + collectionPath);
    return parse_body(res, "create " + collectionPath);
}

std::optional<json::value> KubeClient::get(const std::string& path) {
    HttpResult res = request("GET", path);
    if (res.status == 404) return std::nullopt;
    if (res.status != 200) throw api_error(res.status, res.body, "get " + path);
    return parse_body(res, "get " + path);
}

ListResult KubeClient::list(const std::string& collectionPath, const std::string& labelSelector, int pageSize) {
    for (;;) {
        ListResult out;
        std::string token;
        bool expired = false;
        do {
            std::string target = with_query(collectionPath, {{"limit", std::to_string(pageSize)},
                                                             {"continue", token},
                                                             {"labelSelector", labelSelector}});
            HttpResult res = request("GET", target);
            if (res.status == 410 && !token.empty()) {
                expired = true;  // the continue token outlived its snapshot: start over
                break;
            }
            if (res.status != 200) throw api_error(res.status, res.body, "list " + collectionPath);
            json::value page = parse_body(res, "list " + collectionPath);
            const auto& o = page.as_object();
            if (out.resourceVersion.empty()) out.resourceVersion = resource_version_of(page);
            if (auto* items = o.if_contains("items"); items != nullptr && items->is_array()) {
                for (auto& item : items->get_array()) out.items.push_back(item);
            }
            token.clear();
            if (auto* meta = o.if_contains("metadata"); meta != nullptr && meta->is_object()) {
                if (auto* c = meta->get_object().if_contains("continue"); c != nullptr && c->is_string()) {
                    token = std::string(c->get_string());
                }
            }
        } while (!token.empty());
        if (!expired) return out;
        count_retry("410-continue");
    }
}

bool KubeClient::remove(const std::string& path) {
    HttpResult res = request("DELETE", path);
    if (res.status == 404) return false;
    if (res.status != 200 && res.status != 202) throw api_error(res.status, res.body, "delete " + path);
    return true;
}

json::value KubeClient::patch(const std::string& path, const json::value& mergePatch) {
    HttpResult res = request("PATCH", path, json::serialize(mergePatch), "application/merge-patch+json");
    if (res.status != 200) throw api_error(res.status, res.body, "patch " + path);
    return parse_body(res, "patch " + path);
}

WatchEnd KubeClient::watch(const std::string& collectionPath, std::string resourceVersion,
                           const std::function<void(const WatchEvent&)>& onEvent, const std::atomic<bool>& stop,
                           const std::string& labelSelector) {
    int failures = 0;
    while (!stop.load()) {
        bool gone = false;
        auto on_line = [&](std::string_view line) {
            if (line.find_first_not_of(" \r\t") == std::string_view::npos) return true;
            error_code ec;
            json::value ev = json::parse(line, ec);
            if (ec || !ev.is_object()) throw std::runtime_error("watch " + collectionPath + ": malformed event");
            const auto& o = ev.get_object();
            std::string type = o.contains("type") && o.at("type").is_string() ? std::string(o.at("type").get_string()) : "";
            const json::value& object = o.contains("object") ? o.at("object") : ev;
            if (type == "ERROR") {
                auto* code = object.is_object() ? object.get_object().if_contains("code") : nullptr;
                if (code != nullptr && code->is_int64() && code->get_int64() == 410) {
                    gone = true;
                    return false;
                }
                throw api_error(500, json::serialize(object), "watch " + collectionPath + " ERROR event");
            }
            if (auto rv = resource_version_of(object); !rv.empty()) resourceVersion = rv;
            onEvent(WatchEvent{type, object});
            failures = 0;
            return true;
        };
        std::string target = with_query(collectionPath, {{"watch", "1"},
                                                         {"allowWatchBookmarks", "true"},
                                                         {"timeoutSeconds", "240"},
                                                         {"resourceVersion", resourceVersion},
                                                         {"labelSelector", labelSelector}});
        auto req = make_request("GET", target, {}, {}, options_, impl_->url);
        try {
            auto conn = acquire();  // never returned to the pool: a watch owns its connection
            std::string error_body;
            int status = conn->stream(req, on_line, stop, error_body);
            if (gone || status == 410) return WatchEnd::gone;
            if (status != 200 && !transient_status(status)) throw api_error(status, error_body, "watch " + collectionPath);
            if (status != 200) {
                count_retry(std::to_string(status));
                sleep_unless_stopped(backoff(++failures), &stop);
            }
            // status 200 and the stream ended: the server's timeoutSeconds; resume from resourceVersion.
        } catch (const boost::system::system_error& e) {
            if (stop.load()) break;
            count_retry("watch-reconnect");
            sleep_unless_stopped(backoff(++failures), &stop);
        }
    }
    return WatchEnd::stopped;
}

}  // namespace faultline::harness
