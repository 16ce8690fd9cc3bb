// faultline-proxy: a TLS man-in-the-middle in front of kube-apiserver that carries out a
// scenario's fault rules. See docs/proxy.md and `faultline-proxy --help`.

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "faultline/admin/admin_server.hpp"
#include "faultline/admin/audit_flusher.hpp"
#include "faultline/admin/token_file.hpp"
#include "faultline/app/bridge.hpp"
#include "faultline/app/open_files.hpp"
#include "faultline/faults/printable.hpp"
#include "faultline/faults/scenario.hpp"
#include "faultline/net/certs.hpp"
#include "faultline/net/endpoint.hpp"
#include "faultline/net/in_cluster.hpp"
#include "faultline/net/kubeconfig.hpp"
#include "faultline/proxy/server.hpp"
#include "faultline/version.hpp"

// jemalloc's options, read at its start (MALLOC_CONF in the environment still overrides them).
// Its per-thread cache keeps freed blocks of up to 32 KiB by default; the relay's 64 KiB buffers
// (ServerOptions::relay_buffer) are taken when a request needs them and given back while its connection is idle,
// which without the cache went through jemalloc's arena every time: some 4k instructions per
// HTTP/1.1 pod GET. Unused where the binary does not link jemalloc (sanitizer and fuzz trees).
extern "C" {
const char* malloc_conf = "tcache_max:131072";
}

namespace fs = std::filesystem;
using namespace faultline;

