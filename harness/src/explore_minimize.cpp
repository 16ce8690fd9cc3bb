#include "faultline/harness/explore_minimize.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "faultline/faults/duration.hpp"
#include "faultline/harness/report_read.hpp"
#include "faultline/harness/schema/scenario.hpp"
#include "faultline/harness/schema/yaml_edit.hpp"

namespace faultline::harness::explore {
namespace json = boost::json;

namespace {

constexpr std::string_view kFaults = "faults";
constexpr std::string_view kComponentFaults = "componentFaults";
constexpr std::size_t max_state_bytes = 64 * 1024 * 1024;
constexpr std::size_t max_skipped = 100;  // candidates the loader refused, kept for the report

std::shared_ptr<const schema::Scenario> try_load(const std::string& text, std::string* why = nullptr) {
  try {
    return schema::load_scenario_text(text, "candidate");
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

// ---- the YAML text, line by line ----------------------------------------------------------------

struct Lines {
  std::vector<std::string_view> lines;
  explicit Lines(std::string_view text) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }
  std::size_t indent(std::size_t i) const {
    auto p = lines[i].find_first_not_of(" \t\r");
    return p == std::string_view::npos ? std::string_view::npos : p;
  }
  bool content(std::size_t i) const {
    auto p = indent(i);
    return p != std::string_view::npos && lines[i][p] != '#';
  }
  bool comment(std::size_t i) const {
    auto p = indent(i);
    return p != std::string_view::npos && lines[i][p] == '#';
  }
};

// Line ranges [first, end) of each item of the block sequence `list` at the top of `text`, with the
// comment lines directly above an item; nullopt when the list is not a block sequence whose items
// each start on a line of their own with "- ".
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> item_spans(const Lines& lines, const YAML::Node& seq) {
  if (!seq.IsDefined() || !seq.IsSequence() || seq.Style() == YAML::EmitterStyle::Flow) return std::nullopt;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (const auto& item : seq) {
    const int line = item.Mark().line;
    if (line < 0 || static_cast<std::size_t>(line) >= lines.lines.size()) return std::nullopt;
    const auto l = static_cast<std::size_t>(line);
    const std::size_t dash = lines.indent(l);
    if (dash == std::string_view::npos || lines.lines[l][dash] != '-') return std::nullopt;
    std::size_t end = l + 1;
    while (end < lines.lines.size() && !(lines.content(end) && lines.indent(end) <= dash)) ++end;
    while (end > l + 1 && !lines.content(end - 1)) --end;
    std::size_t first = l;
    while (first > 0 && lines.comment(first - 1)) --first;
    if (!spans.empty() && first < spans.back().second) return std::nullopt;
    spans.emplace_back(first, end);
  }
  return spans;
}

std::optional<std::size_t> key_line(const YAML::Node& doc, std::string_view key) {
  for (const auto& entry : doc)
    if (entry.first.IsScalar() && entry.first.Scalar() == key && entry.first.Mark().line >= 0)
      return static_cast<std::size_t>(entry.first.Mark().line);
  return std::nullopt;
}

std::optional<std::uint64_t> parse_count(const std::string& text) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A path as with_value_at takes it, as keys and list indexes: faults[0].when.for.
struct Segment {
  std::string key;
  std::optional<std::size_t> index;
};
std::vector<Segment> segments_of(std::string_view path) {
  std::vector<Segment> out;
  while (!path.empty()) {
    auto end = path.find_first_of(".[");
    out.push_back({std::string(path.substr(0, end)), std::nullopt});
    path.remove_prefix(end == std::string_view::npos ? path.size() : end);
    while (!path.empty() && path.front() == '[') {
      auto close = path.find(']');
      if (close == std::string_view::npos) return {};
      auto index = parse_count(std::string(path.substr(1, close - 1)));
      if (!index) return {};
      out.push_back({"", static_cast<std::size_t>(*index)});
      path.remove_prefix(close + 1);
    }
    if (!path.empty() && path.front() == '.') path.remove_prefix(1);
  }
  return out;
}

// The node at `path` under `root`; an undefined node when there is none.
YAML::Node node_at(const YAML::Node& root, std::string_view path) {
  YAML::Node node = root;
  for (const auto& s : segments_of(path)) {
    if (s.index ? !node.IsSequence() || *s.index >= node.size() : !node.IsMap())
      return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& current = node;
    const YAML::Node child = s.index ? current[*s.index] : current[s.key];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(child);
  }
  return node;
}

// `text` without the items `remove[path]` (indexes) of the lists at those paths ("faults",
// "checks.declared"); a list left empty goes with its key. Edits the text (comments stay); nullopt
// when it cannot.
std::optional<std::string> remove_items_in_text(const std::string& text,
                                                const std::map<std::string, std::set<std::size_t>>& remove) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!doc.IsMap()) return std::nullopt;
  Lines lines(text);
  std::vector<bool> drop(lines.lines.size(), false);
  for (const auto& [list, indexes] : remove) {
    if (indexes.empty()) continue;
    const YAML::Node seq = node_at(doc, list);
    auto spans = item_spans(lines, seq);
    if (!spans) return std::nullopt;
    if (indexes.size() == spans->size()) {
      const auto dot = list.rfind('.');
      const YAML::Node parent = dot == std::string::npos ? doc : node_at(doc, list.substr(0, dot));
      if (!parent.IsDefined() || !parent.IsMap()) return std::nullopt;
      auto key = key_line(parent, dot == std::string::npos ? list : list.substr(dot + 1));
      if (!key) return std::nullopt;
      std::size_t first = *key;
      while (first > 0 && lines.comment(first - 1)) --first;
      for (std::size_t i = first; i < spans->back().second; ++i) drop[i] = true;
      continue;
    }
    for (std::size_t index : indexes) {
      if (index >= spans->size()) return std::nullopt;
      for (std::size_t i = (*spans)[index].first; i < (*spans)[index].second; ++i) drop[i] = true;
    }
  }
  std::string out;
  for (std::size_t i = 0; i < lines.lines.size(); ++i)
    if (!drop[i]) {
      out += lines.lines[i];
      out += '\n';
    }
  return out;
}

std::string emit(const YAML::Node& doc) {
  YAML::Emitter out;
  out << doc;
  return std::string(out.c_str()) + "\n";
}

// The same removal by writing the parsed document out again (comments are lost).
std::optional<std::string> remove_items_by_emitter(const std::string& text,
                                                   const std::map<std::string, std::set<std::size_t>>& remove) {
  try {
    YAML::Node doc = YAML::Load(text);
    for (const auto& [list, indexes] : remove) {
      if (indexes.empty()) continue;
      const auto dot = list.rfind('.');
      YAML::Node parent = dot == std::string::npos ? doc : node_at(doc, list.substr(0, dot));
      const std::string key = dot == std::string::npos ? list : list.substr(dot + 1);
      if (!parent.IsDefined() || !parent.IsMap()) return std::nullopt;
      YAML::Node seq = parent[key];
      YAML::Node kept(YAML::NodeType::Sequence);
      for (std::size_t i = 0; i < seq.size(); ++i)
        if (!indexes.count(i)) kept.push_back(seq[i]);
      if (kept.size() == 0) parent.remove(key);
      else parent[key] = kept;
    }
    return emit(doc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool same_names(const schema::Scenario& s, const std::vector<std::string>& faults,
                const std::vector<std::string>& components) {
  if (s.faults.size() != faults.size() || s.component_faults.size() != components.size()) return false;
  for (std::size_t i = 0; i < faults.size(); ++i)
    if (s.faults[i].name != faults[i]) return false;
  for (std::size_t i = 0; i < components.size(); ++i)
    if (s.component_faults[i].name != components[i]) return false;
  return true;
}

// `text` with the scalar at `path` set to `value`: in place, else by writing the document out again.
std::optional<std::string> set_scalar(const std::string& text, const std::string& path, const std::string& value) {
  try {
    return schema::with_value_at(text, path, value);
  } catch (const schema::YamlEditError&) {
  }
  try {
    YAML::Node doc = YAML::Load(text);
    const auto segments = segments_of(path);
    if (segments.empty() || segments.back().index) return std::nullopt;
    const auto dot = path.rfind('.');
    YAML::Node parent = dot == std::string::npos ? doc : node_at(doc, path.substr(0, dot));
    if (!parent.IsMap()) return std::nullopt;
    parent[segments.back().key] = YAML::Load(value);
    return emit(doc);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string flow_list(const std::vector<std::string>& values) {
  YAML::Emitter out;
  out << YAML::Flow << values;
  return out.c_str();
}

// `text` with checks.<key> set to the flow list `values`: in place when checks is a mapping and
// the key is missing or a one-line flow list; nullopt otherwise.
std::optional<std::string> set_checks_list_in_text(const std::string& text, const std::string& key,
                                                   const std::vector<std::string>& values) {
  const std::string list = flow_list(values);
  YAML::Node doc = YAML::Load(text);
  const YAML::Node checks = doc["checks"];
  if (!checks.IsDefined()) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out + "checks:\n  " + key + ": " + list + "\n";
  }
  if (!checks.IsMap()) return std::nullopt;
  const YAML::Node node = checks[key];
  if (!node.IsDefined()) {
    try {
      return schema::with_value_at(text, "checks." + key, list);
    } catch (const schema::YamlEditError&) {
      return std::nullopt;
    }
  }
  if (!node.IsSequence() || node.Style() != YAML::EmitterStyle::Flow || node.Mark().pos < 0) return std::nullopt;
  const auto at = static_cast<std::size_t>(node.Mark().pos);
  if (at >= text.size() || text[at] != '[') return std::nullopt;
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '[' || text[i] == '"' || text[i] == '\'' || text[i] == '#') return std::nullopt;
    if (text[i] == ']') return text.substr(0, at) + list + text.substr(i + 1);
  }
  return std::nullopt;
}

std::string set_checks_lists_by_emitter(const std::string& text,
                                        const std::vector<std::pair<std::string, std::vector<std::string>>>& lists) {
  YAML::Node doc = YAML::Load(text);
  for (const auto& [key, values] : lists) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& v : values) seq.push_back(v);
    seq.SetStyle(YAML::EmitterStyle::Flow);
    doc["checks"][key] = seq;
  }
  return emit(doc);
}

std::string value_text(const Minimizer::Parameter& p, std::uint64_t units) {
  if (p.kind == "probability") return units >= 1 ? "1" : "0";
  // a value written in milliseconds stays in milliseconds ("1200ms", not "1s200ms")
  if (p.kind == "duration" && p.unit_ms == 1) return std::to_string(units) + "ms";
  if (p.kind == "duration")
    return faults::format_duration(faults::Duration(static_cast<std::int64_t>(units * p.unit_ms)));
  return std::to_string(units);
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

void note_skipped(std::vector<std::string>& skipped, std::string what) {
  if (skipped.size() < max_skipped) skipped.push_back(std::move(what));
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

// ---- construction -----------------------------------------------------------------------------

Minimizer::Minimizer(std::string scenario_yaml, std::vector<std::string> target_invariants, unsigned repeats)
    : original_yaml_(std::move(scenario_yaml)), original_targets_(std::move(target_invariants)), repeats_(repeats) {
  std::string why;
  auto scenario = try_load(original_yaml_, &why);
  if (!scenario) throw std::invalid_argument("explore minimize: the scenario does not load: " + why);
  if (repeats_ == 0 || repeats_ > max_repeats)
    throw std::invalid_argument("explore minimize: repeats must be 1 to " + std::to_string(max_repeats) + ", got " +
                                std::to_string(repeats_));
  for (const auto& rule : scenario->faults) elements_.push_back({std::string(kFaults), rule.name});
  for (const auto& fault : scenario->component_faults) elements_.push_back({std::string(kComponentFaults), fault.name});
  if (elements_.empty())
    throw std::invalid_argument(
        "explore minimize: the scenario has no fault rule and no component fault: nothing to minimize");
  if (elements_.size() > max_elements)
    throw std::invalid_argument("explore minimize: the scenario has " + std::to_string(elements_.size()) +
                                " faults and component faults, more than " + std::to_string(max_elements));
  validate_targets();
  targets_ = original_targets_;
  current_yaml_ = original_yaml_;
  for (std::size_t i = 0; i < elements_.size(); ++i) current_.push_back(i);
  granularity_ = std::min<std::size_t>(2, elements_.size());
}

void Minimizer::validate_targets() const {
  auto scenario = try_load(original_yaml_);
  if (!scenario) throw std::invalid_argument("explore minimize: the scenario does not load");
  std::vector<std::string> checked = scenario->checks.invariants_to_check();
  for (const auto& d : scenario->checks.declared) checked.push_back(d.name);
  if (original_targets_.empty())
    throw std::invalid_argument("explore minimize: no target invariant (name the invariants the runs violated)");
  std::set<std::string> seen;
  for (const auto& t : original_targets_) {
    if (!contains(checked, t))
      throw std::invalid_argument("explore minimize: target invariant \"" + t +
                                  "\" is not checked by the scenario (checked: " + join(checked, ", ") + ")");
    if (!seen.insert(t).second)
      throw std::invalid_argument("explore minimize: target invariant \"" + t + "\" given twice");
  }
}

// ---- the machine --------------------------------------------------------------------------------

bool Minimizer::done() const {
  if (pending_) return false;
  if (phase_ == "done") return true;
  Minimizer copy = *this;  // a pure machine: whether it has another candidate, without proposing it
  return !copy.advance();
}

std::vector<std::string> Minimizer::elements_left() const {
  std::vector<std::string> out;
  for (std::size_t i : current_) out.push_back(elements_[i].name);
  return out;
}

std::optional<Candidate> Minimizer::next() {
  if (pending_) return Candidate{pending_->id, pending_->yaml, pending_->what};
  return advance();
}

std::optional<Candidate> Minimizer::advance() {
  if (phase_ == "ddmin") return advance_ddmin();
  if (phase_ == "shrink") return advance_shrink();
  return std::nullopt;
}

Candidate Minimizer::propose(std::string yaml, std::string what, std::vector<std::size_t> subset, std::uint64_t value) {
  char id[32];
  std::snprintf(id, sizeof id, "cand-%03zu", next_id_);
  ++next_id_;
  pending_ = Pending{id, std::move(yaml), std::move(what), std::move(subset), value};
  return Candidate{pending_->id, pending_->yaml, pending_->what};
}

namespace {
std::vector<std::vector<std::size_t>> split(const std::vector<std::size_t>& c, std::size_t n) {
  std::vector<std::vector<std::size_t>> chunks;
  for (std::size_t i = 0; i < n; ++i)
    chunks.emplace_back(c.begin() + static_cast<std::ptrdiff_t>(i * c.size() / n),
                        c.begin() + static_cast<std::ptrdiff_t>((i + 1) * c.size() / n));
  return chunks;
}
std::vector<std::size_t> without(const std::vector<std::size_t>& c, const std::vector<std::size_t>& chunk) {
  std::vector<std::size_t> out;
  for (std::size_t x : c)
    if (std::find(chunk.begin(), chunk.end(), x) == chunk.end()) out.push_back(x);
  return out;
}
}  // namespace

std::string Minimizer::yaml_of_subset(const std::vector<std::size_t>& subset) const {
  std::map<std::string, std::set<std::size_t>> remove;
  std::vector<std::string> faults_left, components_left;
  std::size_t fault_index = 0, component_index = 0;
  for (std::size_t i = 0; i < elements_.size(); ++i) {
    const bool is_fault = elements_[i].list == kFaults;
    const std::size_t index = is_fault ? fault_index++ : component_index++;
    if (std::find(subset.begin(), subset.end(), i) != subset.end())
      (is_fault ? faults_left : components_left).push_back(elements_[i].name);
    else remove[elements_[i].list].insert(index);
  }
  for (auto* attempt : {&remove_items_in_text, &remove_items_by_emitter}) {
    auto text = attempt(original_yaml_, remove);
    if (!text) continue;
    auto scenario = try_load(*text);
    if (scenario && same_names(*scenario, faults_left, components_left)) return *text;
  }
  return {};
}

std::optional<Candidate> Minimizer::advance_ddmin() {
  while (true) {
    if (next_id_ > max_candidates) {
      phase_ = "done";
      return std::nullopt;
    }
    if (current_.size() <= 1) break;
    const auto chunks = split(current_, granularity_);
    const std::size_t total = granularity_ + (granularity_ > 2 ? granularity_ : 0);
    while (position_ < total) {
      const auto subset =
          position_ < granularity_ ? chunks[position_] : without(current_, chunks[position_ - granularity_]);
      const bool tested = std::any_of(tested_.begin(), tested_.end(), [&](const auto& t) { return t.first == subset; });
      if (subset.empty() || subset == current_ || tested) {
        ++position_;
        continue;
      }
      std::string yaml = yaml_of_subset(subset);
      std::vector<std::string> removed_faults, removed_components;
      for (std::size_t i : current_)
        if (std::find(subset.begin(), subset.end(), i) == subset.end())
          (elements_[i].list == kFaults ? removed_faults : removed_components).push_back(elements_[i].name);
      std::string what = "without";
      if (!removed_faults.empty()) what += " faults " + join(removed_faults, ", ");
      if (!removed_faults.empty() && !removed_components.empty()) what += ";";
      if (!removed_components.empty()) what += " componentFaults " + join(removed_components, ", ");
      if (yaml.empty()) {
        note_skipped(skipped_, what + ": the scenario loader refuses it");
        tested_.emplace_back(subset, false);
        ++position_;
        continue;
      }
      return propose(std::move(yaml), std::move(what), subset, 0);
    }
    if (granularity_ < current_.size()) {
      granularity_ = std::min(granularity_ * 2, current_.size());
      position_ = 0;
      continue;
    }
    break;
  }
  start_shrink();
  return advance_shrink();
}

void Minimizer::start_shrink() {
  phase_ = "shrink";
  parameters_.clear();
  parameter_ = 0;
  const YAML::Node doc = YAML::Load(current_yaml_);
  struct Key {
    const char* key;
    const char* kind;
    std::uint64_t floor_ms;  // counts: the floor itself
  };
  static const Key fault_keys[] = {
      {"when.afterMatches", "count", 1}, {"when.for", "duration", 1000},         {"when.limit", "count", 1},
      {"when.every", "count", 1},        {"when.probability", "probability", 0}, {"action.duration", "duration", 1000},
      {"action.count", "count", 1},      {"action.latency", "duration", 1000},   {"action.afterEvents", "count", 0},
      {"when.at", "duration", 0},
  };
  static const Key component_keys[] = {
      {"when.afterMatches", "count", 1},
      {"downFor", "duration", 1000},
      {"when.at", "duration", 0},
  };
  for (std::string_view list : {kFaults, kComponentFaults}) {
    const YAML::Node seq = doc[std::string(list)];
    if (!seq.IsDefined() || !seq.IsSequence()) continue;
    for (std::size_t index = 0; index < seq.size(); ++index) {
      const YAML::Node item = seq[index];
      const std::string name = item["name"].IsScalar() ? item["name"].Scalar() : "";
      auto add = [&](const Key& k) {
        const std::string key = k.key;
        const YAML::Node node = node_at(item, key);
        if (!node.IsDefined() || !node.IsScalar()) return;
        Parameter p{std::string(list), index, name, key, k.kind, 1, 0, 0, 0};
        const std::string& text = node.Scalar();
        if (p.kind == "count") {
          auto v = parse_count(text);
          if (!v || *v <= k.floor_ms) return;
          p.lo = k.floor_ms;
          p.hi = *v;
        } else if (p.kind == "duration") {
          auto d = faults::parse_duration(text);
          if (!d || d->count() <= 0) return;
          const auto ms = static_cast<std::uint64_t>(d->count());
          p.unit_ms = ms % 1000 == 0 ? 1000 : 1;
          std::uint64_t floor = k.floor_ms == 0 ? 0 : (ms >= 1000 ? 1000 : 1);
          p.lo = (floor + p.unit_ms - 1) / p.unit_ms;
          p.hi = ms / p.unit_ms;
          if (p.hi <= p.lo) return;
        } else {
          try {
            if (node.as<double>() >= 1) return;
          } catch (const std::exception&) {
            return;
          }
          p.lo = 0;
          p.hi = 1;  // one candidate: probability 1
        }
        parameters_.push_back(std::move(p));
      };
      for (const Key& k : list == kFaults ? std::vector<Key>(std::begin(fault_keys), std::end(fault_keys))
                                          : std::vector<Key>(std::begin(component_keys), std::end(component_keys)))
        add(k);
    }
  }
}

std::optional<Candidate> Minimizer::advance_shrink() {
  while (parameter_ < parameters_.size()) {
    if (next_id_ > max_candidates) break;
    Parameter& p = parameters_[parameter_];
    const bool finished = p.kind == "probability" ? p.steps > 0 : (p.lo >= p.hi || p.steps >= max_steps_per_parameter);
    if (finished) {
      ++parameter_;
      continue;
    }
    // the floor first (a parameter the violation does not depend on goes there in one run), then
    // a binary search between what did not violate and what did
    const std::uint64_t value = p.kind == "probability" ? 1 : p.steps == 0 ? p.lo : p.lo + (p.hi - p.lo) / 2;
    const std::string path = p.list + "[" + std::to_string(p.index) + "]." + p.key;
    std::string old_text;
    if (p.kind == "probability") {
      old_text = node_at(YAML::Load(current_yaml_), path).Scalar();
    } else {
      old_text = value_text(p, p.hi);
    }
    const std::string what = p.list + "[" + std::to_string(p.index) + "] " + p.name + ": " + p.key + " " + old_text +
                             " -> " + value_text(p, value);
    auto yaml = set_scalar(current_yaml_, path, value_text(p, value));
    std::string why = "the value cannot be written";
    if (yaml && try_load(*yaml, &why)) return propose(std::move(*yaml), what, {}, value);
    note_skipped(skipped_, what + ": " + why);
    ++p.steps;
    if (p.kind != "probability") p.lo = value + 1;
  }
  phase_ = "done";
  return std::nullopt;
}

void Minimizer::record(const Candidate& candidate, const std::vector<RunOutcome>& outcomes) {
  if (!pending_ || candidate.id != pending_->id || candidate.scenario_yaml != pending_->yaml)
    throw std::logic_error("explore minimize: candidate " + candidate.id + " was not proposed or is already recorded" +
                           (pending_ ? " (waiting for " + pending_->id + ")" : std::string(" (none waiting)")));
  if (outcomes.size() != repeats_)
    throw std::logic_error("explore minimize: candidate " + candidate.id + " needs " + std::to_string(repeats_) +
                           " run outcomes, got " + std::to_string(outcomes.size()));
  std::vector<std::string> common = targets_;
  std::vector<std::string> all_violated;
  bool runs_ok = true;
  for (const auto& o : outcomes) {
    if (o.verdict != "fail" && o.verdict != "reproduced") runs_ok = false;
    std::erase_if(common, [&](const std::string& t) { return !contains(o.violated, t); });
    for (const auto& v : o.violated)
      if (!contains(all_violated, v)) all_violated.push_back(v);
  }
  // Every target in every run: a candidate that violates fewer of them reproduces another failure
  // (a weaker one, often one that many faults cause), not the plan's.
  const bool keep = runs_ok && common.size() == targets_.size();
  Pending done = std::move(*pending_);
  pending_.reset();
  if (keep) {
    targets_ = common;
    violated_ = all_violated;
    current_yaml_ = done.yaml;
    ++kept_count_;
  }
  if (phase_ == "ddmin") {
    tested_.emplace_back(done.subset, keep);
    if (keep) {
      const bool was_chunk = position_ < granularity_;
      current_ = done.subset;
      granularity_ = std::max<std::size_t>(2, was_chunk ? 2 : granularity_ - 1);
      granularity_ = std::min(granularity_, current_.size());
      position_ = 0;
    } else {
      ++position_;
    }
  } else if (phase_ == "shrink" && parameter_ < parameters_.size()) {
    Parameter& p = parameters_[parameter_];
    ++p.steps;
    if (p.kind == "probability") p.hi = keep ? 1 : 0;
    else if (keep) p.hi = done.value;
    else p.lo = done.value + 1;
  }
}

// ---- the result ---------------------------------------------------------------------------------

std::string Minimizer::minimized_yaml(std::string_view header_comment) const {
  auto scenario = try_load(current_yaml_);
  if (!scenario) throw std::logic_error("explore minimize: the current scenario does not load");
  std::string text = current_yaml_;
  // metadata.name: suffixed, so that its runs get report directories of their own
  std::string name = scenario->metadata.name;
  if (!(name.size() >= 4 && name.compare(name.size() - 4, 4, "-min") == 0)) {
    YAML::Emitter out;
    out << name + "-min";
    auto edited = set_scalar(text, "metadata.name", out.c_str());
    if (edited) {
      auto renamed = try_load(*edited);
      if (renamed && renamed->metadata.name == name + "-min") text = *edited;
    }
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> lists;
  std::vector<std::string> expect;
  for (const auto& t : original_targets_)
    if (contains(targets_, t)) expect.push_back(t);
  lists.emplace_back("expect", expect);
  // checks the last kept runs violated beyond expect would make the verdict `fail`: invariants are
  // left out of checks.invariants, declared checks (always checked) removed from checks.declared
  std::vector<std::string> invariants = scenario->checks.invariants_to_check();
  const auto before = invariants.size();
  std::erase_if(invariants, [&](const std::string& i) { return contains(violated_, i) && !contains(expect, i); });
  if (invariants.size() != before) lists.emplace_back("invariants", invariants);
  std::string edited = text;
  bool in_place = true;
  for (const auto& [key, values] : lists) {
    std::optional<std::string> next;
    try {
      next = set_checks_list_in_text(edited, key, values);
    } catch (const std::exception&) {
    }
    if (!next) {
      in_place = false;
      break;
    }
    edited = *next;
  }
  if (!in_place || !try_load(edited)) edited = set_checks_lists_by_emitter(text, lists);
  std::set<std::size_t> declared_extra;
  for (std::size_t i = 0; i < scenario->checks.declared.size(); ++i) {
    const std::string& d = scenario->checks.declared[i].name;
    if (contains(violated_, d) && !contains(expect, d)) declared_extra.insert(i);
  }
  if (!declared_extra.empty()) {
    const std::map<std::string, std::set<std::size_t>> remove{{"checks.declared", declared_extra}};
    for (auto* attempt : {&remove_items_in_text, &remove_items_by_emitter}) {
      auto removed = attempt(edited, remove);
      auto loaded = removed ? try_load(*removed) : nullptr;
      if (loaded && loaded->checks.declared.size() + declared_extra.size() == scenario->checks.declared.size()) {
        edited = *removed;
        break;
      }
    }
  }
  std::string why;
  if (!try_load(edited, &why)) throw std::logic_error("explore minimize: the minimized scenario does not load: " + why);
  std::string header;
  std::size_t start = 0;
  while (start < header_comment.size()) {
    std::size_t end = header_comment.find('\n', start);
    if (end == std::string_view::npos) end = header_comment.size();
    std::string_view line = header_comment.substr(start, end - start);
    header += line.empty() ? "#" : (line.front() == '#' ? std::string(line) : "# " + std::string(line));
    header += '\n';
    start = end + 1;
  }
  return header + edited;
}

// ---- state --------------------------------------------------------------------------------------

namespace {

json::array strings(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}
json::array indexes(const std::vector<std::size_t>& v) {
  json::array a;
  for (auto i : v) a.emplace_back(static_cast<std::uint64_t>(i));
  return a;
}

[[noreturn]] void bad(std::string_view key, std::string_view what) {
  throw std::invalid_argument("explore minimize state: \"" + std::string(key) + "\": " + std::string(what));
}
const json::value& field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) bad(key, "missing");
  return it->value();
}
std::string get_string(const json::object& o, std::string_view key) {
  const auto& v = field(o, key);
  if (!v.is_string()) bad(key, "not a string");
  return std::string(v.as_string());
}
std::uint64_t get_uint(const json::object& o, std::string_view key, std::uint64_t max = UINT64_MAX) {
  const auto& v = field(o, key);
  std::uint64_t out = 0;
  if (v.is_uint64()) out = v.as_uint64();
  else if (v.is_int64() && v.as_int64() >= 0) out = static_cast<std::uint64_t>(v.as_int64());
  else bad(key, "not a whole number >= 0");
  if (out > max) bad(key, "above " + std::to_string(max));
  return out;
}
bool get_bool(const json::object& o, std::string_view key) {
  const auto& v = field(o, key);
  if (!v.is_bool()) bad(key, "not true or false");
  return v.as_bool();
}
const json::array& get_array(const json::object& o, std::string_view key) {
  const auto& v = field(o, key);
  if (!v.is_array()) bad(key, "not a list");
  return v.as_array();
}
const json::object& as_object(const json::value& v, std::string_view key) {
  if (!v.is_object()) bad(key, "an item is not an object");
  return v.as_object();
}
std::vector<std::string> get_strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& v : get_array(o, key)) {
    if (!v.is_string()) bad(key, "an item is not a string");
    out.emplace_back(v.as_string());
  }
  return out;
}
std::vector<std::size_t> get_indexes(const json::object& o, std::string_view key, std::size_t bound) {
  std::vector<std::size_t> out;
  for (const auto& v : get_array(o, key)) {
    if (!v.is_uint64() && !(v.is_int64() && v.as_int64() >= 0)) bad(key, "an item is not a whole number >= 0");
    const auto i = v.is_uint64() ? v.as_uint64() : static_cast<std::uint64_t>(v.as_int64());
    if (i >= bound) bad(key, "index " + std::to_string(i) + " out of range");
    out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

}  // namespace

std::string Minimizer::state_json() const {
  json::array elements;
  for (const auto& e : elements_) elements.push_back(json::object{{"list", e.list}, {"name", e.name}});
  json::array tested;
  for (const auto& [subset, kept] : tested_)
    tested.push_back(json::object{{"subset", indexes(subset)}, {"kept", kept}});
  json::array parameters;
  for (const auto& p : parameters_)
    parameters.push_back(json::object{{"list", p.list},
                                      {"index", static_cast<std::uint64_t>(p.index)},
                                      {"name", p.name},
                                      {"key", p.key},
                                      {"kind", p.kind},
                                      {"unitMs", p.unit_ms},
                                      {"lo", p.lo},
                                      {"hi", p.hi},
                                      {"steps", p.steps}});
  json::value pending = nullptr;
  if (pending_)
    pending = json::object{{"id", pending_->id},
                           {"scenario", pending_->yaml},
                           {"what", pending_->what},
                           {"subset", indexes(pending_->subset)},
                           {"value", pending_->value}};
  json::object doc{{"version", 1},
                   {"scenario", original_yaml_},
                   {"targets", strings(original_targets_)},
                   {"repeats", repeats_},
                   {"elements", std::move(elements)},
                   {"phase", phase_},
                   {"current", current_yaml_},
                   {"expect", strings(targets_)},
                   {"violated", strings(violated_)},
                   {"kept", static_cast<std::uint64_t>(kept_count_)},
                   {"left", indexes(current_)},
                   {"granularity", static_cast<std::uint64_t>(granularity_)},
                   {"position", static_cast<std::uint64_t>(position_)},
                   {"tested", std::move(tested)},
                   {"parameters", std::move(parameters)},
                   {"parameter", static_cast<std::uint64_t>(parameter_)},
                   {"nextId", static_cast<std::uint64_t>(next_id_)},
                   {"pending", std::move(pending)},
                   {"skipped", strings(skipped_)}};
  return json::serialize(doc) + "\n";
}

Minimizer Minimizer::from_state_json(std::string_view json_text) {
  if (json_text.size() > max_state_bytes)
    throw std::invalid_argument("explore minimize state: larger than " + std::to_string(max_state_bytes) + " bytes");
  boost::system::error_code ec;
  json::value v = json::parse(json_text, ec);
  if (ec) throw std::invalid_argument("explore minimize state: not JSON: " + ec.message());
  if (!v.is_object()) throw std::invalid_argument("explore minimize state: not a JSON object");
  const json::object& o = v.as_object();
  if (get_uint(o, "version") != 1) bad("version", "unknown version (this program writes 1)");
  // The scenario and targets are checked as the constructor checks them.
  Minimizer m(get_string(o, "scenario"), get_strings(o, "targets"),
              static_cast<unsigned>(get_uint(o, "repeats", max_repeats)));
  const auto& elements = get_array(o, "elements");
  if (elements.size() != m.elements_.size())
    bad("elements", "does not match the scenario's faults and component faults");
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const auto& e = as_object(elements[i], "elements");
    if (get_string(e, "list") != m.elements_[i].list || get_string(e, "name") != m.elements_[i].name)
      bad("elements", "does not match the scenario's faults and component faults");
  }
  const std::size_t n = m.elements_.size();
  m.phase_ = get_string(o, "phase");
  if (m.phase_ != "ddmin" && m.phase_ != "shrink" && m.phase_ != "done") bad("phase", "not ddmin, shrink or done");
  m.current_yaml_ = get_string(o, "current");
  if (!try_load(m.current_yaml_)) bad("current", "the scenario does not load");
  m.targets_ = get_strings(o, "expect");
  if (m.targets_.empty()) bad("expect", "empty");
  for (const auto& t : m.targets_)
    if (!contains(m.original_targets_, t)) bad("expect", "\"" + t + "\" is not a target");
  m.violated_ = get_strings(o, "violated");
  m.kept_count_ = get_uint(o, "kept", max_candidates);
  m.current_ = get_indexes(o, "left", n);
  if (m.current_.empty()) bad("left", "empty");
  m.granularity_ = get_uint(o, "granularity", n);
  if (m.granularity_ == 0) bad("granularity", "0");
  m.position_ = get_uint(o, "position", 2 * n);
  m.tested_.clear();
  for (const auto& t : get_array(o, "tested")) {
    const auto& to = as_object(t, "tested");
    m.tested_.emplace_back(get_indexes(to, "subset", n), get_bool(to, "kept"));
  }
  m.parameters_.clear();
  for (const auto& pv : get_array(o, "parameters")) {
    const auto& po = as_object(pv, "parameters");
    Parameter p;
    p.list = get_string(po, "list");
    if (p.list != kFaults && p.list != kComponentFaults) bad("parameters", "list is not faults or componentFaults");
    p.index = get_uint(po, "index", n);
    p.name = get_string(po, "name");
    p.key = get_string(po, "key");
    p.kind = get_string(po, "kind");
    if (p.kind != "count" && p.kind != "duration" && p.kind != "probability")
      bad("parameters", "kind is not count, duration or probability");
    p.unit_ms = get_uint(po, "unitMs", 1000);
    if (p.unit_ms != 1 && p.unit_ms != 1000) bad("unitMs", "not 1 or 1000");
    p.lo = get_uint(po, "lo");
    p.hi = get_uint(po, "hi");
    p.steps = static_cast<unsigned>(get_uint(po, "steps", max_steps_per_parameter));
    m.parameters_.push_back(std::move(p));
  }
  m.parameter_ = get_uint(o, "parameter", m.parameters_.size());
  m.next_id_ = get_uint(o, "nextId", max_candidates + 1);
  if (m.next_id_ == 0) bad("nextId", "0");
  const auto& pending = field(o, "pending");
  if (pending.is_null()) {
    m.pending_.reset();
  } else {
    if (!pending.is_object()) bad("pending", "not an object or null");
    const auto& po = pending.as_object();
    m.pending_ = Pending{get_string(po, "id"), get_string(po, "scenario"), get_string(po, "what"),
                         get_indexes(po, "subset", n), get_uint(po, "value")};
  }
  m.skipped_ = get_strings(o, "skipped");
  return m;
}

// ---- report.json --------------------------------------------------------------------------------

RunOutcome outcome_of_report(std::string_view report_json) {
  const RunReport report = read_run_report(report_json);
  if (!report.malformed.empty()) throw std::invalid_argument("report.json: " + report.malformed);
  RunOutcome out{report.verdict, {}};
  for (const auto& c : report.checks)
    if (c.status == "violated") out.violated.push_back(c.name);
  return out;
}

}  // namespace faultline::harness::explore
