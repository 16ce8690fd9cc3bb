#include "faultline/faults/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace faultline::faults {
namespace {

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

// "1048576 bytes (1 MiB)", "65536 bytes (64 KiB)", "1000 bytes".
std::string byte_count(std::size_t n) {
  std::string text = std::to_string(n) + " bytes";
  if (n >= 1024 * 1024 && n % (1024 * 1024) == 0) return text + " (" + std::to_string(n / (1024 * 1024)) + " MiB)";
  if (n >= 1024 && n % 1024 == 0) return text + " (" + std::to_string(n / 1024) + " KiB)";
  return text;
}

}  // namespace

std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes, std::string_view what) {
  const std::string name = path.string();
  auto fail = [&name](const std::string& problem) { return FileError(name + ": " + problem); };
  auto system_error = [](int error) { return std::generic_category().message(error); };
  // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw fail("cannot read the file: " + system_error(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw fail("cannot read the file: " + system_error(errno));
  if (!S_ISREG(info.st_mode)) {
    throw fail("not a regular file (" + file_kind(info.st_mode) + "): " + std::string(what) +
               " is read from a regular file only");
  }
  const std::string maximum = "the maximum is " + byte_count(max_bytes);
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes)
    throw fail("the file is " + std::to_string(info.st_size) + " bytes; " + maximum);
  std::string text;
  std::array<char, 64 * 1024> chunk{};
  for (;;) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail("cannot read the file: " + system_error(errno));
    if (n == 0) break;
    text.append(chunk.data(), static_cast<std::size_t>(n));
    if (text.size() > max_bytes) throw fail("the file grew while being read; " + maximum);
  }
  return text;
}

}  // namespace faultline::faults
