#pragma once
// The events a watch-delay or watch-coalesce filter holds back for one stream: a queue in the order
// they came from upstream (so in resourceVersion order), each with the time it is due. Only the front
// is released, and only once it is due, so the client gets the events in the upstream's order and a
// BOOKMARK never overtakes an event held before it. An event may replace the held one of the same
// key (watch-coalesce): the replaced one leaves the queue, the new one joins its end and keeps the
// due time of the key's first event.
//
// Bounded: kMaxEvents events and WatchFilter::kMaxHeldBytes bytes per stream, kMaxBytesTotal in the
// whole proxy; fits() says whether one more event would stay within them.

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "faultline/proxy/effects.hpp"

namespace faultline::proxy::actions {

class HeldEvents {
 public:
  using TimePoint = WatchFilter::TimePoint;
  static constexpr std::size_t kMaxEvents = 10000;
  static constexpr std::size_t kMaxBytes = WatchFilter::kMaxHeldBytes;
  static constexpr std::size_t kMaxBytesTotal = std::size_t{256} << 20;

  HeldEvents() = default;
  HeldEvents(const HeldEvents&) = delete;
  HeldEvents& operator=(const HeldEvents&) = delete;
  ~HeldEvents() { total().fetch_sub(bytes_); }

  // Whether an event of `size` bytes may join the queue (replacing `key`'s, if any).
  bool fits(std::size_t size, std::string_view key = {}) const {
    std::size_t freed = 0, count = queue_.size();
    if (!key.empty()) {
      if (auto it = by_key_.find(std::string(key)); it != by_key_.end()) {
        freed = it->second->event.size();
        --count;
      }
    }
    return count + 1 <= kMaxEvents && bytes_ - freed + size <= kMaxBytes &&
           total().load() - freed + size <= kMaxBytesTotal;
  }
  // Why an event does not fit, for the error that cuts the stream.
  static std::string bound_text() {
    return std::to_string(kMaxEvents) + " events or " + std::to_string(kMaxBytes >> 20) + " MiB per watch stream (" +
           std::to_string(kMaxBytesTotal >> 20) + " MiB in the whole proxy)";
  }

  // Appends `event`, due at `due`. With a key, it replaces that key's held event (if any) and keeps
  // its due time; returns true when it replaced one.
  bool push(std::string_view event, TimePoint due, std::string_view key = {}) {
    bool replaced = false;
    if (!key.empty()) {
      auto it = by_key_.find(std::string(key));
      if (it != by_key_.end()) {
        due = it->second->due;
        forget(it->second);
        by_key_.erase(it);
        replaced = true;
      }
    }
    queue_.push_back(Entry{std::string(event), due, std::string(key)});
    bytes_ += event.size();
    total().fetch_add(event.size());
    if (!key.empty()) by_key_.emplace(std::string(key), std::prev(queue_.end()));
    return replaced;
  }

  // Removes and returns the events due by `now`, front first (all of them: every one when
  // nullopt).
  std::vector<std::string> release(std::optional<TimePoint> now) {
    std::vector<std::string> out;
    while (!queue_.empty() && (!now || queue_.front().due <= *now)) {
      auto front = queue_.begin();
      if (!front->key.empty()) by_key_.erase(front->key);
      out.push_back(std::move(front->event));
      bytes_ -= out.back().size();
      total().fetch_sub(out.back().size());
      queue_.erase(front);
    }
    return out;
  }

  std::optional<TimePoint> next_due() const {
    if (queue_.empty()) return std::nullopt;
    return queue_.front().due;
  }
  std::size_t size() const { return queue_.size(); }
  std::size_t bytes() const { return bytes_; }
  // Bytes held by every stream of the proxy.
  static std::size_t bytes_total() { return total().load(); }

 private:
  struct Entry {
    std::string event;
    TimePoint due;
    std::string key;
  };
  void forget(std::list<Entry>::iterator it) {
    bytes_ -= it->event.size();
    total().fetch_sub(it->event.size());
    queue_.erase(it);
  }
  static std::atomic<std::size_t>& total() {
    static std::atomic<std::size_t> bytes{0};
    return bytes;
  }

  std::list<Entry> queue_;
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  std::size_t bytes_ = 0;
};

// The step that cuts a stream whose filter would hold more than the bounds.
inline WatchFilter::Step held_bound_reached(std::string_view action) {
  spdlog::error("{}: one more event would hold more than {}: the watch stream is cut (RST), the held events dropped",
                action, HeldEvents::bound_text());
  return WatchFilter::Step{{}, WatchFilter::End::reset};
}

// A watch filter that holds events back (watch-delay, watch-coalesce): the held queue, the time the
// relay last gave, the counts, and the release of what is due; a subclass decides in on_event()
// what to hold and until when.
class HoldingWatchFilter : public WatchFilter {
 public:
  bool holds_events() const final { return true; }
  Step advance(TimePoint now) final {
    now_ = now;
    return Step{held_.release(now), End::none};
  }
  std::optional<TimePoint> next_due() const final { return held_.next_due(); }
  Step flush() final { return Step{held_.release(std::nullopt), End::none}; }
  Counts counts() const final { return counts_; }

 protected:
  HeldEvents held_;
  TimePoint now_{};
  Counts counts_;
};

}  // namespace faultline::proxy::actions
