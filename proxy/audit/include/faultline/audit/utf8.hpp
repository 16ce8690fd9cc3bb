#pragma once
// JSON text must be UTF-8, but clients choose the bytes of the values the proxy reports (a
// User-Agent, a request path, percent-decoded names, query parameters echoed in errors). Every
// JSON text the proxy writes passes through to_valid_utf8: valid UTF-8 is kept as it is, and each
// ill-formed sequence becomes U+FFFD REPLACEMENT CHARACTER, one per maximal ill-formed subpart
// (the Unicode Standard's recommended practice, which browsers' decoders follow too). Bytes below
// 0x80 are never replaced, so applying it to a serialized JSON text only changes string contents.

#include <string>
#include <string_view>

namespace faultline::audit {

bool is_valid_utf8(std::string_view text);
std::string to_valid_utf8(std::string_view text);

}  // namespace faultline::audit
