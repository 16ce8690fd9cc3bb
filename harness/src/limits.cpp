#include "faultline/harness/limits.hpp"

#include <fmt/format.h>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace faultline::harness {
namespace http = boost::beast::http;

std::string byte_limit_text(std::uint64_t bytes) {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) return fmt::format("{} bytes ({} MiB)", bytes, bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} bytes ({} KiB)", bytes, bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

std::string limit_problem(const boost::system::error_code& ec, const ReadLimits& limits) {
  if (ec == http::error::body_limit) {
    return fmt::format("the response body is over the limit of {}; raise it with {}",
                       byte_limit_text(limits.max_body_bytes), kMaxResponseFlag);
  }
  if (ec == http::error::header_limit) {
    return fmt::format("the response header is over the limit of {} (a fixed limit)",
                       byte_limit_text(limits.max_header_bytes));
  }
  if (ec == http::error::buffer_overflow) {
    return fmt::format("a part of the response that must be read whole (a header or a chunk header) is over {}",
                       byte_limit_text(read_buffer_bound(limits)));
  }
  return {};
}

void throw_if_limit(const boost::system::error_code& ec, const ReadLimits& limits, const std::string& what) {
  if (std::string problem = limit_problem(ec, limits); !problem.empty()) throw LimitError(what + ": " + problem);
}

std::size_t read_buffer_bound(const ReadLimits& limits) { return std::size_t{limits.max_header_bytes} + 64 * 1024; }

}  // namespace faultline::harness
