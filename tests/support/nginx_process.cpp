#include "nginx_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace faultline::testing {

namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in loopback(unsigned short port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

bool accepts_connections(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address = loopback(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

void write_text(const fs::path& path, const std::string& text, bool secret = false) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  if (secret) ::chmod(path.c_str(), 0600);
}

}  // namespace

unsigned short free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address = loopback(0);
  socklen_t len = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

NginxProcess::NginxProcess(const fs::path& dir, const std::string& name, const NginxOptions& options)
    : dir_(dir), name_(name), port_(options.port != 0 ? options.port : free_loopback_port()) {
  const fs::path cert = dir_ / (name_ + ".crt");
  const fs::path key = dir_ / (name_ + ".key");
  const fs::path conf = dir_ / (name_ + ".conf");
  write_text(cert, options.cert_pem);
  write_text(key, options.key_pem, true);
  std::string temp_paths;
  for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    temp_paths += "  " + std::string(kind) + "_temp_path " + (dir_ / (name_ + "-" + kind)).string() + ";\n";
  }
  // One process: no master that would switch its workers to another user.
  write_text(conf, "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + (dir_ / (name_ + ".pid")).string() +
                       ";\nerror_log " + (dir_ / (name_ + "-error.log")).string() +
                       " info;\nevents { worker_connections 1024; }\nhttp {\n  access_log off;\n" + temp_paths +
                       "  server {\n    listen 127.0.0.1:" + std::to_string(port_) +
                       (options.http2 ? " ssl http2;\n" : " ssl;\n") + "    ssl_certificate " + cert.string() +
                       ";\n    ssl_certificate_key " + key.string() + ";\n" + options.server_block + "\n  }\n}\n");

  std::vector<std::string> args = {"nginx", "-p",         dir_.string(), "-e", (dir_ / (name_ + "-error.log")).string(),
                                   "-c",    conf.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = (dir_ / (name_ + ".out")).string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed for nginx " + name_);
  if (pid_ == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (fd > 2) ::close(fd);
    }
    ::execvp(argv[0], argv.data());
    static const char kFailed[] = "execvp nginx failed (is nginx installed? scripts/install-deps: nginx-light)\n";
    [[maybe_unused]] auto ignored = ::write(2, kFailed, sizeof kFailed - 1);
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!accepts_connections(port_)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("nginx " + name_ + " exited before it listened on port " + std::to_string(port_) +
                               ":\n" + slurp(out) + log());
    }
    if (Clock::now() > deadline) {
      stop();
      throw std::runtime_error("nginx " + name_ + " did not listen on port " + std::to_string(port_) +
                               " within 30 s:\n" + slurp(out) + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

NginxProcess::~NginxProcess() { stop(); }

void NginxProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);  // nginx's fast shutdown
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) != pid_) {
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
}

std::string NginxProcess::log() const { return slurp(dir_ / (name_ + "-error.log")); }

}  // namespace faultline::testing
