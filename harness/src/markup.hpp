#pragma once
// Escaping for XML and HTML text and attributes (the same five characters for both), and the
// small pieces of markup the HTML reports (report.html, soak.html) share.
#include <fmt/format.h>

#include <initializer_list>
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

// The width in pixels a sans-serif font of font_px draws text with, estimated generously from each
// character's class (SVG has no layout: labels are placed from this, so that they do not collide).
// Bytes of a UTF-8 sequence after its first count nothing.
inline double text_width(std::string_view text, double font_px, bool bold = false) {
  double em = 0;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c & 0xC0) == 0x80) continue;
    if (std::string_view(" .,:;'|!()[]ijlftI/").find(ch) != std::string_view::npos) {
      em += 0.4;
    } else if (std::string_view("mwMW@%").find(ch) != std::string_view::npos) {
      em += 1.0;
    } else if (c >= 'A' && c <= 'Z') {
      em += 0.78;
    } else {
      em += 0.66;
    }
  }
  return em * font_px * (bold ? 1.08 : 1.0);
}

// A coordinate or value in SVG, one decimal.
inline std::string num(double v) { return fmt::format("{:.1f}", v); }

// <tr> of escaped <td> cells.
inline std::string row(std::initializer_list<std::string> cells) {
  std::string out = "<tr>";
  for (const auto& c : cells) out += "<td>" + escape_markup(c) + "</td>";
  return out + "</tr>\n";
}

}  // namespace faultline::harness::detail
