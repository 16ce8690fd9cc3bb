#include "yaml_json.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <regex>
#include <stdexcept>
#include <string>

namespace faultline::admin {

namespace json = boost::json;

namespace {

// A plain (unquoted) scalar typed by the YAML 1.2 core schema; JSON has no inf/nan, so those
// and other non-JSON numbers stay strings.
json::value plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex integer(R"([-+]?[0-9]+)");
  static const std::regex decimal(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  const char* first = s.data() + (s.front() == '+' ? 1 : 0);
  const char* last = s.data() + s.size();
  if (std::regex_match(s, integer)) {
    std::int64_t i = 0;
    if (auto [end, ec] = std::from_chars(first, last, i); ec == std::errc() && end == last) return i;
  }
  if (std::regex_match(s, decimal)) {
    double d = 0;
    if (auto [end, ec] = std::from_chars(first, last, d); ec == std::errc() && end == last && std::isfinite(d)) {
      return d;
    }
  }
  return json::string(s);
}

json::value convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags plain scalars "?" and quoted ones "!".
      return node.Tag() == "?" ? plain_scalar(node.Scalar()) : json::value(json::string(node.Scalar()));
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& item : node) a.push_back(convert(item));
      return a;
    }
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : node) o[kv.first.as<std::string>()] = convert(kv.second);
      return o;
    }
  }
  return nullptr;
}

}  // namespace

json::value yaml_to_json(std::string_view yaml) {
  try {
    return convert(YAML::Load(std::string(yaml)));
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("scenario YAML does not parse: ") + e.what());
  }
}

}  // namespace faultline::admin
