#include "faultline/admin/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace faultline::admin {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view problem) {
  throw TokenFileError(path.string() + ": " + std::string(problem));
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Closes the descriptor on every path out of read_token_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_token_file(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang start-up; fstat then rejects it.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) fail(path, std::string("cannot open the admin token file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail(path, std::string("cannot stat the admin token file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "the admin token file is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxTokenFileBytes) {
    fail(path, "the admin token file has " + std::to_string(st.st_size) + " bytes; at most " +
                   std::to_string(kMaxTokenFileBytes) + " are allowed");
  }
  std::string content(kMaxTokenFileBytes + 1, '\0');
  std::size_t size = 0;
  while (size < content.size()) {
    const ssize_t n = ::read(file.fd, content.data() + size, content.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("cannot read the admin token file: ") + std::strerror(errno));
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  if (size > kMaxTokenFileBytes) {
    fail(path, "the admin token file has more than " + std::to_string(kMaxTokenFileBytes) + " bytes");
  }
  std::string_view token(content.data(), size);
  while (!token.empty() && is_space(token.front())) token.remove_prefix(1);
  while (!token.empty() && is_space(token.back())) token.remove_suffix(1);
  if (token.empty()) {
    fail(path,
         "the admin token file is empty or only whitespace; an empty token would leave the admin API "
         "unauthenticated (write a token into it, or leave out --admin-token-file to run without one)");
  }
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      fail(path, "the admin token has a whitespace, control or non-ASCII byte at character " + std::to_string(i + 1) +
                     " of the token (a bearer token is one line of visible ASCII characters)");
    }
  }
  return std::string(token);
}

}  // namespace faultline::admin
