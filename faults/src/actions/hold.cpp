#include "faultline/faults/actions/hold.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {

std::string_view to_string(Hold::Then then) {
  switch (then) {
    case Hold::Then::forward:
      return "forward";
    case Hold::Then::reset:
      return "reset";
    case Hold::Then::respond:
      return "respond";
  }
  return "forward";
}

Hold Hold::parse(detail::MapReader& reader) {
  Hold hold;
  hold.count = reader.bounded_count("count", 1, kMaxCount, "requests");
  hold.duration = reader.bounded_duration("duration", kMaxDuration);
  if (!reader.has("count") && !reader.has("duration"))
    reader.errors().add(reader.node().Mark(), reader.path(),
                        "a hold needs count (release when that many are held), duration (release when the first "
                        "has waited that long), or both");
  if (auto then = reader.choice("then", {"forward", "reset", "respond"}))
    hold.then = *then == "reset" ? Then::reset : *then == "respond" ? Then::respond : Then::forward;
  for (std::string_view key : {"code", "message"})
    if (reader.has(key) && hold.then != Then::respond)
      reader.error_at(key, "only a hold with then: respond answers, so only it has " + std::string(key));
  if (auto code = reader.count("code", 0)) {
    if (*code < 200 || *code > 599 || !has_body(static_cast<int>(*code)))
      reader.error_at("code", "must be an HTTP status code from 200 to 599 with a body (not 204 or 304), got " +
                                  std::to_string(*code));
    else hold.respond.code = static_cast<int>(*code);
  }
  if (auto message = reader.string("message")) hold.respond.message = *message;
  return hold;
}

}  // namespace faultline::faults::actions