namespace {

struct Flags {
  std::string listen = "127.0.0.1:8443";
  std::string admin = "127.0.0.1:8444";
  std::string admin_token_file;
  std::string upstream;
  std::string upstream_ca;
  bool upstream_insecure = false;
  std::string upstream_kubeconfig;
  std::string upstream_context;
  bool upstream_in_cluster = false;
  std::string service_account_dir = net::kServiceAccountDir;
  std::string ca_cert;
  std::string ca_key;
  std::string ca_out;
  std::vector<std::string> sans = net::default_sans();
  std::string write_kubeconfig;
  std::string scenario;
  bool arm = false;
  std::string audit_log;
  std::size_t audit_memory = admin::AuditLogOptions{}.ring_bytes;
  std::string log_level = "info";
  std::string ready_file;
  unsigned threads = 2;
  unsigned spin_us = 50;  // docs/benchmarks.md, "Where the CPU time goes"
  double drain_seconds = 10;
  double header_timeout = 30;
  double idle_timeout = 120;
  std::size_t max_header_bytes = 1024 * 1024;
  std::size_t max_connections = 0;  // 0: derived from the open-files limit (default_max_connections)
  std::size_t admin_max_connections = admin::AdminServerOptions{}.max_connections;
  bool http1_only = false;
  std::uint32_t h2_max_streams = 100;  // what kube-apiserver advertises (SETTINGS_MAX_CONCURRENT_STREAMS)
  static constexpr std::uint64_t kMaxMemoryDerived = ~std::uint64_t{0};
  std::uint64_t max_memory = kMaxMemoryDerived;
};

void define_flags(CLI::App& app, Flags& f) {
  app.add_option("--listen", f.listen, "HOST:PORT the proxy serves TLS on (port 0: pick a free one)")
      ->capture_default_str();
  app.add_option("--admin", f.admin, "HOST:PORT of the admin HTTP API (plain HTTP; keep it on loopback)")
      ->capture_default_str();
  app.add_option("--admin-token-file", f.admin_token_file,
                 "file holding a bearer token the admin API requires (except /healthz); an empty file is an error")
      ->check(CLI::ExistingFile);
  app.add_option("--upstream", f.upstream,
                 "https://HOST:PORT of kube-apiserver (default: the server of --upstream-kubeconfig)");
  app.add_option("--upstream-ca", f.upstream_ca, "CA bundle (PEM) that verifies the apiserver")
      ->check(CLI::ExistingFile);
  app.add_flag("--upstream-insecure", f.upstream_insecure, "do NOT verify the apiserver's certificate (testing only)");
  app.add_option("--upstream-kubeconfig", f.upstream_kubeconfig,
                 "kubeconfig whose identity (client certificate or token) the proxy uses upstream, "
                 "replacing the client's Authorization; also supplies server and CA when not given")
      ->check(CLI::ExistingFile);
  app.add_option("--upstream-context", f.upstream_context, "context of --upstream-kubeconfig (default: current)");
  app.add_flag("--upstream-in-cluster", f.upstream_in_cluster,
               "in a pod, as client-go's InClusterConfig: upstream https://$KUBERNETES_SERVICE_HOST:"
               "$KUBERNETES_SERVICE_PORT verified with the service account's ca.crt; its token (re-read when it "
               "rotates) goes on requests without an Authorization header, a client's own passes through");
  app.add_option("--service-account-dir", f.service_account_dir,
                 "with --upstream-in-cluster: the directory holding the service account's token and ca.crt")
      ->capture_default_str();
  app.add_option("--ca-cert", f.ca_cert, "CA certificate (PEM) to mint the serving certificate from")
      ->check(CLI::ExistingFile);
  app.add_option("--ca-key", f.ca_key, "key (PEM) of --ca-cert")->check(CLI::ExistingFile);
  app.add_option("--ca-out", f.ca_out, "without --ca-cert: directory to write the generated CA to (ca.crt, ca.key)");
  app.add_option("--san", f.sans, "subject alternative name of the serving certificate (repeatable)")
      ->capture_default_str();
  app.add_option("--write-kubeconfig", f.write_kubeconfig,
                 "write a kubeconfig pointing at the proxy (trusting its CA) to this path");
  app.add_option("--scenario", f.scenario, "scenario file to load at start (faults stay off until armed)")
      ->check(CLI::ExistingFile);
  app.add_flag("--arm", f.arm, "arm the --scenario at start (time zero = start-up)");
  app.add_option("--audit-log", f.audit_log, "append one JSON line per request to this file");
  app.add_option("--audit-memory", f.audit_memory,
                 "bytes of audit records held in memory for GET /v1/audit (also at most 65536 records; the "
                 "oldest go first)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1} << 20, std::size_t{1} << 40));
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--ready-file", f.ready_file,
                 "write {\"listen\":\"HOST:PORT\",\"admin\":\"HOST:PORT\"} here once both listen");
  app.add_option("--threads", f.threads, "relay threads")->check(CLI::Range(1u, 64u))->capture_default_str();
  app.add_option("--spin-us", f.spin_us,
                 "microseconds a relay thread with nothing to do keeps polling its sockets before it sleeps")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str();
  app.add_option("--drain-timeout", f.drain_seconds, "seconds requests in flight may take to finish on SIGTERM/SIGINT")
      ->capture_default_str();
  app.add_option("--header-timeout", f.header_timeout,
                 "seconds a client may take to send a request header (HTTP/2: a header block, from its HEADERS "
                 "frame to END_HEADERS, and the connection preface)")
      ->capture_default_str();
  app.add_option("--idle-timeout", f.idle_timeout,
                 "seconds an idle keep-alive connection stays open (HTTP/2: from the end of its last stream; "
                 "PING and other frames do not count)")
      ->capture_default_str();
  app.add_option("--max-header-bytes", f.max_header_bytes, "largest request header accepted (431 above)")
      ->capture_default_str();
  app.add_option("--max-connections", f.max_connections,
                 "client connections open at once; more are closed right after accept (default: 4096, or "
                 "(open-files limit - 64 - --admin-max-connections) / 2 when that is lower)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  app.add_option("--admin-max-connections", f.admin_max_connections,
                 "admin API connections open at once; more are closed right after accept (each holds a "
                 "descriptor the relay's share of the open-files limit does not count on)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 16));
  app.add_flag("--http1-only", f.http1_only,
               "offer only http/1.1 in ALPN (the HTTP/1.1 mode); by default h2 is offered too and the upstream "
               "connection of an HTTP/2 client speaks h2");
  app.add_option("--h2-max-streams", f.h2_max_streams,
                 "concurrent streams per HTTP/2 client connection (SETTINGS_MAX_CONCURRENT_STREAMS)")
      ->capture_default_str()
      ->check(CLI::Range(std::uint32_t{1}, std::uint32_t{10000}));
  app.add_option("--max-memory", f.max_memory,
                 "resident memory (bytes; or with a unit: 512MiB, 2GiB) past which new HTTP/2 streams are refused "
                 "(REFUSED_STREAM) and HTTP/1.1 requests answered 503, instead of growing; 0: no limit (default: a "
                 "quarter of the machine's memory, three quarters of a cgroup memory limit if lower, at most 4 GiB)")
      ->transform(CLI::AsSizeValue(false));
  app.get_option("--ca-cert")->needs("--ca-key");
  app.get_option("--ca-key")->needs("--ca-cert");
  app.get_option("--ca-out")->excludes("--ca-cert");
  app.get_option("--upstream-insecure")->excludes("--upstream-ca");
  app.get_option("--arm")->needs("--scenario");
  app.get_option("--service-account-dir")->needs("--upstream-in-cluster");
  for (const char* other : {"--upstream", "--upstream-kubeconfig", "--upstream-context", "--upstream-ca"})
    app.get_option("--upstream-in-cluster")->excludes(other);
}

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

// The CA that signs the serving certificate: the one given, or a new one written to --ca-out.
net::CertifiedKey load_or_generate_ca(const Flags& f) {
  if (!f.ca_cert.empty()) return {net::read_file(f.ca_cert), net::read_file(f.ca_key)};
  auto ca = net::generate_ca("faultline-proxy-ca");
  if (!f.ca_out.empty()) {
    net::write_file(fs::path(f.ca_out) / "ca.crt", ca.cert_pem);
    net::write_file(fs::path(f.ca_out) / "ca.key", ca.key_pem, true);
    spdlog::info("generated a CA and wrote it to {}/ca.crt", f.ca_out);
  } else {
    spdlog::info("generated a CA (not written: no --ca-out); clients can trust it via --write-kubeconfig");
  }
  return ca;
}

proxy::UpstreamOptions upstream_options(const Flags& f) {
  proxy::UpstreamOptions up;
  std::string server = f.upstream;
  if (f.upstream_in_cluster) {
    auto in_cluster = net::load_in_cluster_config(f.service_account_dir);
    server = in_cluster.server;
    up.tls.ca_pem = in_cluster.ca_pem;
    in_cluster.token->on_error([](const std::string& error) { spdlog::warn("{}", error); });
    up.fallback_token = in_cluster.token;
    spdlog::info("in-cluster upstream {} (CA and token from {}; a client's own Authorization passes through)", server,
                 f.service_account_dir);
  }
  if (!f.upstream_kubeconfig.empty()) {
    auto kc = net::load_kubeconfig(f.upstream_kubeconfig, f.upstream_context);
    if (server.empty()) server = kc.server;
    up.tls = kc.tls_options();
    up.token = kc.token;
    up.replace_identity = kc.has_client_cert() || !kc.token.empty();
    spdlog::info("upstream identity from {} (context {}, user {}: {})", f.upstream_kubeconfig, kc.context_name,
                 kc.user_name, kc.has_client_cert() ? "client certificate" : (kc.token.empty() ? "none" : "token"));
  }
  if (server.empty()) throw CLI::ValidationError("--upstream", "required (or give --upstream-kubeconfig)");
  auto url = net::parse_https_url(server);
  up.endpoint = url.endpoint;
  up.base_path = url.base_path;
  if (!f.upstream_ca.empty()) up.tls.ca_pem = net::read_file(f.upstream_ca);
  if (f.upstream_insecure) {
    up.tls.insecure_skip_verify = true;
    spdlog::warn("--upstream-insecure: the apiserver's certificate is NOT verified");
  }
  return up;
}

std::string host_port(const boost::asio::ip::tcp::endpoint& ep) {
  return net::Endpoint{ep.address().to_string(), ep.port()}.to_string();
}

// Clients reach the proxy here: a wildcard listen address is reached over loopback.
std::string client_address(const boost::asio::ip::tcp::endpoint& ep) {
  auto address = ep.address();
  if (address.is_unspecified())
    address = address.is_v6() ? boost::asio::ip::address(boost::asio::ip::address_v6::loopback())
                              : boost::asio::ip::address(boost::asio::ip::address_v4::loopback());
  return net::Endpoint{address.to_string(), ep.port()}.to_string();
}

void write_ready_file(const std::string& path, const std::string& listen, const std::string& admin) {
  std::string tmp = path + ".tmp";
  net::write_file(tmp, boost::json::serialize(boost::json::object{{"listen", listen}, {"admin", admin}}) + "\n");
  fs::rename(tmp, path);  // readers never see a half-written file
}

// %* in the log pattern: the message with its control characters escaped (faults::printable). Log
// lines carry text that clients and scenario files choose (scenario and rule names, request
// paths); escaped once here, none of it can start a line of its own or drive the terminal.
class PrintableMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (faults::is_printable(text)) {
      dest.append(text.data(), text.data() + text.size());
      return;
    }
    const std::string escaped = faults::printable(text);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PrintableMessage>(); }
};

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("faultline-proxy");
  spdlog::set_default_logger(logger);
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<PrintableMessage>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %*");
  spdlog::set_formatter(std::move(formatter));
  spdlog::set_level(spdlog::level::from_str(level));
}

