#include "relay_support.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "faultline/net/tls.hpp"

namespace faultline::relaytest {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned short port_of(const std::string& host_port) {
  return static_cast<unsigned short>(std::stoi(host_port.substr(host_port.rfind(':') + 1)));
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  std::random_device random;
  path_ = fs::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path proxy_binary() {
  if (const char* env = std::getenv("FAULTLINE_PROXY_BIN"); env && *env) return env;
  return fs::path(FAULTLINE_BINARY_DIR) / "proxy" / "faultline-proxy";
}

ProxyProcess::ProxyProcess(const fs::path& binary, const fs::path& dir, const net::CertifiedKey& ca,
                           const std::vector<std::string>& extra_args)
    : dir_(dir) {
  net::write_file(dir / "proxy-ca.crt", ca.cert_pem);
  net::write_file(dir / "proxy-ca.key", ca.key_pem, true);
  fs::path ready = dir / "ready.json";
  std::vector<std::string> args = {binary.string(),
                                   "--listen", "127.0.0.1:0",
                                   "--admin", "127.0.0.1:0",
                                   "--ca-cert", (dir / "proxy-ca.crt").string(),
                                   "--ca-key", (dir / "proxy-ca.key").string(),
                                   "--ready-file", ready.string()};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string log_path = (dir / "proxy.log").string();

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(ready)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("faultline-proxy exited before it was ready; its log:\n" + slurp(log_path));
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("faultline-proxy not ready after 60 s; its log:\n" + slurp(log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto ready_json = boost::json::parse(slurp(ready)).as_object();
  port_ = port_of(std::string(ready_json.at("listen").as_string()));
  admin_port_ = port_of(std::string(ready_json.at("admin").as_string()));
}

ProxyProcess::~ProxyProcess() { stop(); }

bool ProxyProcess::stop() {
  if (pid_ <= 0) return false;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 1500; ++i) {  // 30 s
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return false;
}

std::string ProxyProcess::log() const { return slurp(dir_ / "proxy.log"); }

std::uint64_t ProxyProcess::peak_rss_kib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  }
  throw std::runtime_error("no VmHWM in /proc/" + std::to_string(pid_) + "/status");
}

Watchdog::Watchdog(int fd, std::chrono::seconds limit) {
  thread_ = std::thread([this, fd, limit] {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
      fired_ = true;
      ::shutdown(fd, SHUT_RDWR);  // the blocked read/write returns with an error
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Watchdog::fired() const {
  std::lock_guard lock(mutex_);
  return fired_;
}

TlsClient::TlsClient(unsigned short port, const std::string& ca_pem, std::chrono::seconds limit)
    : tls(net::make_client_context(net::ClientTlsOptions{ca_pem, false, "", ""})), stream(ioc, tls) {
  beast::get_lowest_layer(stream).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  beast::get_lowest_layer(stream).set_option(tcp::no_delay(true));
  net::prepare_client_ssl(stream.native_handle(), "127.0.0.1", true);
  watchdog = std::make_unique<Watchdog>(beast::get_lowest_layer(stream).native_handle(), limit);
  stream.handshake(asio::ssl::stream_base::client);
}

AdminAnswer admin_request(unsigned short port, const std::string& method, const std::string& target) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(false);
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return {static_cast<int>(res.result_int()), res.body()};
}

unsigned short unused_port() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace faultline::relaytest
