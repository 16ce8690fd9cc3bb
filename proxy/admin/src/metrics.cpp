#include "faultline/admin/metrics.hpp"

#include "faultline/audit/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <set>
#include <stdexcept>

namespace faultline::admin::metrics {

namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void check_bounds(const std::vector<double>& bounds) {
  if (bounds.empty()) throw std::invalid_argument("histogram needs at least one bucket bound");
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      throw std::invalid_argument("histogram bucket bounds must be finite (+Inf is implicit)");
    }
    if (i > 0 && bounds[i] <= bounds[i - 1]) {
      throw std::invalid_argument("histogram bucket bounds must be strictly increasing");
    }
  }
}

}  // namespace

// ---- text helpers -------------------------------------------------------------------------------

namespace {

// The text format escapes backslash and newline everywhere, and the double quote in label values.
std::string escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string escape_label_value(std::string_view raw) {
  // The text format is UTF-8, and label values can come from clients (e.g. a resource name).
  return escape(audit::to_valid_utf8(raw), true);
}

std::string escape_help(std::string_view v) { return escape(v, false); }

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

bool valid_metric_name(std::string_view name) {
  if (name.empty() || !(name_start(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return name_char(c) || c == ':'; });
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || !name_start(name[0]) || name.starts_with("__")) return false;
  return std::all_of(name.begin(), name.end(), name_char);
}

// ---- Histogram ----------------------------------------------------------------------------------

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<std::uint64_t>[bounds.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) noexcept {
  // Bucket i counts bounds[i-1] < v <= bounds[i]; NaN is counted in +Inf (as Prometheus' Go
  // client does) rather than in the first bucket, where lower_bound would put it.
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  const auto index = std::isnan(v) ? bounds_.size() : static_cast<std::size_t>(it - bounds_.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  // Count is derived from the buckets so _count always equals the +Inf bucket in one scrape.
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

// ---- families -----------------------------------------------------------------------------------

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {
  if (!valid_metric_name(name_)) throw std::invalid_argument("invalid metric name \"" + name_ + "\"");
  std::set<std::string_view> seen;
  for (const auto& l : label_names_) {
    if (!valid_label_name(l)) {
      throw std::invalid_argument("metric " + name_ + ": invalid label name \"" + l + "\"");
    }
    if (!seen.insert(l).second) {
      throw std::invalid_argument("metric " + name_ + ": duplicate label name \"" + l + "\"");
    }
  }
}

void FamilyBase::check_arity(const Labels& values) const {
  if (values.size() != label_names_.size()) {
    throw std::invalid_argument("metric " + name_ + ": expected " + std::to_string(label_names_.size()) +
                                " label values, got " + std::to_string(values.size()));
  }
}

void FamilyBase::render_header(std::string& out) const {
  static constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};
  out += "# HELP ";
  out += name_;
  out += ' ';
  out += escape_help(help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += kTypeNames[static_cast<int>(type())];
  out += '\n';
}

std::string FamilyBase::label_set(const Labels& values, std::string_view extra) const {
  if (values.empty() && extra.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  if (!extra.empty()) {
    if (!values.empty()) out += ',';
    out += extra;
  }
  out += '}';
  return out;
}

void CounterFamily::render(std::string& out) const {
  render_header(out);
  std::shared_lock lock(mutex_);
  for (const auto& [labels, counter] : series_) {
    out += name();
    out += label_set(labels);
    out += ' ';
    append_uint(out, counter->value());
    out += '\n';
  }
}

void GaugeFamily::render(std::string& out) const {
  render_header(out);
  std::shared_lock lock(mutex_);
  for (const auto& [labels, gauge] : series_) {
    out += name();
    out += label_set(labels);
    out += ' ';
    append_int(out, gauge->value());
    out += '\n';
  }
}

HistogramFamily::HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names,
                                 std::vector<double> bounds)
    : Family(std::move(name), std::move(help), std::move(label_names)), bounds_(std::move(bounds)) {
  check_bounds(bounds_);
  for (const auto& l : this->label_names()) {
    if (l == "le") throw std::invalid_argument("metric " + this->name() + ": label \"le\" is reserved");
  }
}

std::unique_ptr<Histogram> HistogramFamily::make_series() const { return std::make_unique<Histogram>(bounds_); }

void HistogramFamily::render(std::string& out) const {
  render_header(out);
  std::shared_lock lock(mutex_);
  for (const auto& [labels, histogram] : series_) {
    const Histogram::Snapshot s = histogram->snapshot();
    for (std::size_t i = 0; i < s.cumulative.size(); ++i) {
      const std::string le = i < bounds_.size() ? format_value(bounds_[i]) : "+Inf";
      out += name();
      out += "_bucket";
      out += label_set(labels, "le=\"" + le + "\"");
      out += ' ';
      append_uint(out, s.cumulative[i]);
      out += '\n';
    }
    out += name();
    out += "_sum";
    out += label_set(labels);
    out += ' ';
    out += format_value(s.sum);
    out += '\n';
    out += name();
    out += "_count";
    out += label_set(labels);
    out += ' ';
    append_uint(out, s.count);
    out += '\n';
  }
}

// ---- Registry -----------------------------------------------------------------------------------

template <typename F, typename... Args>
F& Registry::add(Args&&... args) {
  auto family = std::make_unique<F>(std::forward<Args>(args)...);
  F& ref = *family;
  std::unique_lock lock(mutex_);
  for (const auto& f : families_) {
    if (f->name() == ref.name()) {
      throw std::invalid_argument("metric " + ref.name() + " is already registered");
    }
  }
  families_.push_back(std::move(family));
  return ref;
}

CounterFamily& Registry::counter(std::string name, std::string help, std::vector<std::string> labels) {
  return add<CounterFamily>(std::move(name), std::move(help), std::move(labels));
}

GaugeFamily& Registry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
  return add<GaugeFamily>(std::move(name), std::move(help), std::move(labels));
}

HistogramFamily& Registry::histogram(std::string name, std::string help, std::vector<double> bounds,
                                     std::vector<std::string> labels) {
  return add<HistogramFamily>(std::move(name), std::move(help), std::move(labels), std::move(bounds));
}

std::string Registry::render() const {
  std::string out;
  std::shared_lock lock(mutex_);
  for (const auto& f : families_) f->render(out);
  return out;
}

}  // namespace faultline::admin::metrics
