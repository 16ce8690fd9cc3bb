#include "faultline/admin/audit_log.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <system_error>

namespace faultline::admin {

namespace {

struct WriteResult {
  int error = 0;            // errno of the failed write(2); 0 when everything was written
  std::size_t written = 0;  // bytes that reached the file
};

// write(2) until everything is out or a real error happens.
WriteResult write_all(int fd, std::string_view data) {
  WriteResult result;
  while (result.written < data.size()) {
    ssize_t n = ::write(fd, data.data() + result.written, data.size() - result.written);
    if (n < 0) {
      if (errno == EINTR) continue;
      result.error = errno;
      return result;
    }
    result.written += static_cast<std::size_t>(n);
  }
  return result;
}

int open_for_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// True when `path` no longer names the file open as `fd`: it was removed, or renamed away (log
// rotation) and perhaps replaced. Writing on would put records where nobody looks for them.
bool replaced(int fd, const std::string& path) {
  struct stat open_file {};
  struct stat at_path {};
  if (::fstat(fd, &open_file) != 0) return false;
  if (::stat(path.c_str(), &at_path) != 0) return true;
  return open_file.st_dev != at_path.st_dev || open_file.st_ino != at_path.st_ino;
}

}  // namespace

AuditLog::AuditLog(AuditLogOptions options) : options_(std::move(options)) {
  if (!options_.path.empty()) {
    fd_ = open_for_append(options_.path);
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

std::uint64_t AuditLog::append(const audit::Record& record) {
  std::lock_guard lock(mutex_);
  const auto now = options_.clock();
  const std::uint64_t seq = next_seq_++;
  const auto ts = record.ts == std::chrono::system_clock::time_point{} ? now : record.ts;
  std::string line = audit::to_json_line(record, seq, ts);
  if (!options_.path.empty()) {
    file_buffer_ += line;
    ++buffered_records_;
  }
  while (!ring_.empty() &&
         (ring_.size() >= options_.ring_capacity || ring_bytes_ + line.size() > options_.ring_bytes)) {
    ring_bytes_ -= ring_.front().line.size();
    ring_.pop_front();
  }
  ring_bytes_ += line.size();
  ring_.push_back({seq, std::move(line)});
  if (file_buffer_.size() >= options_.flush_bytes || now - last_flush_ >= options_.flush_interval) {
    flush_locked();
  }
  return seq;
}

void AuditLog::flush() {
  std::lock_guard lock(mutex_);
  flush_locked();
}

void AuditLog::flush_locked() {
  last_flush_ = options_.clock();
  if (options_.path.empty()) return;
  if (reopen_if_replaced_locked() && !file_buffer_.empty()) {
    // After a write that stopped mid-line, start on a fresh line so the file stays JSON lines.
    if (partial_line_) file_buffer_.insert(0, "\n");
    WriteResult result = write_all(fd_, file_buffer_);
    if (result.written > 0) partial_line_ = file_buffer_[result.written - 1] != '\n';
    if (result.error == 0) {
      recover_locked();
    } else {
      unwritten_records_ += buffered_records_;
      fail_locked("writing failed", result.error);
    }
  } else {
    unwritten_records_ += buffered_records_;  // no file to write to: these are lost to it
  }
  file_buffer_.clear();
  buffered_records_ = 0;
}

bool AuditLog::reopen_if_replaced_locked() {
  if (fd_ >= 0 && !replaced(fd_, options_.path)) return true;
  if (fd_ >= 0) ::close(fd_);  // frees the disk space of a removed file
  fd_ = open_for_append(options_.path);
  if (fd_ < 0) {
    fail_locked("the file was removed and cannot be created again", errno);
    return false;
  }
  spdlog::warn("audit log: {} was removed or replaced; appending to a new file there", options_.path);
  partial_line_ = false;
  recover_locked();
  return true;
}

void AuditLog::fail_locked(const std::string& what, int err) {
  const bool first = problem_.empty();
  problem_ = "audit log " + options_.path + ": " + what + ": " + std::generic_category().message(err);
  // Logged once per episode: a full disk would otherwise flood the log.
  if (first) spdlog::error("{}; records stay available from the admin API until evicted from memory", problem_);
}

void AuditLog::recover_locked() {
  if (problem_.empty()) return;
  spdlog::info("audit log {}: writing works again ({} records were not written to the file)", options_.path,
               unwritten_records_);
  problem_.clear();
  unwritten_records_ = 0;
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

std::string AuditLog::write_problem() const {
  std::lock_guard lock(mutex_);
  if (problem_.empty() || unwritten_records_ == 0) return problem_;
  return problem_ + " (" + std::to_string(unwritten_records_) + " records not written to the file)";
}

std::uint64_t AuditLog::last_seq() const {
  std::lock_guard lock(mutex_);
  return next_seq_ - 1;
}

}  // namespace faultline::admin
