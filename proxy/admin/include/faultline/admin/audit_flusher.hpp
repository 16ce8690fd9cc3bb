#pragma once
// Writes the audit log's buffered lines out on a fixed period, so a record is on disk within about
// a period even when traffic stops (AuditLog itself flushes only when an append finds a bound
// passed). Runs on an io_context; stop() before the io_context is expected to run out of work.

#include "faultline/admin/audit_log.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>

namespace faultline::admin {

class AuditFlusher {
 public:
  AuditFlusher(boost::asio::io_context& ioc, AuditLog& log, std::chrono::milliseconds period = std::chrono::seconds(1));
  AuditFlusher(const AuditFlusher&) = delete;
  AuditFlusher& operator=(const AuditFlusher&) = delete;

  void start();
  // Cancels the timer (from any thread); the final flush on shutdown is the owner's.
  void stop();

 private:
  void wait();

  AuditLog& log_;
  std::chrono::milliseconds period_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;  // only touched on strand_
  bool stopped_ = false;             // only touched on strand_
};

}  // namespace faultline::admin
