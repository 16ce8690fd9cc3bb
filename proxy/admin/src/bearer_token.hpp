#pragma once

#include <string_view>

namespace faultline::admin {

// True when `authorization` is "Bearer <expected>" (scheme case-insensitive). The token is
// compared in constant time over SHA-256 digests, so neither its content nor its length leaks
// through timing.
bool bearer_token_matches(std::string_view authorization, std::string_view expected);

}  // namespace faultline::admin
