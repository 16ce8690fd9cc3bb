#include "faultline/harness/schema/declared.hpp"

namespace faultline::harness::schema {
namespace {

bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '$';
}

}  // namespace

std::optional<FieldPath> parse_field_path(std::string_view text, std::string* problem) {
  auto fail = [&](std::string what) -> std::optional<FieldPath> {
    *problem = "invalid field path \"" + std::string(text) + "\": " + what +
               " (write keys with dots, [N] for a list item, [\"a.b\"] for a key with dots, e.g. "
               "metadata.ownerReferences[0].uid)";
    return std::nullopt;
  };
  if (text.empty()) return fail("empty");
  if (text.size() > max_field_path_length)
    return fail("longer than " + std::to_string(max_field_path_length) + " characters");
  FieldPath path;
  path.text = std::string(text);
  std::size_t i = 0;
  bool need_key = true;  // at the start and after a dot
  while (i < text.size()) {
    const char c = text[i];
    if (c == '[') {
      if (need_key && i != 0) return fail("[ right after a dot");
      if (i == 0) return fail("starts with [");
      ++i;
      if (i < text.size() && text[i] == '"') {
        const std::size_t close = text.find('"', i + 1);
        if (close == std::string_view::npos) return fail("a quoted key is not closed");
        if (close == i + 1) return fail("an empty quoted key");
        path.steps.emplace_back(std::string(text.substr(i + 1, close - i - 1)));
        i = close + 1;
      } else {
        std::size_t index = 0;
        const std::size_t digits = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - digits < 9)
          index = index * 10 + (text[i++] - '0');
        if (i == digits) return fail("expected a list index or a quoted key after [");
        path.steps.emplace_back(index);
      }
      if (i >= text.size() || text[i] != ']') return fail("expected ] at character " + std::to_string(i + 1));
      ++i;
      need_key = false;
      continue;
    }
    if (c == '.') {
      if (need_key) return fail(i == 0 ? "starts with a dot" : "two dots or a dot after nothing");
      need_key = true;
      ++i;
      continue;
    }
    if (!need_key) return fail("expected . or [ at character " + std::to_string(i + 1));
    const std::size_t start = i;
    while (i < text.size() && key_char(text[i])) ++i;
    if (i == start)
      return fail("unexpected character '" + std::string(1, c) + "' at character " + std::to_string(i + 1));
    path.steps.emplace_back(std::string(text.substr(start, i - start)));
    need_key = false;
  }
  if (need_key) return fail("ends with a dot");
  return path;
}

std::string WatchSpec::group() const {
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? std::string() : api_version.substr(0, slash);
}

std::string WatchSpec::audit_resource() const {
  const std::string g = group();
  return g.empty() ? resource : resource + "." + g;
}

}  // namespace faultline::harness::schema
