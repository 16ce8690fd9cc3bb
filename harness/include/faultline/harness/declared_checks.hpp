#pragma once
// Declared invariants (`checks.declared`, schema/declared.hpp) judged over a sequence of watch
// events: DeclaredEvaluator keeps, per object, only what its check needs (the group values, when
// the field reached its value, the name), applies each event as it arrives (so a duplicate that
// exists for a moment is a violation even when it is gone by the end) and gives a CheckResult like
// the built-in checks'. Pure: no I/O, times come with the events. ObjectWatcher (object_watcher.hpp)
// feeds it from the apiserver.
#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "faultline/harness/checks.hpp"
#include "faultline/harness/observations.hpp"
#include "faultline/harness/schema/declared.hpp"

namespace faultline::harness {

// The value at `path` in `object` as text: a string's characters, a number, true/false as JSON
// writes them, a mapping or list as its JSON; nullopt when a step is missing or the value is null.
std::optional<std::string> resolve_field(const boost::json::value& object, const schema::FieldPath& path);

// What a declared check is judged against besides its events.
struct DeclaredContext {
  WallTime run_started{};                           // evidence times are relative to it
  WallTime ended{};                                 // the end of the observation
  std::optional<WallTime> workload_created;         // when the workload's steps finished creating
  std::optional<WallTime> faults_ended;             // when the last fault ended; nullopt: none was seen
  const std::vector<AuditRecord>* audit = nullptr;  // nullptr: no proxy audit
};

class DeclaredEvaluator {
 public:
  // `workload_namespace` is where a watch without a namespace looks.
  DeclaredEvaluator(schema::DeclaredCheck check, std::string workload_namespace,
                    std::uint64_t max_objects = schema::max_declared_objects);

  // One object as the watch delivered it (type ADDED, MODIFIED, DELETED) at `at`. An object with a
  // deletionTimestamp counts as gone. Throws LimitError when more than max_objects objects were seen.
  void observe(std::string_view type, const boost::json::value& object, WallTime at);
  // An object the watch knew and a relist no longer has: deleted while the watch was down.
  void forget(const std::string& id, WallTime at);
  // The objects live now, by id (uid, or namespace/name when there is none).
  std::vector<std::string> live_ids() const;

  void watch_established() { watched_ = true; }
  void watch_failed(std::string why) { failure_ = std::move(why); }

  CheckResult result(const DeclaredContext& ctx) const;

  const schema::DeclaredCheck& check() const { return check_; }
  // The collection the check watches: /apis/apps/v1/namespaces/x/daemonsets, /api/v1/pods.
  std::string collection_path() const;
  const std::string& watched_namespace() const { return namespace_; }

 private:
  struct Object {
    std::string ref;  // namespace/name
    bool live = true;
    WallTime first_seen{};
    std::optional<std::string> group;  // the group key while grouped
    std::vector<std::string> group_values;
    std::optional<WallTime> reached;
    std::string last_value;  // reaches: the field's last value ("" when absent)
  };
  struct Violation {
    WallTime at{};
    std::vector<std::string> refs;  // the objects of the group when it first went over
    std::string values;             // "spec.nodeName=n1, ..."
    std::size_t most = 0;
  };

  void ungroup(const std::string& id, Object& object);
  void regroup(const std::string& id, Object& object, const boost::json::value& json, WallTime at);
  CheckResult at_most_result(const DeclaredContext& ctx) const;
  CheckResult reaches_result(const DeclaredContext& ctx) const;
  CheckResult no_write_result(const DeclaredContext& ctx) const;
  std::string since_start(const DeclaredContext& ctx, WallTime t) const;

  schema::DeclaredCheck check_;
  std::string namespace_;  // "" = all namespaces
  std::uint64_t max_objects_;
  bool watched_ = false;
  std::string failure_;
  std::map<std::string, Object> objects_;                // by id; deleted ones kept only as a ref
  std::map<std::string, std::set<std::string>> groups_;  // group key -> ids
  std::map<std::string, Violation> violations_;          // group key -> first time over
  std::vector<bool> path_resolved_;                      // per path: resolved on some object
  std::uint64_t seen_ = 0;                               // objects ever seen
};

}  // namespace faultline::harness
