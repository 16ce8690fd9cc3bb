// junit.xml: one testcase per check. A testcase fails when the check's outcome differs from what
// the scenario expects (so an expected violation in a reproduction is a passing testcase).
#include <sstream>

#include "faultline/harness/report.hpp"
#include "faultline/net/rfc3339.hpp"
#include "markup.hpp"

namespace faultline::harness {
namespace {

using detail::escape_markup;

bool as_expected(const CheckResult& c) {
  if (c.status == CheckStatus::no_data) return false;
  if (c.status == CheckStatus::skipped) return true;
  return c.expected_violated == (c.status == CheckStatus::violated);
}

std::string failure_message(const CheckResult& c) {
  if (c.status == CheckStatus::no_data) return c.summary;
  if (c.expected_violated) return "expected a violation, but the check passed: " + c.summary;
  return "violated (" + std::to_string(c.count) + "): " + c.summary;
}

std::string evidence_text(const CheckResult& c) {
  std::string text;
  for (const auto& e : c.evidence) text += e + "\n";
  return text;
}

}  // namespace

std::string render_junit(const Report& r) {
  int failures = 0;
  int skipped = 0;
  for (const auto& c : r.checks) {
    if (c.status == CheckStatus::skipped) ++skipped;
    else if (!as_expected(c)) ++failures;
  }
  int errors = r.verdict == Verdict::error ? 1 : 0;
  double duration = std::chrono::duration<double>(r.finished - r.started).count();
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"faultline\" tests=\"" << r.checks.size() + static_cast<std::size_t>(errors)
    << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
    << duration << "\">\n";
  x << "  <testsuite name=\"" << escape_markup(r.scenario) << "\" tests=\""
    << r.checks.size() + static_cast<std::size_t>(errors) << "\" failures=\"" << failures << "\" errors=\"" << errors
    << "\" skipped=\"" << skipped << "\" timestamp=\"" << net::format_rfc3339(r.started, 3) << "\" time=\"" << duration
    << "\">\n";
  x << "    <properties>\n";
  x << "      <property name=\"verdict\" value=\"" << to_string(r.verdict) << "\"/>\n";
  x << "      <property name=\"scheduler\" value=\"" << escape_markup(r.scheduler) << "\"/>\n";
  x << "      <property name=\"seed\" value=\"" << r.seed << "\"/>\n";
  x << "      <property name=\"faultline.version\" value=\"" << escape_markup(r.faultline_version) << "\"/>\n";
  x << "      <property name=\"faultline.commit\" value=\"" << escape_markup(r.faultline_commit) << "\"/>\n";
  if (r.faults_ended)
    x << "      <property name=\"faultsEnded\" value=\"" << net::format_rfc3339(*r.faults_ended, 3) << "\"/>\n";
  if (r.settle_started)
    x << "      <property name=\"settleStarted\" value=\"" << net::format_rfc3339(*r.settle_started, 3) << "\"/>\n";
  x << "    </properties>\n";
  if (errors) {
    x << "    <testcase classname=\"faultline." << escape_markup(r.scenario) << "\" name=\"run\">\n";
    x << "      <error message=\"" << escape_markup(r.error) << "\"/>\n";
    x << "    </testcase>\n";
  }
  for (const auto& c : r.checks) {
    x << "    <testcase classname=\"faultline." << escape_markup(r.scenario) << "\" name=\"" << escape_markup(c.name)
      << "\">\n";
    if (c.status == CheckStatus::skipped) {
      x << "      <skipped message=\"" << escape_markup(c.summary) << "\"/>\n";
    } else if (!as_expected(c)) {
      x << "      <failure message=\"" << escape_markup(failure_message(c)) << "\" type=\"" << to_string(c.status)
        << "\">" << escape_markup(evidence_text(c)) << "</failure>\n";
    }
    x << "      <system-out>" << escape_markup(c.summary + "\n" + evidence_text(c)) << "</system-out>\n";
    x << "    </testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace faultline::harness
