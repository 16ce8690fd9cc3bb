#pragma once
// respond: answer in the apiserver's place with a real `kind: Status` error; nothing is forwarded.

#include <optional>
#include <string>
#include <string_view>

#include "faultline/faults/duration.hpp"
#include "faultline/faults/request.hpp"
#include "faultline/faults/status.hpp"

namespace faultline::faults::actions {

struct Respond {
  static constexpr std::string_view type = "respond";
  int code = 500;
  std::string reason;                 // "" -> reason_for_code(code)
  std::string message;                // "" -> a message in kube-apiserver's wording for the code
  std::optional<Duration> retry_after;  // whole seconds; defaults to 1s for 429

  // The answer for `request`: details name/group/kind come from the request, as apiserver does.
  HttpResponse render(const RequestInfo& request) const;
};

}  // namespace faultline::faults::actions