// Each client connection holds two descriptors; below this many, a pod burst can exhaust them.
constexpr std::uint64_t kEnoughOpenFiles = 8192;

// Each connection holds two descriptors (client and upstream); the admin API's connections
// (`admin`, at most) and 64 more (listeners, the audit log, a connection closed right after
// accept) are left to the rest: bare admin connections cannot take the relay's descriptors.
constexpr std::size_t kDefaultMaxConnections = 4096;
std::size_t default_max_connections(std::uint64_t open_files, std::size_t admin) {
  if (open_files == 0) return kDefaultMaxConnections;  // unknown
  const std::uint64_t reserved = 64 + admin;
  std::uint64_t fit = open_files > reserved + 2 ? (open_files - reserved) / 2 : 1;
  return static_cast<std::size_t>(std::min<std::uint64_t>(kDefaultMaxConnections, fit));
}

// Returns the open-files limit now in force.
std::uint64_t raise_open_files() {
  auto limit = app::raise_open_files_limit();
  if (limit.now != limit.before) spdlog::info("open files limit raised from {} to {}", limit.before, limit.now);
  if (limit.now < kEnoughOpenFiles) {
    spdlog::warn(
        "open files limit is {} (hard limit {}): at most about {} client connections at once; a "
        "scheduler binding a pod burst over HTTP/1.1 opens hundreds (raise it with `ulimit -Hn`)",
        limit.now, limit.hard, limit.now / 2);
  }
  return limit.now;
}

