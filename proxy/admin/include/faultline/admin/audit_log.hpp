#pragma once
// The proxy's audit log: one JSON line per request, appended to a file and kept in a bounded
// in-memory ring so the admin API can serve "everything since seq N" without rereading the file.

#include "faultline/audit/record.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace faultline::admin {

struct AuditLogOptions {
  // File the lines are appended to (created if missing, never truncated). Empty: memory only.
  std::string path{};
  // Records kept in memory for since() queries, at most this many and at most ring_bytes of
  // serialized lines (a client controls a record's size: its target may be 1 MiB); the oldest
  // ones are evicted first. The newest record is always kept, whatever its size.
  std::size_t ring_capacity = 65536;
  std::size_t ring_bytes = 64 * 1024 * 1024;
  // The file buffer is written out when it holds this many bytes ...
  std::size_t flush_bytes = 64 * 1024;
  // ... or when an append finds the last write older than this (by `clock`). Zero: every append.
  std::chrono::milliseconds flush_interval{1000};
  // Time source for unset record timestamps and for flush_interval. Injectable for tests.
  std::function<std::chrono::system_clock::time_point()> clock = [] { return std::chrono::system_clock::now(); };
};

// Answer to since(): the retained records after a sequence number, oldest first.
struct AuditSince {
  std::vector<std::string> lines;  // serialized records, each ending in '\n'
  // True when records the caller asked for were already evicted from the ring (or never
  // existed in this process's ring): lines then start at first_retained, not at since + 1.
  bool truncated = false;
  std::uint64_t first_retained = 0;  // oldest seq still in the ring; 0 when the ring is empty
  std::uint64_t last_seq = 0;        // newest seq assigned so far; 0 when nothing was appended
  std::uint64_t last_returned = 0;   // seq of the last line; 0 when `lines` is empty
  // True when `limit` cut the answer short: ask again with since = last_returned.
  bool more = false;
};

class AuditLog {
 public:
  // Throws std::system_error (naming the path) when the file cannot be opened for appending.
  explicit AuditLog(AuditLogOptions options = {});
  ~AuditLog();  // flushes
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Assigns the next seq (1, 2, 3, ...), stamps ts when unset, stores the record; returns seq.
  // Never throws for I/O: a failed write is logged once and reported by write_failed().
  std::uint64_t append(const audit::Record& record);

  // Records with seq > since, at most `limit` of them.
  AuditSince since(std::uint64_t since, std::size_t limit = SIZE_MAX) const;
  // Records still retained, whatever was evicted before them (never truncated).
  AuditSince retained(std::size_t limit = SIZE_MAX) const;

  // Writes buffered lines to the file now (also done on the bounds above, on destruction and,
  // in faultline-proxy, every second by an AuditFlusher). When the file at `path` was removed or
  // replaced it is created again first, so records keep reaching `path`.
  void flush();
  // Why records are not reaching the file right now ("" when they are): a failed write (disk
  // full, I/O error) or a file that was removed and cannot be created again. Cleared by the next
  // successful write (or reopen). The ring keeps working either way.
  std::string write_problem() const;
  bool write_failed() const { return !write_problem().empty(); }
  std::uint64_t last_seq() const;

 private:
  struct Entry {
    std::uint64_t seq;
    std::string line;
  };
  AuditSince collect(std::uint64_t after, std::size_t limit) const;
  void flush_locked();
  bool reopen_if_replaced_locked();
  void fail_locked(const std::string& what, int err);
  void recover_locked();

  AuditLogOptions options_;
  int fd_ = -1;
  mutable std::mutex mutex_;
  std::uint64_t next_seq_ = 1;
  std::deque<Entry> ring_;
  std::size_t ring_bytes_ = 0;  // of the lines in ring_
  std::string file_buffer_;
  std::size_t buffered_records_ = 0;
  std::chrono::system_clock::time_point last_flush_;
  std::string problem_;                  // "" while records reach the file
  std::uint64_t unwritten_records_ = 0;  // dropped from the file since problem_ was set
  bool partial_line_ = false;            // a failed write left a line without its '\n' in the file
};

}  // namespace faultline::admin
