#pragma once
// Bearer tokens kept in files: read once (the admin API's --admin-token-file) or followed while
// the file is replaced (a service-account token that the kubelet rotates, --upstream-in-cluster).

#include <sys/types.h>

#include <cstddef>
#include <ctime>
#include <filesystem>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace faultline::net {

// Largest token file read (a Kubernetes service account JWT is about 1 KiB).
inline constexpr std::size_t kMaxTokenFileBytes = 64 * 1024;

class TokenFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The token in `path`, without leading and trailing whitespace (a trailing newline is common).
// Throws TokenFileError, with a message that starts with the path and names the file as `what`
// ("admin token file"), when the file is not a regular file, cannot be read, is larger than
// kMaxTokenFileBytes, is empty or only whitespace (`if_empty` is appended to that message), or when
// the token has whitespace, control or non-ASCII bytes inside (it could never be sent in an
// Authorization header).
std::string read_token_file(const std::filesystem::path& path, std::string_view what, std::string_view if_empty = {});

// A token file that may be replaced while the program runs. The kubelet rotates a projected
// service-account token by writing a new file and swapping a symlink, so current() looks at the
// file's identity (device, inode, size, modification time, following symlinks) on every call and
// re-reads it when that changed: the first request after a rotation carries the new token.
// Thread-safe.
class RotatingTokenFile {
 public:
  // Reads the token now; throws TokenFileError as read_token_file does.
  RotatingTokenFile(std::filesystem::path path, std::string what);

  // The token. A re-read that fails (the file missing or empty for a moment) keeps the last token
  // and reports the error to on_error, once per failing version of the file.
  std::string current() const;
  void on_error(std::function<void(const std::string&)> report) { report_ = std::move(report); }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    timespec modified{};
    bool operator==(const Identity& o) const {
      return device == o.device && inode == o.inode && size == o.size && modified.tv_sec == o.modified.tv_sec &&
             modified.tv_nsec == o.modified.tv_nsec;
    }
  };
  Identity identity() const;  // size -1 when the file cannot be stat'ed

  std::filesystem::path path_;
  std::string what_;
  std::function<void(const std::string&)> report_;
  mutable std::mutex mutex_;
  mutable Identity seen_;  // of the last read, successful or not
  mutable std::string token_;
};

}  // namespace faultline::net