// --max-memory's default: a quarter of the machine's memory, or three quarters of the cgroup's
// limit (a container's) when that is lower, and at most 4 GiB; 0 (no limit) when neither is known.
std::uint64_t default_max_memory() {
  constexpr std::uint64_t kCap = std::uint64_t{4} << 30;
  std::uint64_t limit = kCap;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = std::min(limit, static_cast<std::uint64_t>(pages) * page / 4);
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::uint64_t bytes = 0;
    if (in >> bytes && bytes > 0 && bytes < (std::uint64_t{1} << 60)) {  // "max" or v1's huge "unlimited": none
      limit = std::min(limit, bytes / 4 * 3);
      break;
    }
  }
  return limit;
}

int run(const Flags& f) {
  // Before anything listens: a token file that yields no token must not leave the admin API open.
  const std::string admin_token =
      f.admin_token_file.empty() ? std::string() : admin::read_token_file(f.admin_token_file);
  auto open_files = raise_open_files();
  faults::SteadyClock clock;
  faults::Engine engine;
  admin::AuditLogOptions audit_options;
  audit_options.path = f.audit_log;
  audit_options.ring_bytes = f.audit_memory;
  admin::AuditLog audit(audit_options);
  admin::ProxyMetrics metrics;
  app::AuditingObserver observer(audit, metrics);
  app::AdminBridge bridge(engine, clock, audit, metrics);
  app::count_rule_matches(engine, metrics);

  if (!f.scenario.empty()) {
    std::string text = faults::read_scenario_file(f.scenario);
    auto scenario = faults::load_scenario_text(text, f.scenario);
    engine.load(scenario);
    bridge.set_scenario_text(std::move(text));
    spdlog::info("scenario '{}' loaded from {} ({} rules){}", scenario->metadata.name, f.scenario,
                 scenario->faults.size(), app::unchecked_sections_note(*scenario));
    if (f.arm) engine.arm(clock.now());
  }

  net::CertifiedKey ca = load_or_generate_ca(f);
  proxy::ServerOptions options;
  options.listen = net::parse_host_port(f.listen);
  options.serving = net::mint_serving_cert(ca, f.sans);
  options.upstream = upstream_options(f);
  options.header_timeout = seconds(f.header_timeout);
  options.idle_timeout = seconds(f.idle_timeout);
  options.header_limit = f.max_header_bytes;
  options.max_connections =
      f.max_connections > 0 ? f.max_connections : default_max_connections(open_files, f.admin_max_connections);
  options.http2 = !f.http1_only;
  options.h2_max_streams = f.h2_max_streams;
  // A connection may hold at least two header lists of the limit waiting to go upstream.
  options.h2_header_memory_per_connection = std::max<std::size_t>(4 << 20, 2 * f.max_header_bytes);
  options.h2_header_memory_total = std::max<std::size_t>(64 << 20, options.h2_header_memory_per_connection);
  options.max_memory = f.max_memory == Flags::kMaxMemoryDerived ? default_max_memory() : f.max_memory;
  options.relay_threads = f.threads;

  boost::asio::io_context ioc;
  admin::AuditFlusher audit_flusher(ioc, audit);
  audit_flusher.start();
  proxy::Server server(ioc, options, engine, clock, &observer);
  bridge.set_outage_enforcer([&server] { server.enforce_outage(); });
  server.start();

  admin::AdminServerOptions admin_options;
  auto admin_ep = net::parse_host_port(f.admin);
  admin_options.address = admin_ep.host;
  admin_options.port = admin_ep.port;
  admin_options.token = admin_token;
  admin_options.max_connections = f.admin_max_connections;
  admin::AdminServer admin_server(ioc, admin_options, bridge);
  admin_server.start();

  std::string listen = client_address(server.local_endpoint());
  std::string admin_address = host_port(admin_server.local_endpoint());
  spdlog::info("proxying https://{} -> https://{} (admin http://{}, at most {} client connections, {})", listen,
               options.upstream.endpoint.to_string(), admin_address, options.max_connections,
               options.max_memory > 0 ? "--max-memory " + std::to_string(options.max_memory >> 20) + " MiB"
                                      : std::string("no --max-memory"));
  if (!f.write_kubeconfig.empty()) {
    net::KubeconfigSpec spec;
    spec.name = "faultline-proxy";
    spec.server = "https://" + listen;
    spec.ca_pem = ca.cert_pem;
    // The proxy replaces the client's identity upstream, but kubectl prompts for a password when
    // a kubeconfig user has no credentials at all: give it a placeholder the proxy drops.
    if (options.upstream.replace_identity) spec.token = "replaced-by-faultline-proxy";
    net::write_kubeconfig(f.write_kubeconfig, spec);
    spdlog::info("wrote kubeconfig {}", f.write_kubeconfig);
  }
  if (!f.ready_file.empty()) write_ready_file(f.ready_file, listen, admin_address);

  boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int signal) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", signal);
    server.stop(seconds(f.drain_seconds));
    admin_server.stop();
    audit_flusher.stop();  // the final flush follows once the relay has drained
  });

  const std::chrono::microseconds spin(f.spin_us);
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < f.threads; ++i) threads.emplace_back([&] { proxy::run_relay_thread(ioc, spin); });
  proxy::run_relay_thread(ioc, spin);
  for (auto& t : threads) t.join();
  audit.flush();
  spdlog::info("stopped; audit log flushed ({} records)", audit.last_seq());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "faultline-proxy: TLS man-in-the-middle in front of kube-apiserver that injects the faults of a "
      "scenario. Transparent until a scenario is loaded and armed (--scenario/--arm or the admin API)."};
  Flags flags;
  define_flags(app, flags);
  app.set_version_flag("--version", faultline::version_line("faultline-proxy"));
  CLI11_PARSE(app, argc, argv);
  setup_logging(flags.log_level);
  try {
    return run(flags);
  } catch (const faults::ScenarioError& e) {
    for (const auto& error : e.errors()) std::cerr << error << "\n";
    std::cerr << "faultline-proxy: invalid scenario " << flags.scenario << "\n";
  } catch (const CLI::Error& e) {
    std::cerr << "faultline-proxy: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "faultline-proxy: " << e.what() << "\n";
  }
  return 1;
}
