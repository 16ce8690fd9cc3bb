// Which protocol the upstream speaks, as its ALPN says: the proxy offers clients h2 only while the
// upstream negotiates h2, so an HTTP/2 client in front of an HTTP/1.1-only upstream (nginx without
// http2, an HTTP/1.1 load balancer in front of kube-apiserver) speaks HTTP/1.1 with the proxy
// instead of getting 503 for every stream. Learned by a probe (a TLS handshake offering h2 and
// http/1.1, then closed) at start and as clients connect, and from every upstream connection of an
// HTTP/2 client (http2_upstream.cpp); an HTTP/2 connection accepted before the proxy learned that the
// upstream speaks HTTP/1.1 only gets its streams refused and GOAWAY, and its client reconnects.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <spdlog/spdlog.h>

#include <functional>
#include <optional>
#include <string>

#include "faultline/net/async.hpp"
#include "faultline/net/tls.hpp"
#include "faultline/net/tls_connect.hpp"
#include "faultline/net/tls_stream.hpp"
#include "server_impl.hpp"

namespace faultline::proxy {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using net::use_tuple;
using Protocol = Server::Impl::UpstreamProtocol;

// While the upstream's protocol is not known (it did not answer yet), it is asked again at most
// this often; while it negotiates only http/1.1, at most this often (when clients connect) to
// notice that it gained h2.
constexpr std::chrono::seconds kProbeUnknownEvery{1};
constexpr std::chrono::seconds kProbeHttp11Every{10};

// Server::Impl::cancel_probe while it lives: stop() ends the probe at once.
class CancelHook {
 public:
  CancelHook(Server::Impl& impl, std::function<void()> cancel) : impl_(impl) { impl_.cancel_probe = std::move(cancel); }
  ~CancelHook() { impl_.cancel_probe = nullptr; }
  CancelHook(const CancelHook&) = delete;
  CancelHook& operator=(const CancelHook&) = delete;

 private:
  Server::Impl& impl_;
};

// A TLS handshake with the upstream offering h2 and http/1.1: what its ALPN selected ("" for
// none), or nullopt when it could not be reached (logged at debug). On the listener strand.
asio::awaitable<std::optional<std::string>> ask_upstream(std::shared_ptr<Server::Impl> impl) {
  const auto& target = impl->options.upstream;
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  net::TlsStream stream(executor, impl->upstream_tls_h2);
  std::optional<CancelHook> hook;
  hook.emplace(*impl, [&resolver, &stream] {
    resolver.cancel();
    boost::system::error_code ec;
    stream.socket().close(ec);
  });
  if (impl->stopping) co_return std::nullopt;
  // The deadline covers the TCP connect and the TLS handshake together.
  const net::TlsConnectOptions connect{.verify_name = target.endpoint.host,
                                       .verify = !target.tls.insecure_skip_verify,
                                       .timeout = impl->options.connect_timeout};
  auto failure = co_await net::connect_tls(stream, resolver, target.endpoint, connect);
  hook.reset();  // before `stream` and `resolver` end
  if (failure) {
    spdlog::debug("asking upstream {} for its protocol (ALPN): {}", target.endpoint.to_string(), failure->message());
    co_return std::nullopt;
  }
  std::string alpn = net::alpn_selected(stream.native_handle());
  boost::system::error_code ec;
  stream.socket().close(ec);  // no request: the upstream sees a connection that ended
  co_return alpn;
}

asio::awaitable<void> probe(std::shared_ptr<Server::Impl> impl) {
  std::optional<std::string> alpn;
  try {
    alpn = co_await ask_upstream(impl);
  } catch (const std::exception& e) {
    spdlog::debug("asking upstream {} for its protocol (ALPN): {}", impl->options.upstream.endpoint.to_string(),
                  e.what());
  }
  if (alpn) impl->upstream_negotiated(*alpn);
  impl->probing = false;  // on the listener strand, as probe_upstream_if_due
}

}  // namespace

void Server::Impl::upstream_negotiated(const std::string& alpn) {
  if (!options.http2) return;  // --http1-only: clients are never offered h2
  const Protocol now = alpn == "h2" ? Protocol::h2 : Protocol::http11;
  Protocol before;
  {
    std::lock_guard lock(protocol_mutex);
    before = upstream_protocol.exchange(now);
    offer_h2.store(now == Protocol::h2);
  }
  if (before == now) return;
  const std::string upstream = options.upstream.endpoint.to_string();
  if (now == Protocol::http11) {
    spdlog::info(
        "upstream {} negotiates only http/1.1 (ALPN: {}): HTTP/2 clients are offered http/1.1 until it "
        "negotiates h2",
        upstream, alpn.empty() ? "none" : "'" + alpn + "'");
  } else if (before == Protocol::http11) {
    spdlog::info("upstream {} negotiates h2 again: HTTP/2 clients are offered h2", upstream);
  } else {
    spdlog::debug("upstream {} negotiates h2", upstream);
  }
}

void Server::Impl::probe_upstream_if_due() {
  if (!options.http2 || probing || stopping) return;
  const Protocol known = upstream_protocol.load();
  if (known == Protocol::h2) return;  // an upstream connection says so when that changes
  const auto now = std::chrono::steady_clock::now();
  const auto every = known == Protocol::unknown ? kProbeUnknownEvery : kProbeHttp11Every;
  if (last_probe && now - *last_probe < every) return;
  probing = true;
  last_probe = now;
  asio::co_spawn(listener_strand, probe(shared_from_this()), [](std::exception_ptr) {});
}

}  // namespace faultline::proxy
