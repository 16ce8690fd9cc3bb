#pragma once
// Bounds on what the harness reads from the servers it talks to (kube-apiserver, the proxy's admin
// API, YuniKorn's REST API) and on what it keeps from them. A faulty or hostile server, or a fault
// gone wrong, cannot make the harness grow without bound: past a limit the call fails with a
// LimitError naming the URL, the limit and how to raise it; nothing is truncated silently.
// docs/limits.md.
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace faultline::harness {

struct ReadLimits {
  // One response body; the pages of one list count together, as one answer. 128 MiB: YuniKorn's
  // fullstatedump, the largest answer of a run, measured 5.0 MB at 1,050 pods on 100 nodes (about
  // 50 MB at 10,000 pods); a list or a delete-collection of 10,000 pods is of the same order.
  // faultline-harness --max-response-mib.
  std::uint64_t max_body_bytes = std::uint64_t{128} * 1024 * 1024;
  // One response header (status line and fields). Real ones are under 2 KiB.
  std::uint32_t max_header_bytes = 64 * 1024;
  // One watch event, i.e. one line of a watch stream: one object, and etcd refuses objects over
  // 1.5 MiB (its default request limit).
  std::size_t max_watch_line_bytes = std::size_t{16} * 1024 * 1024;
  // Records of the proxy's audit log kept for the checks over a whole run (about 6 per pod
  // measured at 1,050 pods, about 460 bytes each as JSON). faultline-harness --max-audit-records.
  std::uint64_t max_audit_records = 1'000'000;
};

inline constexpr const char* kMaxResponseFlag = "--max-response-mib";
inline constexpr const char* kMaxAuditRecordsFlag = "--max-audit-records";

// A read went past one of the ReadLimits. Not retried: the same server sends the same answer again.
struct LimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "N bytes (M MiB)" or "N bytes (M KiB)".
std::string byte_limit_text(std::uint64_t bytes);

// The problem, when a read failed with `ec` because of one of the limits (Beast's body_limit,
// header_limit, or the read buffer's bound); empty for any other error.
std::string limit_problem(const boost::system::error_code& ec, const ReadLimits& limits);

// Throws LimitError("<what>: <problem>") when `ec` is a limit.
void throw_if_limit(const boost::system::error_code& ec, const ReadLimits& limits, const std::string& what);

// What a read buffer may hold beyond what the parser has consumed: one header, or one chunk
// header line, plus one read.
std::size_t read_buffer_bound(const ReadLimits& limits);

}  // namespace faultline::harness
