#include "faultline/faults/printable.hpp"

#include <cstdint>

namespace faultline::faults {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool is_control(unsigned char byte) { return byte < 0x20 || byte == 0x7F; }

// U+0080..U+009F, encoded C2 80..C2 9F.
bool is_c1(std::string_view text, std::size_t i, std::size_t length) {
  return length == 2 && static_cast<unsigned char>(text[i]) == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F;
}

void append_hex(std::string& out, std::string_view prefix, unsigned char byte) {
  out += prefix;
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

}  // namespace

bool is_printable(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_length_at(text, i);
    if (length == 0 || (length == 1 && is_control(static_cast<unsigned char>(text[i]))) || is_c1(text, i, length))
      return false;
    i += length;
  }
  return true;
}

std::string printable(std::string_view text) {
  if (is_printable(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length_at(text, i);
    if (length == 0) {
      append_hex(out, "\\x", byte);
      ++i;
      continue;
    }
    if (length == 1 && is_control(byte)) {
      if (byte == '\n') out += "\\n";
      else if (byte == '\r') out += "\\r";
      else if (byte == '\t') out += "\\t";
      else append_hex(out, "\\x", byte);
    } else if (is_c1(text, i, length)) {
      append_hex(out, "\\u00", static_cast<unsigned char>(text[i + 1]));
    } else {
      out.append(text, i, length);
    }
    i += length;
  }
  return out;
}

std::size_t utf8_length_at(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2, code = lead & 0x1F;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3, code = lead & 0x0F;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4, code = lead & 0x07;
  else return 0;
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (length == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) return 0;
  if (length == 4 && (code < 0x10000 || code > 0x10FFFF)) return 0;
  return length;
}

}  // namespace faultline::faults
