#pragma once
// Watch event framing for JSON watch streams: kube-apiserver writes one JSON object per event
// ({"type":"ADDED","object":{...}}) followed by a newline, in chunks that need not line up with
// events. The splitter cuts the byte stream into whole events, whatever the chunking.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::proxy {

class JsonFrameSplitter {
 public:
  // Feeds bytes; returns the events completed by them, each with its trailing whitespace
  // (the newline) attached so relaying them unchanged reproduces the stream byte for byte.
  std::vector<std::string> feed(std::string_view bytes);
  // Bytes of an event not yet complete (plus whitespace after the last event until the next one
  // starts).
  const std::string& pending() const { return pending_; }
  // Maximum size of one event; a larger one makes feed() throw std::length_error.
  void set_limit(std::size_t limit) { limit_ = limit; }

 private:
  void finish_event(std::vector<std::string>& out);

  std::string pending_;
  std::size_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  bool complete_ = false;  // a top-level value closed; waiting for the whitespace after it
  std::size_t limit_ = 64 * 1024 * 1024;
};

// The "type" of a watch event ("ADDED", "ERROR", ...); nullopt when it is not a JSON event object.
std::optional<std::string> watch_event_type(std::string_view event_json);
// The "object" member of a watch event as compact JSON; nullopt when absent.
std::optional<std::string> watch_event_object(std::string_view event_json);

}  // namespace faultline::proxy
