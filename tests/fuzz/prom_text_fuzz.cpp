// The Prometheus text format parser (harness/prom_text) the harness reads a system's /metrics with.
// Input: a first line of space-separated metric names to keep, then the body. The parser must keep
// only those names, at most its limit, count every sample line it read, and what it kept must read
// back the same when written out again in the format (sample_key, format_sample_value).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "faultline/harness/prom_text.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace faultline;
using fuzz::check;

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = input.find('\n');
  const std::string_view names = input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  std::set<std::string, std::less<>> wanted;
  for (std::size_t start = 0; start <= names.size();) {
    const std::size_t end = std::min(names.find(' ', start), names.size());
    if (end > start) wanted.emplace(names.substr(start, end - start));
    start = end + 1;
  }
  constexpr std::size_t kLimit = 8;
  const harness::PromText got = harness::parse_prom_text(body, wanted, kLimit);
  check(got.samples.size() <= kLimit, "more samples kept than the limit");
  check(got.seen >= got.samples.size() + got.dropped, "kept and dropped samples beyond the ones seen");
  check((got.malformed == 0) == got.first_malformed.empty(), "malformed count and first_malformed disagree");
  check(got.dropped == 0 || got.samples.size() == kLimit, "samples dropped below the limit");

  std::string written;
  for (const auto& s : got.samples) {
    check(wanted.contains(s.name), "kept a sample of a name not asked for");
    written += harness::sample_key(s) + " " + harness::format_sample_value(s.value) + "\n";
  }
  const harness::PromText again = harness::parse_prom_text(written, wanted, kLimit);
  check(again.malformed == 0, "a kept sample written out does not parse: " + again.first_malformed);
  check(again.samples.size() == got.samples.size(), "a kept sample written out reads back as another count");
  for (std::size_t i = 0; i < got.samples.size(); ++i) {
    check(again.samples[i].name == got.samples[i].name, "name changed in the round trip");
    check(again.samples[i].labels == got.samples[i].labels, "labels changed in the round trip");
    check(same_value(again.samples[i].value, got.samples[i].value), "value changed in the round trip");
  }
  return 0;
}
