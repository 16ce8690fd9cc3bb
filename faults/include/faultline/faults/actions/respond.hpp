#pragma once
// respond: answer in the apiserver's place with a real `kind: Status` error; nothing is forwarded.

#include <optional>
#include <string>
#include <string_view>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/status.hpp"

#include "faultline/faults/actions/reader.hpp"

namespace faultline::faults::actions {

struct Respond {
  static constexpr std::string_view type = "respond";
  static Respond parse(detail::MapReader& reader);
  int code = 500;                       // a final status, 200..599 (1xx are interim, rejected at load)
  std::string reason;                   // "" -> reason_for_code(code)
  std::string message;                  // "" -> a message in kube-apiserver's wording for the code
  std::optional<Duration> retry_after;  // whole seconds; defaults to 1s for 429

  // The answer for `request`: details name/group/kind come from the request, as apiserver does.
  // 204 and 304 have no body (HTTP forbids one), so they carry no Status and no Content-Type.
  HttpResponse render(const RequestInfo& request) const;
};

// False for the codes whose responses never have a body: 204 No Content, 304 Not Modified.
bool has_body(int code);

}  // namespace faultline::faults::actions
