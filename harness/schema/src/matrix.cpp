#include "faultline/harness/schema/matrix.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "faultline/faults/file.hpp"
#include "faultline/faults/yaml_load.hpp"
#include "faultline/harness/schema/yaml_edit.hpp"

namespace faultline::harness::schema {
namespace {

using namespace faults;
namespace detail = faults::detail;

namespace fs = std::filesystem;

constexpr std::string_view kClusterPrefix = "cluster.";

struct AxisValue {
  std::string text;     // as it is written into the scenario
  std::string display;  // the value itself
  YAML::Mark mark;
};

struct Axis {
  std::string key;  // as written in the matrix
  YAML::Mark mark;
  std::vector<std::string> paths;
  std::vector<AxisValue> values;
};

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::optional<std::uint64_t> whole_number(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "A..B" -> [A, B]
std::optional<std::pair<std::uint64_t, std::uint64_t>> range(std::string_view text) {
  auto dots = text.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  auto a = whole_number(text.substr(0, dots));
  auto b = whole_number(text.substr(dots + 2));
  if (!a || !b) return std::nullopt;
  return std::pair{*a, *b};
}

bool is_cluster_key(std::string_view key) {
  return std::any_of(std::begin(cluster_setting_keys), std::end(cluster_setting_keys),
                     [&](const char* k) { return key == k; });
}

// Sets one cluster setting from its text; an error message when the value does not fit the key.
std::optional<std::string> set_cluster(ClusterSettings& c, std::string_view key, std::string_view value) {
  if (key == "exemptScheduler") {
    if (value != "true" && value != "false") return "expected true or false, got \"" + std::string(value) + "\"";
    c.exempt_scheduler = value == "true";
    return std::nullopt;
  }
  auto n = whole_number(value);
  if (!n || *n == 0) return "expected a whole number greater than 0, got \"" + std::string(value) + "\"";
  (key == "maxRequestsInflight" ? c.max_requests_inflight : c.max_mutating_requests_inflight) = *n;
  return std::nullopt;
}

std::vector<std::string_view> cluster_keys() {
  return {std::begin(cluster_setting_keys), std::end(cluster_setting_keys)};
}

ClusterSettings parse_cluster(detail::MapReader& reader) {
  ClusterSettings c;
  for (const char* key : cluster_setting_keys) {
    auto value = reader.string(key);
    if (!value) continue;
    if (auto problem = set_cluster(c, key, *value)) reader.error_at(key, *problem);
  }
  return c;
}

std::string shipped_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// The base scenario's file: relative to the matrix's directory, else a shipped name.
std::optional<fs::path> resolve_scenario(const std::string& name, const fs::path& base_dir, const fs::path& shipped,
                                         std::string& problem) {
  std::error_code ec;
  fs::path relative = base_dir / name;
  if (fs::exists(relative, ec)) return relative;
  if (!shipped.empty() && name.find('/') == std::string::npos) {
    fs::path candidate = shipped / (name + ".yaml");
    if (fs::exists(candidate, ec)) return candidate;
  }
  problem = "no scenario \"" + name + "\": not a file relative to " + (base_dir.empty() ? "." : base_dir.string()) +
            (shipped.empty() ? std::string() : ", and not a shipped scenario (" + shipped_names(shipped) + ")");
  return std::nullopt;
}

std::string first_error(const ScenarioError& e) { return e.errors().empty() ? e.what() : e.errors().front(); }

class Loader {
 public:
  Loader(std::string_view text, std::string source, fs::path base_dir, fs::path shipped)
      : text_(text), errors_(source), base_dir_(std::move(base_dir)), shipped_(std::move(shipped)) {
    matrix_.source = std::move(source);
  }

  Matrix load() {
    detail::read_document(text_, errors_, [this](const YAML::Node& document) { parse(document); });
    return std::move(matrix_);
  }

 private:
  void parse(const YAML::Node& document) {
    detail::MapReader root(document, "", errors_);
    if (!root.valid()) return;
    detail::check_header(root, "Matrix");
    if (YAML::Node metadata = root.take("metadata"); metadata.IsDefined()) {
      detail::MapReader reader(metadata, "metadata", errors_);
      if (auto name = reader.string("name", true)) matrix_.name = *name;
      if (auto description = reader.string("description")) matrix_.description = *description;
      reader.finish();
    } else {
      root.missing("metadata");
    }
    if (auto scheduler = root.choice("scheduler", {"yunikorn", "kube-scheduler"}, true)) matrix_.scheduler = *scheduler;
    if (auto yunikorn = root.string("yunikorn")) {
      if (matrix_.scheduler == "kube-scheduler")
        root.error_at("yunikorn", "a YuniKorn build needs scheduler: yunikorn");
      matrix_.yunikorn = *yunikorn;
    }
    if (auto runs = root.count("runs", 1)) {
      if (*runs > max_matrix_runs)
        root.error_at("runs",
                      "at most " + std::to_string(max_matrix_runs) + " runs per cell, got " + std::to_string(*runs));
      else matrix_.runs = *runs;
    }
    if (YAML::Node cluster = root.take("cluster"); cluster.IsDefined()) {
      detail::MapReader reader(cluster, "cluster", errors_);
      if (reader.valid()) cluster_ = parse_cluster(reader);
      reader.finish();
    }
    load_base(root);
    parse_axes(root.take("axes"));
    root.finish();
    if (errors_.empty()) expand();
  }

  // The base scenario with `nodes` and `pods` applied.
  void load_base(detail::MapReader& root) {
    auto name = root.string("scenario", true);
    auto nodes = root.count("nodes", 1);
    auto pods = root.count("pods", 1);
    YAML::Node set = root.take("set");
    if (!name) return;
    bool ok = true;
    std::string problem;
    auto file = resolve_scenario(*name, base_dir_, shipped_, problem);
    if (!file) {
      root.error_at("scenario", problem);
      return;
    }
    matrix_.scenario_file = *file;
    try {
      base_text_ = read_scenario_file(*file);
      load_scenario_text(base_text_, file->string());
    } catch (const ScenarioError& e) {
      for (const auto& error : e.errors()) root.error_at("scenario", "the base scenario is invalid: " + error);
      return;
    }
    auto apply = [&](std::string_view key, const std::optional<std::uint64_t>& value, std::string_view path) {
      if (!value) return;
      Edit edit = edit_base(path, std::to_string(*value), *file);
      if (edit.problem.empty()) {
        base_text_ = std::move(edit.text);
      } else {
        root.error_at(key, edit.bad_path ? "cannot set " + std::string(path) + " of the scenario: " + edit.problem
                                         : edit.problem);
        ok = false;
      }
    };
    apply("nodes", nodes, "workload.nodes.count");
    apply("pods", pods, "workload.phases[0].pods");
    if (ok) ok = apply_set(set, *file);
    base_ok_ = ok;
  }

  // `set`: values written into the base scenario for every cell (the sweep's constants, such as a
  // shorter checks.settle). A path an axis varies, or a cluster setting (use `cluster:`), is an error.
  bool apply_set(const YAML::Node& node, const fs::path& file) {
    if (!node.IsDefined()) return true;
    if (!node.IsMap()) {
      errors_.add(node.Mark(), "set", "expected a mapping of paths to values, got " + detail::describe(node));
      return false;
    }
    if (node.size() > max_matrix_set_paths) {
      errors_.add(node.Mark(), "set",
                  std::to_string(node.size()) + " paths; the maximum is " + std::to_string(max_matrix_set_paths));
      return false;
    }
    bool ok = true;
    for (auto entry : node) {
      if (!entry.first.IsScalar()) {
        errors_.add(entry.first.Mark(), "set", "a value is named by its path, got " + detail::describe(entry.first));
        ok = false;
        continue;
      }
      const std::string path = trim(entry.first.Scalar());
      const std::string where = "set." + path;
      if (path.starts_with(kClusterPrefix)) {
        errors_.add(entry.first.Mark(), where, "cluster settings go under cluster:, not set:");
        ok = false;
        continue;
      }
      const auto text = one_line_value(entry.second, where);
      if (!text) {
        ok = false;
        continue;
      }
      Edit edit = edit_base(path, std::string(*text), file);
      if (edit.problem.empty()) {
        base_text_ = std::move(edit.text);
        set_paths_.insert(path);
      } else {
        errors_.add(edit.bad_path ? entry.first.Mark() : entry.second.Mark(), where, edit.problem);
        ok = false;
      }
    }
    return ok;
  }

  // The base scenario with VALUE written at PATH, checked by the scenario loader. `problem` is empty
  // when it loads; else it says what is wrong, and `bad_path` whether the path does not fit the
  // scenario (as opposed to the value making it invalid).
  struct Edit {
    std::string text;
    std::string problem;
    bool bad_path = false;
  };
  Edit edit_base(std::string_view path, const std::string& value, const fs::path& file) const {
    Edit edit;
    try {
      edit.text = with_value_at(base_text_, path, value);
    } catch (const YamlEditError& e) {
      edit.problem = e.what();
      edit.bad_path = true;
      return edit;
    }
    if (auto problem = scenario_problem(edit.text, file)) edit.problem = *problem;
    return edit;
  }

  // What the scenario loader finds wrong with TEXT (its first error), if anything.
  static std::optional<std::string> scenario_problem(const std::string& text, const fs::path& file) {
    try {
      load_scenario_text(text, file.string());
    } catch (const ScenarioError& e) {
      return "with this value the scenario is invalid: " + first_error(e);
    }
    return std::nullopt;
  }

  // The source text of a scalar written on one line (an axis value or a `set` value), or nullopt
  // with the error recorded at its position.
  std::optional<std::string_view> one_line_value(const YAML::Node& item, const std::string& where) {
    if (!item.IsScalar()) {
      errors_.add(item.Mark(), where, "expected a single value, got " + detail::describe(item));
      return std::nullopt;
    }
    const auto text = scalar_source(text_, static_cast<std::size_t>(item.Mark().pos), item.Scalar());
    if (text.empty()) {
      errors_.add(item.Mark(), where, "write the value on one line");
      return std::nullopt;
    }
    return text;
  }

  void parse_axes(const YAML::Node& node) {
    if (!node.IsDefined()) return;
    if (!node.IsMap()) {
      errors_.add(node.Mark(), "axes", "expected a mapping of paths to values, got " + detail::describe(node));
      return;
    }
    if (node.size() > max_matrix_axes) {
      errors_.add(node.Mark(), "axes",
                  std::to_string(node.size()) + " axes; the maximum is " + std::to_string(max_matrix_axes));
      return;
    }
    axes_mark_ = node.Mark();
    std::set<std::string> seen_paths;
    for (auto entry : node) {
      Axis axis;
      axis.mark = entry.first.Mark();
      if (!entry.first.IsScalar()) {
        errors_.add(axis.mark, "axes", "an axis is named by its path, got " + detail::describe(entry.first));
        continue;
      }
      axis.key = entry.first.Scalar();
      const std::string where = "axes." + axis.key;
      bool ok = true;
      std::size_t start = 0;
      while (start <= axis.key.size()) {
        std::size_t comma = axis.key.find(',', start);
        if (comma == std::string::npos) comma = axis.key.size();
        std::string path = trim(std::string_view(axis.key).substr(start, comma - start));
        start = comma + 1;
        if (path.empty()) {
          errors_.add(axis.mark, where, "an empty path");
          ok = false;
        } else if (!seen_paths.insert(path).second) {
          errors_.add(axis.mark, where, "path " + path + " is already set by another axis");
          ok = false;
        } else if (set_paths_.contains(path)) {
          errors_.add(axis.mark, where, "path " + path + " is also under set: (a constant of every cell)");
          ok = false;
        } else if (path.starts_with(kClusterPrefix) && !is_cluster_key(path.substr(kClusterPrefix.size()))) {
          errors_.add(axis.mark, where,
                      "unknown cluster setting \"" + path.substr(kClusterPrefix.size()) +
                          "\" (known: " + detail::join(cluster_keys()) + ")");
          ok = false;
        }
        axis.paths.push_back(path);
      }
      if (ok) ok = read_values(entry.second, where, axis);
      if (ok && base_ok_) ok = check_values(where, axis);
      if (ok) axes_.push_back(std::move(axis));
    }
    if (!errors_.empty()) return;
    std::size_t cells = 1;
    for (const auto& axis : axes_) {
      cells *= axis.values.size();  // each axis holds at most max_matrix_cells values: no overflow below
      if (cells > max_matrix_cells) {
        errors_.add(axes_mark_, "axes",
                    "more than " + std::to_string(max_matrix_cells) + " cells (" + describe_sizes() +
                        "); the maximum is " + std::to_string(max_matrix_cells));
        return;
      }
    }
    if (cells * matrix_.runs > max_matrix_total_runs)
      errors_.add(axes_mark_, "axes",
                  std::to_string(cells) + " cells x " + std::to_string(matrix_.runs) +
                      " runs = " + std::to_string(cells * matrix_.runs) + " runs; the maximum is " +
                      std::to_string(max_matrix_total_runs));
  }

  std::string describe_sizes() const {
    std::string out;
    for (const auto& axis : axes_) out += (out.empty() ? "" : " x ") + std::to_string(axis.values.size());
    return out;
  }

  // A list of single values, or a range A..B.
  bool read_values(const YAML::Node& node, const std::string& where, Axis& axis) {
    if (node.IsScalar()) {
      auto r = range(node.Scalar());
      if (!r) {
        errors_.add(node.Mark(), where,
                    "expected a list of values or a range A..B of whole numbers, got " + detail::describe(node));
        return false;
      }
      if (r->second < r->first) {
        errors_.add(node.Mark(), where, "the range " + node.Scalar() + " is empty (write A..B with A <= B)");
        return false;
      }
      if (r->second - r->first >= max_matrix_cells) {
        errors_.add(node.Mark(), where,
                    "the range " + node.Scalar() + " has " + std::to_string(r->second - r->first) +
                        " + 1 values; the maximum is " + std::to_string(max_matrix_cells));
        return false;
      }
      for (std::uint64_t v = r->first;; ++v) {
        axis.values.push_back({std::to_string(v), std::to_string(v), node.Mark()});
        if (v == r->second) break;
      }
      return true;
    }
    if (!node.IsSequence()) {
      errors_.add(node.Mark(), where,
                  "expected a list of values or a range A..B of whole numbers, got " + detail::describe(node));
      return false;
    }
    if (node.size() == 0) {
      errors_.add(node.Mark(), where, "the axis has no values");
      return false;
    }
    if (node.size() > max_matrix_cells) {
      errors_.add(node.Mark(), where,
                  std::to_string(node.size()) + " values; the maximum is " + std::to_string(max_matrix_cells));
      return false;
    }
    bool ok = true;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < node.size(); ++i) {
      const YAML::Node item = node[i];
      const std::string item_path = where + "[" + std::to_string(i) + "]";
      const auto text = one_line_value(item, item_path);
      if (!text) {
        ok = false;
        continue;
      }
      if (!seen.insert(item.Scalar()).second) {
        errors_.add(item.Mark(), item_path, "duplicate value \"" + item.Scalar() + "\"");
        ok = false;
        continue;
      }
      axis.values.push_back({std::string(*text), item.Scalar(), item.Mark()});
    }
    return ok;
  }

  // Every value alone, on the base: the paths exist and the scenario loader accepts it.
  bool check_values(const std::string& where, const Axis& axis) {
    bool ok = true;
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      const AxisValue& value = axis.values[i];
      const std::string item_path = where + "[" + std::to_string(i) + "]";
      std::string text = base_text_;
      ClusterSettings cluster;
      std::optional<std::string> problem;
      try {
        problem = apply(axis, value, text, cluster);
      } catch (const YamlEditError& e) {
        // The path itself is wrong: once, at the axis.
        errors_.add(axis.mark, where, e.what());
        return false;
      }
      if (!problem) problem = scenario_problem(text, matrix_.scenario_file);
      if (problem) {
        errors_.add(value.mark, item_path, *problem);
        ok = false;
      }
    }
    return ok;
  }

