#include "faultline/faults/match.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace faultline::faults {
namespace {

template <typename Pred>
bool any_or_empty(const std::vector<std::string>& patterns, Pred pred) {
  return patterns.empty() || std::any_of(patterns.begin(), patterns.end(), pred);
}

bool verb_matches(std::string_view pattern, const RequestInfo& info) {
  if (pattern == "*") return true;
  if (pattern == "connect") return info.is_connect();
  return pattern == info.verb;
}

}  // namespace

namespace {

// A run of bits, one per automaton state, as 64-bit words.
using Bits = std::vector<std::uint64_t>;

// out = in << 1 across the words.
void shift_left(const std::uint64_t* in, std::uint64_t* out, std::size_t words) {
  std::uint64_t carry = 0;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t v = in[w];
    out[w] = (v << 1) | carry;
    carry = v >> 63;
  }
}

}  // namespace

// The glob as an automaton whose state j means "the first j pattern characters matched", all its
// states stepped at once with bit operations (shift-and). Each text character costs one pass over
// (pattern length + 1) / 64 words, whatever the pattern and text are: no backtracking, so a
// request with a long name costs time in proportion to the name, not to name x pattern.
bool glob_match(std::string_view pattern, std::string_view text) {
  // A run of '*' matches what one '*' matches; collapsing runs lets one shift close over the
  // empty match of a star.
  std::string p;
  p.reserve(pattern.size());
  for (char c : pattern)
    if (c != '*' || p.empty() || p.back() != '*') p.push_back(c);
  if (p.find_first_of("*?") == std::string::npos) return p == text;
  if (p == "*") return true;

  const std::size_t m = p.size();
  const std::size_t words = (m + 1 + 63) / 64;
  // Rows of `masks`: 0 the '*' positions, 1 the '?' positions (what any character may advance),
  // then one row per distinct literal character: its positions plus the '?' ones.
  constexpr std::size_t star_row = 0, any_row = 1;
  std::array<std::uint16_t, 256> row_of{};  // 0: no literal row, use any_row
  std::size_t rows = 2;
  for (char c : p)
    if (c != '*' && c != '?' && row_of[static_cast<unsigned char>(c)] == 0)
      row_of[static_cast<unsigned char>(c)] = static_cast<std::uint16_t>(rows++);
  Bits masks(rows * words, 0);
  auto set = [&](std::size_t row, std::size_t bit) { masks[row * words + bit / 64] |= std::uint64_t{1} << (bit % 64); };
  for (std::size_t j = 0; j < m; ++j) {
    unsigned char c = static_cast<unsigned char>(p[j]);
    if (c == '*') set(star_row, j);
    else if (c == '?')
      for (std::size_t row = any_row; row < rows; ++row) set(row, j);
    else set(row_of[c], j);
  }
  const std::uint64_t* stars = &masks[star_row * words];

  Bits state(words, 0), next(words, 0), scratch(words, 0);
  // Adds the states reachable by letting each active star match nothing.
  auto close = [&](Bits& bits) {
    for (std::size_t w = 0; w < words; ++w) scratch[w] = bits[w] & stars[w];
    shift_left(scratch.data(), scratch.data(), words);
    for (std::size_t w = 0; w < words; ++w) bits[w] |= scratch[w];
  };
  state[0] = 1;
  close(state);
  for (char ch : text) {
    const std::size_t row = row_of[static_cast<unsigned char>(ch)];
    const std::uint64_t* advance = &masks[(row == 0 ? any_row : row) * words];
    for (std::size_t w = 0; w < words; ++w) scratch[w] = state[w] & advance[w];
    shift_left(scratch.data(), next.data(), words);
    bool alive = false;
    for (std::size_t w = 0; w < words; ++w) {
      next[w] |= state[w] & stars[w];  // a star consumes the character and stays
      alive = alive || next[w] != 0;
    }
    if (!alive) return false;
    close(next);
    std::swap(state, next);
  }
  return (state[m / 64] >> (m % 64)) & 1;
}

bool resource_matches(std::string_view pattern, const RequestInfo& info) {
  if (!info.is_resource_request) return false;
  if (pattern == "*") return true;
  std::string_view resource_part = pattern, sub_part;
  bool has_sub = false;
  if (auto slash = pattern.find('/'); slash != std::string_view::npos) {
    resource_part = pattern.substr(0, slash);
    sub_part = pattern.substr(slash + 1);
    has_sub = true;
  }
  if (auto dot = resource_part.find('.'); dot != std::string_view::npos) {
    if (resource_part.substr(dot + 1) != info.api_group) return false;
    resource_part = resource_part.substr(0, dot);
  }
  if (resource_part != "*" && resource_part != info.resource) return false;
  if (!has_sub) return info.subresource.empty();
  return sub_part == "*" ? !info.subresource.empty() : sub_part == info.subresource;
}

bool Match::matches(const Request& request) const {
  const RequestInfo& info = request.info;
  auto glob_over = [](const std::string& text) {
    return [&text](const std::string& pattern) { return glob_match(pattern, text); };
  };
  return any_or_empty(verbs, [&](const std::string& v) { return verb_matches(v, info); }) &&
         any_or_empty(resources, [&](const std::string& r) { return resource_matches(r, info); }) &&
         any_or_empty(namespaces, glob_over(info.namespace_)) && any_or_empty(names, glob_over(info.name)) &&
         any_or_empty(user_agents, glob_over(request.user_agent)) && any_or_empty(paths, glob_over(info.path)) &&
         std::all_of(headers.begin(), headers.end(), [&](const HeaderMatch& h) {
           const std::string* value = request.header(h.name);
           return value != nullptr && glob_match(h.value, *value);
         });
}

bool Match::empty() const {
  return verbs.empty() && resources.empty() && namespaces.empty() && names.empty() && user_agents.empty() &&
         paths.empty() && headers.empty();
}

}  // namespace faultline::faults
