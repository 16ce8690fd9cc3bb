#include "faultline/faults/actions/watch_gone.hpp"

#include "actions/parse.hpp"

#include "faultline/faults/status.hpp"

namespace faultline::faults::actions {

// kube-apiserver's watch cache answers a too-old resourceVersion with this ERROR event; client-go's
// reflector sees reason Expired / code 410 and relists.
std::string WatchGone::render_event() const {
  Status status;
  status.code = 410;
  status.reason = "Expired";
  status.message = message.empty() ? "too old resource version: 1 (2)" : message;
  std::string object = status_json(status);
  object.pop_back();  // the Status is nested: drop its trailing newline
  return R"({"type":"ERROR","object":)" + object + "}\n";
}

WatchGone WatchGone::parse(detail::MapReader& reader) {
  WatchGone gone;
  if (auto after = reader.count("afterEvents", 0)) gone.after_events = *after;
  if (auto message = reader.string("message")) gone.message = *message;
  return gone;
}

}  // namespace faultline::faults::actions
