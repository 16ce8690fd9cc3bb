#pragma once
// The batches of `hold` rules (effect::Gate): one per rule, shared by every connection and both
// protocols. A request joins its rule's batch and waits on its ticket's timer; the batch is
// released as a whole when `count` requests are in it (by the request that completes it) or when
// its deadline passes (by the first waiter whose timer fires). A client that gives up leaves the
// batch and is never released. Thread-safe: tickets of one batch live on different strands.
//
// Bounded: at most kMaxHeld requests are held in the whole proxy; a request beyond it is not held
// (join returns null) and goes on at once.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "faultline/proxy/effects.hpp"

namespace faultline::proxy {

class Gates;

// One held request. Its timer runs on the request's strand: it expires at the batch's deadline,
// and at once (expires_at the past) when another request releases the batch.
class GateTicket {
 public:
  explicit GateTicket(const boost::asio::any_io_executor& executor) : timer(executor) {}
  boost::asio::steady_timer timer;
  std::chrono::steady_clock::time_point since;

 private:
  friend class Gates;
  std::uint64_t batch_id = 0;
  std::string rule;
  bool released = false;  // under Gates::mutex_
  bool left = false;
  std::size_t batch_size = 0;
};

class Gates {
 public:
  static constexpr std::size_t kMaxHeld = 1000;

  // Joins the rule's batch (a new one when it has none open). Null when kMaxHeld requests are held
  // already. When this request completes the batch, the batch is released before join returns.
  std::shared_ptr<GateTicket> join(const effect::Gate& gate, const boost::asio::any_io_executor& executor);
  // After the ticket's timer fired: the size of the batch it was released with, releasing it now
  // when its deadline has passed; 0 when it is still held (wait again).
  std::size_t wake(GateTicket& ticket);
  // The client gave up: true when the ticket was still held (it is out of its batch now), false
  // when its batch was released already.
  bool leave(GateTicket& ticket);
  // Requests held now, in the whole proxy.
  std::size_t held() const;

 private:
  struct Batch {
    std::uint64_t id = 0;
    std::chrono::steady_clock::time_point deadline;
    std::vector<std::shared_ptr<GateTicket>> tickets;
  };
  void release(Batch& batch);  // mutex_ held; the rule's entry is erased by the caller

  mutable std::mutex mutex_;
  std::map<std::string, Batch> open_;  // by rule name
  std::size_t held_ = 0;
  std::uint64_t next_id_ = 1;
};

// Leaves the batch when the request ends while still held (the client gave up, the connection or
// stream is gone): held requests never outlive their client.
class GateHold {
 public:
  GateHold() = default;
  GateHold(Gates& gates, std::shared_ptr<GateTicket> ticket) : gates_(&gates), ticket_(std::move(ticket)) {}
  GateHold(GateHold&& other) noexcept { *this = std::move(other); }
  GateHold& operator=(GateHold&& other) noexcept {
    if (this != &other) {
      leave();
      gates_ = other.gates_;
      ticket_ = std::move(other.ticket_);
      other.gates_ = nullptr;
    }
    return *this;
  }
  ~GateHold() { leave(); }
  GateTicket* ticket() const { return ticket_.get(); }
  explicit operator bool() const { return ticket_ != nullptr; }
  // True when the ticket was still held (now out of its batch). On the ticket's strand: its waiter
  // wakes up.
  bool leave() {
    bool was_held = false;
    if (gates_ && ticket_) {
      was_held = gates_->leave(*ticket_);
      ticket_->timer.cancel();
    }
    ticket_.reset();
    gates_ = nullptr;
    return was_held;
  }
  // The batch released it: nothing to leave.
  void done() {
    ticket_.reset();
    gates_ = nullptr;
  }

 private:
  Gates* gates_ = nullptr;
  std::shared_ptr<GateTicket> ticket_;
};

}  // namespace faultline::proxy
