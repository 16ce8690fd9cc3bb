#include "gate.hpp"

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace faultline::proxy {

std::shared_ptr<GateTicket> Gates::join(const effect::Gate& gate, const boost::asio::any_io_executor& executor) {
  auto ticket = std::make_shared<GateTicket>(executor);
  const auto now = std::chrono::steady_clock::now();
  ticket->since = now;
  ticket->rule = gate.rule;
  std::lock_guard lock(mutex_);
  if (held_ >= kMaxHeld) return nullptr;
  auto [it, fresh] = open_.try_emplace(gate.rule);
  Batch& batch = it->second;
  if (fresh) {
    batch.id = next_id_++;
    batch.deadline = now + gate.wait;
  }
  ticket->batch_id = batch.id;
  // Set before any other strand can touch the ticket: a release posts its wake-up after this.
  ticket->timer.expires_at(batch.deadline);
  batch.tickets.push_back(ticket);
  ++held_;
  if (batch.tickets.size() >= std::max<std::uint64_t>(gate.count, 1)) {
    release(batch);
    open_.erase(it);
  }
  return ticket;
}

void Gates::release(Batch& batch) {
  if (!batch.tickets.empty())
    spdlog::info("rule '{}': {} held request(s) released together", batch.tickets.front()->rule, batch.tickets.size());
  for (auto& ticket : batch.tickets) {
    ticket->released = true;
    ticket->batch_size = batch.tickets.size();
    --held_;
    // The ticket's own strand wakes its waiter: its timer now expires at once.
    boost::asio::post(ticket->timer.get_executor(),
                      [ticket] { ticket->timer.expires_at(std::chrono::steady_clock::time_point::min()); });
  }
  batch.tickets.clear();
}

std::size_t Gates::wake(GateTicket& ticket) {
  std::lock_guard lock(mutex_);
  if (ticket.released) return ticket.batch_size;
  if (ticket.left) return 0;
  auto it = open_.find(ticket.rule);
  if (it == open_.end() || it->second.id != ticket.batch_id) return 0;
  if (std::chrono::steady_clock::now() < it->second.deadline) return 0;
  release(it->second);
  open_.erase(it);
  return ticket.batch_size;
}

bool Gates::leave(GateTicket& ticket) {
  std::lock_guard lock(mutex_);
  if (ticket.released || ticket.left) return false;
  ticket.left = true;
  auto it = open_.find(ticket.rule);
  if (it == open_.end() || it->second.id != ticket.batch_id) return false;
  auto& tickets = it->second.tickets;
  auto pos = std::find_if(tickets.begin(), tickets.end(), [&](const auto& t) { return t.get() == &ticket; });
  if (pos == tickets.end()) return false;
  tickets.erase(pos);
  --held_;
  // An empty batch is dropped: the next request starts a new one, with a deadline of its own.
  if (tickets.empty()) open_.erase(it);
  return true;
}

std::size_t Gates::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

}  // namespace faultline::proxy
