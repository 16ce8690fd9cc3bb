#include "faultline/net/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace faultline::net {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Closes the descriptor on every path out of read_token_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_token_file(const std::filesystem::path& path, std::string_view what, std::string_view if_empty) {
  const std::string the = "the " + std::string(what);
  auto fail = [&](const std::string& problem) -> void { throw TokenFileError(path.string() + ": " + problem); };
  // O_NONBLOCK: opening a FIFO with no writer must not hang start-up; fstat then rejects it.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) fail("cannot open " + the + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail("cannot stat " + the + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(the + " is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxTokenFileBytes) {
    fail(the + " has " + std::to_string(st.st_size) + " bytes; at most " + std::to_string(kMaxTokenFileBytes) +
         " are allowed");
  }
  std::string content(kMaxTokenFileBytes + 1, '\0');
  std::size_t size = 0;
  while (size < content.size()) {
    const ssize_t n = ::read(file.fd, content.data() + size, content.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read " + the + ": " + std::strerror(errno));
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  if (size > kMaxTokenFileBytes) fail(the + " has more than " + std::to_string(kMaxTokenFileBytes) + " bytes");
  std::string_view token(content.data(), size);
  while (!token.empty() && is_space(token.front())) token.remove_prefix(1);
  while (!token.empty() && is_space(token.back())) token.remove_suffix(1);
  if (token.empty()) fail(the + " is empty or only whitespace" + std::string(if_empty));
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      fail("the token has a whitespace, control or non-ASCII byte at character " + std::to_string(i + 1) +
           " of the token (a bearer token is one line of visible ASCII characters)");
    }
  }
  return std::string(token);
}

RotatingTokenFile::RotatingTokenFile(std::filesystem::path path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
  seen_ = identity();
  token_ = read_token_file(path_, what_);
}

RotatingTokenFile::Identity RotatingTokenFile::identity() const {
  struct stat st {};
  Identity id;
  if (::stat(path_.c_str(), &st) != 0) return id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = st.st_size;
  id.modified = st.st_mtim;
  return id;
}

std::string RotatingTokenFile::current() const {
  const Identity now = identity();
  std::string error;
  {
    std::lock_guard lock(mutex_);
    if (now == seen_) return token_;
    seen_ = now;
    try {
      token_ = read_token_file(path_, what_);
      return token_;
    } catch (const TokenFileError& e) {
      error = e.what();
    }
  }
  if (report_) report_(error + " (still sending the token read before)");
  std::lock_guard lock(mutex_);
  return token_;
}

}  // namespace faultline::net
