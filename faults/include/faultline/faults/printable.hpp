#pragma once
// Text that clients and files choose (scenario and rule names, request paths, YAML keys and
// values) ends up in log lines and error reports, which are read on terminals and split into
// records at line breaks. printable() keeps such text on one line and inert: valid UTF-8 stays as
// it is, except control characters (C0, DEL, C1), which become \n, \r, \t or \xHH (\u0085 for a
// C1 character); a byte that is not part of valid UTF-8 becomes \xHH. Backslashes are kept as they
// are, so the result is for reading, not for decoding.

#include <cstddef>
#include <string>
#include <string_view>

namespace faultline::faults {

std::string printable(std::string_view text);

// True when printable(text) == text (nothing to escape), without building the copy.
bool is_printable(std::string_view text);

// The length of the well-formed UTF-8 sequence at text[i] (1 for ASCII); 0 when there is none (a
// stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
std::size_t utf8_length_at(std::string_view text, std::size_t i);

}  // namespace faultline::faults
