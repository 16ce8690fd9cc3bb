#include "faultline/admin/audit_log.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace faultline::admin {

namespace {

// write(2) until everything is out or a real error happens. Returns 0 or errno.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

AuditLog::AuditLog(AuditLogOptions options) : options_(std::move(options)) {
  if (!options_.path.empty()) {
    fd_ = ::open(options_.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw std::system_error(errno, std::generic_category(),
                              "audit log: cannot open " + options_.path + " for appending");
    }
  }
  if (options_.ring_capacity == 0) options_.ring_capacity = 1;
  last_flush_ = options_.clock();
}

AuditLog::~AuditLog() {
  {
    std::lock_guard lock(mutex_);
    flush_locked();
  }
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t AuditLog::append(AuditRecord record) {
  std::lock_guard lock(mutex_);
  const auto now = options_.clock();
  record.seq = next_seq_++;
  if (record.ts == std::chrono::system_clock::time_point{}) record.ts = now;
  std::string line = to_json_line(record);
  if (fd_ >= 0) file_buffer_ += line;
  if (ring_.size() == options_.ring_capacity) ring_.pop_front();
  ring_.push_back({record.seq, std::move(line)});
  if (file_buffer_.size() >= options_.flush_bytes || now - last_flush_ >= options_.flush_interval) {
    flush_locked();
  }
  return record.seq;
}

void AuditLog::flush() {
  std::lock_guard lock(mutex_);
  flush_locked();
}

void AuditLog::flush_locked() {
  last_flush_ = options_.clock();
  if (fd_ < 0 || file_buffer_.empty()) return;
  if (int err = write_all(fd_, file_buffer_); err != 0 && !write_failed_) {
    write_failed_ = true;  // log once: a full disk would otherwise flood the log
    spdlog::error("audit log: writing {} failed: {}; records stay available from the admin API "
                  "until evicted from memory",
                  options_.path, std::generic_category().message(err));
  }
  file_buffer_.clear();
}

AuditSince AuditLog::since(std::uint64_t since, std::size_t limit) const {
  std::lock_guard lock(mutex_);
  AuditSince out = collect(since, limit);
  // Asked for seq since+1, but the ring starts later: something in between is gone.
  const std::uint64_t first_wanted = since + 1;
  out.truncated = first_wanted < next_seq_ && (ring_.empty() || ring_.front().seq > first_wanted);
  return out;
}

AuditSince AuditLog::retained(std::size_t limit) const {
  std::lock_guard lock(mutex_);
  return collect(0, limit);
}

AuditSince AuditLog::collect(std::uint64_t after, std::size_t limit) const {
  AuditSince out;
  out.last_seq = next_seq_ - 1;
  out.first_retained = ring_.empty() ? 0 : ring_.front().seq;
  if (ring_.empty() || after >= ring_.back().seq) return out;
  // Seqs in the ring are consecutive, so the first wanted entry is found by arithmetic.
  std::size_t start = after < ring_.front().seq ? 0 : static_cast<std::size_t>(after + 1 - ring_.front().seq);
  std::size_t available = ring_.size() - start;
  std::size_t count = std::min(available, limit);
  out.more = count < available;
  out.lines.reserve(count);
  for (std::size_t i = start; i < start + count; ++i) out.lines.push_back(ring_[i].line);
  if (count > 0) out.last_returned = ring_[start + count - 1].seq;
  return out;
}

bool AuditLog::write_failed() const {
  std::lock_guard lock(mutex_);
  return write_failed_;
}

std::uint64_t AuditLog::last_seq() const {
  std::lock_guard lock(mutex_);
  return next_seq_ - 1;
}

}  // namespace faultline::admin
