#pragma once
// Reading a whole file that a user names (a scenario, a kubeconfig, a certificate, an env file):
// regular files only and only up to a size, so that /dev/zero, a FIFO or a huge file is an error
// instead of a hang or unbounded memory. The one place every program of faultline reads such files.

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace faultline::faults {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The file's bytes. Throws FileError "<path>: <problem>" when it cannot be opened or read, is not a
// regular file ("not a regular file (a FIFO): <what> is read from a regular file only"; opening a
// FIFO does not wait for a writer), or has more than `max_bytes` ("the file is N bytes; the maximum
// is M bytes (1 MiB)"), also when it grows past that while being read.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes, std::string_view what);

}  // namespace faultline::faults