  // Writes one axis value into `text` or `cluster`; a problem with the value, or throws YamlEditError.
  static std::optional<std::string> apply(const Axis& axis, const AxisValue& value, std::string& text,
                                          ClusterSettings& cluster) {
    for (const auto& path : axis.paths) {
      if (path.starts_with(kClusterPrefix)) {
        if (auto problem = set_cluster(cluster, path.substr(kClusterPrefix.size()), value.display)) return problem;
      } else {
        text = with_value_at(text, path, value.text);
      }
    }
    return std::nullopt;
  }

  void expand() {
    for (const auto& axis : axes_) matrix_.axes.push_back({axis.paths, {}});
    for (std::size_t a = 0; a < axes_.size(); ++a)
      for (const auto& v : axes_[a].values) matrix_.axes[a].values.push_back(v.display);
    std::vector<std::size_t> at(axes_.size(), 0);
    for (std::size_t n = 1;; ++n) {
      MatrixCell cell;
      char id[16];
      std::snprintf(id, sizeof id, "c%03zu", n);
      cell.id = id;
      cell.scenario_text = base_text_;
      cell.cluster = cluster_;
      std::string label;
      try {
        for (std::size_t a = 0; a < axes_.size(); ++a) {
          const AxisValue& value = axes_[a].values[at[a]];
          apply(axes_[a], value, cell.scenario_text, cell.cluster);
          cell.values.emplace_back(axes_[a].key, value.display);
          label += (label.empty() ? "" : ", ") + axes_[a].key + "=" + value.display;
        }
        cell.scenario = load_scenario_text(cell.scenario_text, matrix_.scenario_file.string());
        cell.expected_verdict = cell.scenario->checks.expect.empty() ? "pass" : "reproduced";
        matrix_.cells.push_back(std::move(cell));
      } catch (const YamlEditError& e) {
        errors_.add(axes_mark_, "axes", "cell " + cell.id + " (" + label + "): " + e.what());
      } catch (const ScenarioError& e) {
        errors_.add(
            axes_mark_, "axes",
            "cell " + cell.id + " (" + label + "): with these values the scenario is invalid: " + first_error(e));
      }
      // Next combination, the last axis fastest.
      std::size_t a = axes_.size();
      while (a > 0) {
        --a;
        if (++at[a] < axes_[a].values.size()) break;
        at[a] = 0;
        if (a == 0) return;
      }
      if (axes_.empty()) return;
    }
  }

  std::string_view text_;
  detail::Errors errors_;
  fs::path base_dir_;
  fs::path shipped_;
  Matrix matrix_;
  ClusterSettings cluster_;
  std::string base_text_;
  bool base_ok_ = false;
  std::set<std::string> set_paths_;  // the paths under `set:`
  YAML::Mark axes_mark_ = YAML::Mark::null_mark();
  std::vector<Axis> axes_;
};

}  // namespace

Matrix load_matrix_text(std::string_view text, std::string_view source_name, const fs::path& base_dir,
                        const fs::path& shipped_scenarios) {
  Matrix m = Loader(text, std::string(source_name), base_dir, shipped_scenarios).load();
  return m;
}

Matrix load_matrix_file(const fs::path& path, const fs::path& shipped_scenarios) {
  std::string text;
  try {
    text = read_regular_file(path, max_scenario_bytes, "a matrix");
  } catch (const FileError& e) {
    throw ScenarioError({e.what()});
  }
  return load_matrix_text(text, path.string(), path.parent_path(), shipped_scenarios);
}

}  // namespace faultline::harness::schema
