#pragma once
// A small Prometheus registry rendering the text exposition format 0.0.4.
// Families are created once at start-up; the series of a family are looked up by label values
// (shared lock, created on first use) and updated with atomics, so the hot path takes no
// exclusive lock once a series exists. Callers may keep the returned references: series live
// as long as the registry.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::admin::metrics {

class Counter {
 public:
  void inc(std::uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Gauge {
 public:
  void inc(std::int64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  void dec(std::int64_t n = 1) noexcept { value_.fetch_sub(n, std::memory_order_relaxed); }
  void set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  std::int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> value_{0};
};

class Histogram {
 public:
  // `bounds`: finite upper bounds, strictly increasing (checked by the family).
  explicit Histogram(const std::vector<double>& bounds);
  // Counts `v` in the first bucket whose upper bound is >= v (the +Inf bucket otherwise).
  void observe(double v) noexcept;

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
    std::uint64_t count = 0;                // == cumulative.back()
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // per bucket, not cumulative
  std::atomic<double> sum_{0};
};

using Labels = std::vector<std::string>;

enum class Type { counter, gauge, histogram };

// One metric name with HELP/TYPE and its labelled series.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  virtual Type type() const = 0;
  virtual void render(std::string& out) const = 0;

 protected:
  // Throws std::invalid_argument when the number of values differs from the label names.
  void check_arity(const Labels& values) const;
  void render_header(std::string& out) const;
  // `{a="x",b="y"}` with values escaped; `extra` is appended as one more pre-rendered pair.
  std::string label_set(const Labels& values, std::string_view extra = {}) const;

 private:
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
};

template <typename Series>
class Family : public FamilyBase {
 public:
  using FamilyBase::FamilyBase;
  // The series for these label values (in label-name order), created on first use.
  Series& with(const Labels& values);
  // The only series of a family without labels.
  Series& get() { return with({}); }

 protected:
  virtual std::unique_ptr<Series> make_series() const = 0;
  mutable std::shared_mutex mutex_;
  std::map<Labels, std::unique_ptr<Series>> series_;
};

class CounterFamily final : public Family<Counter> {
 public:
  using Family::Family;
  Type type() const override { return Type::counter; }
  void render(std::string& out) const override;

 private:
  std::unique_ptr<Counter> make_series() const override { return std::make_unique<Counter>(); }
};

class GaugeFamily final : public Family<Gauge> {
 public:
  using Family::Family;
  Type type() const override { return Type::gauge; }
  void render(std::string& out) const override;

 private:
  std::unique_ptr<Gauge> make_series() const override { return std::make_unique<Gauge>(); }
};

class HistogramFamily final : public Family<Histogram> {
 public:
  // Throws std::invalid_argument unless `bounds` is non-empty, finite and strictly increasing.
  HistogramFamily(std::string name, std::string help, std::vector<std::string> label_names, std::vector<double> bounds);
  Type type() const override { return Type::histogram; }
  void render(std::string& out) const override;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::unique_ptr<Histogram> make_series() const override;
  std::vector<double> bounds_;
};

class Registry {
 public:
  // Each throws std::invalid_argument for an invalid or already registered metric name, an
  // invalid/duplicate/reserved label name ("le" on histograms, "__" prefixes).
  CounterFamily& counter(std::string name, std::string help, std::vector<std::string> labels = {});
  GaugeFamily& gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  HistogramFamily& histogram(std::string name, std::string help, std::vector<double> bounds,
                             std::vector<std::string> labels = {});

  // Every family in registration order, series sorted by label values.
  std::string render() const;

 private:
  template <typename F, typename... Args>
  F& add(Args&&... args);

  mutable std::shared_mutex mutex_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

// Text-format helpers (exposed for tests and for anyone rendering by hand).
std::string escape_label_value(std::string_view v);  // \\, \", \n
std::string escape_help(std::string_view v);         // \\, \n
std::string format_value(double v);                  // shortest round-trip, +Inf, -Inf, NaN
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// ---- template definitions ----------------------------------------------------------------------

template <typename Series>
Series& Family<Series>::with(const Labels& values) {
  check_arity(values);
  {
    std::shared_lock lock(mutex_);
    if (auto it = series_.find(values); it != series_.end()) return *it->second;
  }
  std::unique_lock lock(mutex_);
  auto [it, inserted] = series_.try_emplace(values);
  if (inserted) it->second = make_series();
  return *it->second;
}

}  // namespace faultline::admin::metrics
