#include "faultline/faults/actions/respond.hpp"

#include "actions/parse.hpp"

namespace faultline::faults::actions {
namespace {

// "pods", "deployments.apps", "pods/binding": how kube-apiserver names a resource in messages.
std::string qualified_resource(const RequestInfo& request) {
  std::string out = request.resource;
  if (!request.api_group.empty()) out += "." + request.api_group;
  if (!request.subresource.empty()) out += "/" + request.subresource;
  return out;
}

// Messages in kube-apiserver's wording for the errors it most often returns.
std::string default_message(int code, const RequestInfo& request) {
  std::string what = qualified_resource(request);
  std::string quoted_name = "\"" + request.name + "\"";
  switch (code) {
    case 404:
      return request.name.empty() ? "the server could not find the requested resource"
                                  : what + " " + quoted_name + " not found";
    case 409:
      return "Operation cannot be fulfilled on " + (what.empty() ? "the object" : what) +
             (request.name.empty() ? "" : " " + quoted_name) +
             ": the object has been modified; "
             "please apply your changes to the latest version and try again";
    case 429:
      return "Too many requests, please try again later.";
    case 500:
      return "Internal error occurred: faultline injected an internal error";
    case 503:
      return "the server is currently unable to handle the request";
    case 504:
      return "Timeout: request did not complete within the allotted timeout";
    default:
      return "faultline injected " + std::to_string(code) + " " + std::string(http_reason_phrase(code));
  }
}

// Whole seconds, rounded up, at least 1: Retry-After carries integral seconds.
int retry_after_seconds(Duration retry_after) {
  auto seconds = (retry_after.count() + 999) / 1000;
  return static_cast<int>(seconds < 1 ? 1 : seconds);
}

std::optional<StatusDetails> details_for(const Respond& respond, const RequestInfo& request) {
  std::optional<Duration> retry = respond.retry_after;
  if (!retry && respond.code == 429) retry = std::chrono::seconds(1);
  bool names_object = respond.code == 404 || respond.code == 409 || respond.code == 410;
  if (!retry && !(names_object && request.is_resource_request)) return std::nullopt;
  StatusDetails details;
  if (names_object) {
    details.name = request.name;
    details.group = request.api_group;
    details.kind = request.resource_path();
  }
  if (retry) details.retry_after_seconds = retry_after_seconds(*retry);
  return details;
}

}  // namespace

bool has_body(int code) { return code != 204 && code != 304; }

HttpResponse Respond::render(const RequestInfo& request) const {
  if (!has_body(code)) return HttpResponse{code, {{"Cache-Control", "no-cache, private"}}, ""};
  Status status;
  status.code = code;
  status.reason = reason.empty() ? std::string(reason_for_code(code)) : reason;
  status.message = message.empty() ? default_message(code, request) : message;
  status.details = details_for(*this, request);
  return status_response(status);
}

Respond Respond::parse(detail::MapReader& reader) {
  Respond respond;
  if (auto code = reader.count("code", 0, true)) {
    if (*code >= 100 && *code < 200)
      reader.error_at("code", "must be a final HTTP status code from 200 to 599, got " + std::to_string(*code) +
                                  " (1xx codes are interim responses, never the answer)");
    else if (*code < 200 || *code > 599)
      reader.error_at("code", "must be an HTTP status code from 200 to 599, got " + std::to_string(*code));
    else respond.code = static_cast<int>(*code);
  }
  if (auto reason = reader.string("reason")) respond.reason = *reason;
  if (auto message = reader.string("message")) respond.message = *message;
  if (!actions::has_body(respond.code))
    for (std::string_view key : {"reason", "message"})
      if (reader.has(key))
        reader.error_at(
            key, "a " + std::to_string(respond.code) + " response has no body, so it has no " + std::string(key));
  respond.retry_after = detail::positive_duration(reader, "retryAfter");
  return respond;
}

}  // namespace faultline::faults::actions
