#include "faultline/proxy/watch_stream.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <stdexcept>

namespace faultline::proxy {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

void JsonFrameSplitter::finish_event(std::vector<std::string>& out) {
  out.push_back(std::move(pending_));
  pending_.clear();
  complete_ = false;
}

std::vector<std::string> JsonFrameSplitter::feed(std::string_view bytes) {
  std::vector<std::string> out;
  for (char c : bytes) {
    if (complete_) {
      if (is_space(c)) {
        pending_ += c;
        // The whitespace after an event is part of it (it is relayed with it): it counts against
        // the limit too, whether or not a newline ever ends it.
        if (pending_.size() > limit_) throw std::length_error("watch event larger than the framing limit");
        if (c == '\n') finish_event(out);  // the newline the apiserver writes after each event
        continue;
      }
      finish_event(out);  // next event starts without a newline in between
    }
    pending_ += c;
    if (pending_.size() > limit_) throw std::length_error("watch event larger than the framing limit");
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && depth_ > 0) {
      if (--depth_ == 0) complete_ = true;
    }
  }
  return out;
}

std::optional<std::string> watch_event_type(std::string_view event_json) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(event_json, ec);
  if (ec || !value.is_object()) return std::nullopt;
  const auto* type = value.as_object().if_contains("type");
  if (type == nullptr || !type->is_string()) return std::nullopt;
  return std::string(type->as_string());
}

std::optional<std::string> watch_event_object(std::string_view event_json) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(event_json, ec);
  if (ec || !value.is_object()) return std::nullopt;
  const auto* object = value.as_object().if_contains("object");
  if (object == nullptr) return std::nullopt;
  return boost::json::serialize(*object);
}

}  // namespace faultline::proxy
