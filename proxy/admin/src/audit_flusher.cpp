#include "faultline/admin/audit_flusher.hpp"

#include <boost/asio/post.hpp>

namespace faultline::admin {

AuditFlusher::AuditFlusher(boost::asio::io_context& ioc, AuditLog& log, std::chrono::milliseconds period)
    : log_(log), period_(period), strand_(boost::asio::make_strand(ioc)), timer_(strand_) {}

void AuditFlusher::start() {
  boost::asio::post(strand_, [this] {
    stopped_ = false;
    wait();
  });
}

void AuditFlusher::stop() {
  boost::asio::post(strand_, [this] {
    stopped_ = true;
    timer_.cancel();
  });
}

void AuditFlusher::wait() {
  timer_.expires_after(period_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    log_.flush();
    wait();
  });
}

}  // namespace faultline::admin
