#include "faultline/faults/status.hpp"

namespace faultline::faults {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

void append_unicode_escape(std::string& out, unsigned code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += hex_digits[(code >> shift) & 0xF];
}

// Length of the valid UTF-8 sequence at text[i], 0 if invalid (same rules as Go's utf8 package:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  if (lead < 0xC2 || lead > 0xF4 || i + length > text.size()) return 0;
  unsigned char second = byte(i + 1);
  unsigned char low = 0x80, high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  if (second < low || second > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return length;
}

// Go's encoding/json escape for one ASCII byte, or nullptr to copy it as is.
const char* ascii_escape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return nullptr;
  }
}

void append_field(std::string& out, std::string_view key, std::string_view value) {
  out += ",\"";
  out += key;
  out += "\":";
  out += go_json_string(value);
}

std::string details_json(const StatusDetails& details) {
  std::string out;
  if (!details.name.empty()) append_field(out, "name", details.name);
  if (!details.group.empty()) append_field(out, "group", details.group);
  if (!details.kind.empty()) append_field(out, "kind", details.kind);
  if (details.retry_after_seconds && *details.retry_after_seconds != 0)
    out += ",\"retryAfterSeconds\":" + std::to_string(*details.retry_after_seconds);
  if (!out.empty()) out[0] = '{';  // replace the leading comma
  else out = "{";
  return out + "}";
}

}  // namespace

std::string go_json_string(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (const char* escaped = ascii_escape(c)) out += escaped;
      else if (c < 0x20 || c == '<' || c == '>' || c == '&') append_unicode_escape(out, c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    std::string_view sequence = text.substr(i, length);
    if (sequence == "\xE2\x80\xA8") out += "\\u2028";
    else if (sequence == "\xE2\x80\xA9") out += "\\u2029";
    else out += sequence;
    i += length;
  }
  return out + "\"";
}

std::string_view reason_for_code(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

std::string_view http_reason_phrase(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

// Field order and omitempty rules of metav1.Status / metav1.StatusDetails.
std::string status_json(const Status& status) {
  bool success = status.code >= 200 && status.code < 300;
  std::string out = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":)";
  out += success ? "\"Success\"" : "\"Failure\"";
  if (!status.message.empty()) append_field(out, "message", status.message);
  if (!status.reason.empty()) append_field(out, "reason", status.reason);
  if (status.details) out += ",\"details\":" + details_json(*status.details);
  if (status.code != 0) out += ",\"code\":" + std::to_string(status.code);
  return out + "}\n";  // Go's json.Encoder ends every value with a newline
}

HttpResponse status_response(const Status& status) {
  HttpResponse response;
  response.code = status.code;
  response.headers.push_back({"Cache-Control", "no-cache, private"});
  response.headers.push_back({"Content-Type", "application/json"});
  if (status.details && status.details->retry_after_seconds && *status.details->retry_after_seconds > 0)
    response.headers.push_back({"Retry-After", std::to_string(*status.details->retry_after_seconds)});
  response.body = status_json(status);
  return response;
}

}  // namespace faultline::faults
