#pragma once
// Escaping for XML and HTML text and attributes (the same five characters for both).
#include <string>
#include <string_view>

namespace faultline::harness::detail {

inline std::string escape_markup(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even when escaped; drop them.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') continue;
        out += c;
    }
  }
  return out;
}

}  // namespace faultline::harness::detail
