#include "faultline/admin/token_file.hpp"

namespace faultline::admin {

std::string read_token_file(const std::filesystem::path& path) {
  return net::read_token_file(path, "admin token file",
                              "; an empty token would leave the admin API unauthenticated (write a token into it, or "
                              "leave out --admin-token-file to run without one)");
}

}  // namespace faultline::admin
