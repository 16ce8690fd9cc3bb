#include "faultline/faults/yaml_load.hpp"

#include "faultline/faults/printable.hpp"

#include <yaml-cpp/eventhandler.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>

namespace faultline::faults::detail {
namespace {

// ---- text ---------------------------------------------------------------------------------------

// Where byte `offset` of `text` is, as yaml-cpp reports positions: line and column from 0, the
// column counted in characters.
YAML::Mark position(std::string_view text, std::size_t offset) {
  YAML::Mark mark;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++mark.line;
      line_start = i + 1;
    }
  for (std::size_t i = line_start; i < offset; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++mark.column;
  mark.pos = static_cast<int>(offset);
  return mark;
}

std::string hex_byte(unsigned char byte) {
  constexpr char digits[] = "0123456789ABCDEF";
  return std::string("0x") + digits[byte >> 4] + digits[byte & 0xF];
}

// Scenario text is UTF-8 without control characters other than tab and line breaks: what the
// admin API echoes back as JSON is then always valid, and yaml-cpp never guesses another encoding
// from NUL bytes. Reports the first offending byte.
bool check_text(std::string_view text, Errors& errors) {
  for (std::size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7F) {
      errors.add(
          position(text, i), "",
          "control character " + hex_byte(byte) + " (a scenario is text: only tabs and line breaks are allowed)");
      return false;
    }
    std::size_t length = utf8_length_at(text, i);
    if (length == 0) {
      errors.add(position(text, i), "", "invalid UTF-8 (byte " + hex_byte(byte) + "): a scenario is UTF-8 text");
      return false;
    }
    i += length;
  }
  return true;
}

// ---- structure ----------------------------------------------------------------------------------

struct Stop {};  // thrown by BoundsCheck to end parsing at a bound

// Sees the parser's events, before yaml-cpp builds a tree: refuses anchors and aliases, counts
// values and nesting.
class BoundsCheck final : public YAML::EventHandler {
 public:
  explicit BoundsCheck(Errors& errors) : errors_(errors) {}
  bool clean() const { return clean_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { value(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    value(mark, YAML::NullAnchor);
    auto name = names_.find(anchor);
    refuse(mark, "aliases", name == names_.end() || name->second.empty() ? "" : "*" + name->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    value(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { --depth_; }
  // Comes just before the event of the value that carries the anchor.
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

 private:
  void value(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (++values_ > max_scenario_nodes) {
      errors_.add(
          mark, "",
          "more than " + std::to_string(max_scenario_nodes) + " values (scalars, mappings and lists) in one scenario");
      throw Stop{};
    }
    if (anchor != YAML::NullAnchor) {
      names_[anchor] = anchor_name_;
      refuse(mark, "anchors", anchor_name_.empty() ? "" : "&" + anchor_name_);
    }
    anchor_name_.clear();
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    value(mark, anchor);
    if (++depth_ > max_scenario_depth) {
      errors_.add(mark, "", "mappings and lists nested more than " + std::to_string(max_scenario_depth) + " deep");
      throw Stop{};
    }
  }

  void refuse(const YAML::Mark& mark, const std::string& what, const std::string& spelled) {
    clean_ = false;
    errors_.add(mark, "",
                what + " are not supported in scenario files" + (spelled.empty() ? "" : " (\"" + spelled + "\")") +
                    ": write the value out in full");
  }

  Errors& errors_;
  bool clean_ = true;
  std::size_t values_ = 0;
  std::size_t depth_ = 0;
  std::string anchor_name_;
  std::map<YAML::anchor_t, std::string> names_;
};

// Stops the parser at the start of a document after the first, noting where it starts.
class SecondDocument final : public YAML::EventHandler {
 public:
  struct Started {};
  YAML::Mark start = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    throw Started{};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// ---- JSON ---------------------------------------------------------------------------------------

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string_view without_sign(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return s;
}

// [-+]?[0-9]+
bool integer_syntax(std::string_view s) { return all_digits(without_sign(s)); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, in one pass.
bool decimal_syntax(std::string_view s) {
  s = without_sign(s);
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t begin = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - begin;
  };
  std::size_t whole = digits(), fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole == 0 && fraction == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

boost::json::value plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // from_chars reads a '-' but not a '+'.
  const char* first = s.data() + (s.front() == '+' ? 1 : 0);
  const char* last = s.data() + s.size();
  if (integer_syntax(s)) {
    std::int64_t integer = 0;
    if (auto [end, ec] = std::from_chars(first, last, integer); ec == std::errc() && end == last) return integer;
  }
  if (decimal_syntax(s)) {
    double real = 0;
    auto [end, ec] = std::from_chars(first, last, real);
    if (ec == std::errc() && end == last && std::isfinite(real)) return real;
  }
  return boost::json::string(s);
}

std::string key_text(const YAML::Node& key) {
  if (key.IsScalar()) return key.Scalar();
  if (key.IsNull()) return "null";
  throw YAML::RepresentationException(key.Mark(), "a mapping key must be a scalar, not a mapping or a list");
}

}  // namespace

YAML::Node load_yaml(std::string_view text, Errors& errors) {
  const YAML::Node nothing(YAML::NodeType::Undefined);
  if (text.size() > max_scenario_bytes) {
    errors.add(YAML::Mark::null_mark(), "",
               "the scenario is " + std::to_string(text.size()) + " bytes; the maximum is " +
                   std::to_string(max_scenario_bytes) + " bytes (1 MiB)");
    return nothing;
  }
  if (!check_text(text, errors)) return nothing;
  try {
    std::istringstream in{std::string(text)};
    {
      YAML::Parser parser(in);
      BoundsCheck check(errors);
      try {
        parser.HandleNextDocument(check);
      } catch (const Stop&) {
        return nothing;
      }
      if (!check.clean()) return nothing;
      // A scenario is one document; what follows a second "---" would be dropped unseen.
      SecondDocument second;
      bool more = false;
      try {
        more = parser.HandleNextDocument(second);
      } catch (const SecondDocument::Started&) {
        more = true;
      }
      if (more) {
        errors.add(second.start, "",
                   "a second YAML document: a file holds one scenario (or matrix); remove this \"---\" and what "
                   "follows, or put it in a file of its own");
        return nothing;
      }
    }
    in.clear();
    in.seekg(0);
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    errors.add(e.mark, "", "invalid YAML: " + e.msg);
    return nothing;
  }
}

void read_document(std::string_view text, Errors& errors, const std::function<void(const YAML::Node&)>& parse) {
  YAML::Node document = load_yaml(text, errors);
  try {
    if (document.IsDefined() && !document.IsNull()) parse(document);
    else if (errors.empty()) errors.add(YAML::Mark::null_mark(), "", "the file is empty");
  } catch (const YAML::Exception& e) {  // a node shape the readers did not expect: still an error report
    errors.add(e.mark, "", "cannot read this YAML: " + e.msg);
  }
  if (!errors.empty()) throw ScenarioError(errors.report());
}

// Recursion is bounded: load_yaml refuses trees deeper than max_scenario_depth.
boost::json::value to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      // yaml-cpp tags plain scalars "?" and quoted ones "!".
      return node.Tag() == "?" ? plain_scalar(node.Scalar()) : boost::json::value(boost::json::string(node.Scalar()));
    case YAML::NodeType::Sequence: {
      boost::json::array array;
      for (const auto& item : node) array.push_back(to_json(item));
      return array;
    }
    case YAML::NodeType::Map: {
      boost::json::object object;
      for (const auto& entry : node) object[key_text(entry.first)] = to_json(entry.second);
      return object;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

}  // namespace faultline::faults::detail
