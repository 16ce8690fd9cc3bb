#include "faultline/audit/utf8.hpp"

namespace faultline::audit {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at text[i], or 0 when none starts there; `end` is then
// set past the maximal ill-formed subpart (the lead byte and the continuation bytes that could
// still have completed it). Ranges as in the Unicode Standard, table 3-7 (no overlong forms, no
// surrogates, nothing above U+10FFFF).
std::size_t sequence_at(std::string_view text, std::size_t i, std::size_t& end) {
  const auto lead = static_cast<unsigned char>(text[i]);
  if (lead < 0x80) return end = i + 1, 1;
  std::size_t continuation = 0;
  unsigned char low = 0x80, high = 0xBF;  // range of the first continuation byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuation = 1;
  } else if (lead == 0xE0) {
    continuation = 2, low = 0xA0;
  } else if (lead == 0xED) {
    continuation = 2, high = 0x9F;
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    continuation = 2;
  } else if (lead == 0xF0) {
    continuation = 3, low = 0x90;
  } else if (lead == 0xF4) {
    continuation = 3, high = 0x8F;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    continuation = 3;
  } else {
    return end = i + 1, 0;  // 0x80..0xC1, 0xF5..0xFF never start a sequence
  }
  std::size_t j = i + 1;
  for (std::size_t k = 0; k < continuation; ++k, ++j) {
    if (j >= text.size()) break;
    const auto c = static_cast<unsigned char>(text[j]);
    if (c < (k == 0 ? low : 0x80) || c > (k == 0 ? high : 0xBF)) break;
  }
  end = j;
  return j - i == continuation + 1 ? continuation + 1 : 0;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0, end = 0; i < text.size(); i = end) {
    if (sequence_at(text, i, end) == 0) return false;
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  for (std::size_t i = 0, end = 0; i < text.size(); i = end) {
    if (sequence_at(text, i, end) == 0) {
      out += kReplacement;
    } else {
      out.append(text.substr(i, end - i));
    }
  }
  return out;
}

}  // namespace faultline::audit
