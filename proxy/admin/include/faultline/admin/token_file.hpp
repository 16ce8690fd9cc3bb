#pragma once
// The admin API's bearer token, read from a file (--admin-token-file). A token file that yields no
// usable token is an error, never "no authentication": whoever gives a token file means to lock
// the admin API.

#include <filesystem>
#include <string>

#include "faultline/net/token_file.hpp"

namespace faultline::admin {

using net::kMaxTokenFileBytes;
using net::TokenFileError;

// The token in `path`, without leading and trailing whitespace (a trailing newline is common).
// Throws TokenFileError, with a message that starts with the path, when the file is not a regular
// file, cannot be read, is larger than kMaxTokenFileBytes, is empty or only whitespace, or when
// the token has whitespace, control or non-ASCII bytes inside (it could never be sent in an
// Authorization header).
std::string read_token_file(const std::filesystem::path& path);

}  // namespace faultline::admin
