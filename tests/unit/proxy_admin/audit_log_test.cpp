#include "faultline/admin/audit_log.hpp"

#include "faultline/admin/audit_flusher.hpp"

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "files.hpp"

namespace faultline::admin {
namespace {

using namespace std::chrono;
namespace fs = std::filesystem;

// A system clock that only moves when the test says so.
struct FakeClock {
  std::shared_ptr<std::atomic<system_clock::time_point>> now =
      std::make_shared<std::atomic<system_clock::time_point>>(sys_days{year{2026} / November / 30} + hours{15});
  std::function<system_clock::time_point()> fn() const {
    return [now = now] { return now->load(); };
  }
  void advance(system_clock::duration d) { now->store(now->load() + d); }
};

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

audit::Record request(std::string path) {
  audit::Record r;
  r.method = "GET";
  r.path = std::move(path);
  r.verb = "list";
  r.resource = "pods";
  r.status = 200;
  r.upstream_status = 200;
  return r;
}

std::uint64_t seq_of(const std::string& line) { return boost::json::parse(line).at("seq").to_number<std::uint64_t>(); }

std::vector<std::uint64_t> seqs(const AuditSince& s) {
  std::vector<std::uint64_t> out;
  for (const auto& l : s.lines) out.push_back(seq_of(l));
  return out;
}

TEST(AuditLog, AssignsIncreasingSeqFromOne) {
  AuditLog log;
  EXPECT_EQ(log.last_seq(), 0u);
  EXPECT_EQ(log.append(request("/a")), 1u);
  EXPECT_EQ(log.append(request("/b")), 2u);
  audit::Record preset = request("/c");
  preset.seq = 99;  // the caller's seq is ignored: the log owns the sequence
  EXPECT_EQ(log.append(preset), 3u);
  EXPECT_EQ(seqs(log.since(0)), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST(AuditLog, StampsUnsetTimestampsFromItsClockAndKeepsGivenOnes) {
  FakeClock clock;
  AuditLog log({.clock = clock.fn()});
  log.append(request("/unset"));
  audit::Record given = request("/given");
  given.ts = sys_days{year{2020} / January / 1};
  log.append(given);
  const auto lines = log.since(0).lines;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(boost::json::parse(lines[0]).at("ts").as_string(), "2026-11-30T15:00:00.000000Z");
  EXPECT_EQ(boost::json::parse(lines[1]).at("ts").as_string(), "2020-01-01T00:00:00.000000Z");
}

TEST(AuditLog, SinceReturnsRecordsAfterTheGivenSeq) {
  AuditLog log;
  for (int i = 0; i < 5; ++i) log.append(request("/r" + std::to_string(i)));
  AuditSince s = log.since(2);
  EXPECT_EQ(seqs(s), (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_FALSE(s.truncated);
  EXPECT_FALSE(s.more);
  EXPECT_EQ(s.last_seq, 5u);
  EXPECT_EQ(s.last_returned, 5u);
  EXPECT_EQ(s.first_retained, 1u);
  EXPECT_EQ(boost::json::parse(s.lines[0]).at("path").as_string(), "/r2");

  EXPECT_TRUE(log.since(5).lines.empty());
  AuditSince future = log.since(1000);  // nothing yet, and nothing lost
  EXPECT_TRUE(future.lines.empty());
  EXPECT_FALSE(future.truncated);
}

TEST(AuditLog, EvictedRecordsAreReportedAsTruncated) {
  AuditLog log({.ring_capacity = 3});
  for (int i = 0; i < 5; ++i) log.append(request("/r"));
  AuditSince all = log.since(0);
  EXPECT_TRUE(all.truncated) << "seq 1 and 2 were evicted; the answer must say so";
  EXPECT_EQ(all.first_retained, 3u);
  EXPECT_EQ(seqs(all), (std::vector<std::uint64_t>{3, 4, 5}));

  EXPECT_TRUE(log.since(1).truncated);
  AuditSince from_retained = log.since(2);  // asks for 3.., all still there
  EXPECT_FALSE(from_retained.truncated);
  EXPECT_EQ(seqs(from_retained), (std::vector<std::uint64_t>{3, 4, 5}));

  AuditSince retained = log.retained();
  EXPECT_FALSE(retained.truncated);
  EXPECT_EQ(seqs(retained), (std::vector<std::uint64_t>{3, 4, 5}));
}

TEST(AuditLog, TheRingHoldsAtMostItsBytesOfRecordsAndAlwaysTheNewest) {
  auto record_of_size = [](std::size_t name_bytes) {
    return request("/api/v1/namespaces/x/configmaps/" + std::string(name_bytes, 'a'));
  };
  // Every record of this size serializes to the same length (seqs 1-10 have as many digits).
  AuditLog probe;
  probe.append(record_of_size(1000));
  const std::size_t line = probe.retained().lines.front().size();
  AuditLog log({.ring_capacity = 100, .ring_bytes = 3 * line + line / 2});
  for (int i = 0; i < 9; ++i) log.append(record_of_size(1000));
  AuditSince held = log.retained();
  ASSERT_EQ(held.lines.size(), 3u) << "3.5 lines' worth of bytes hold 3 records";
  EXPECT_EQ(held.first_retained, 7u);
  EXPECT_EQ(held.last_seq, 9u);
  EXPECT_TRUE(log.since(0).truncated);
  // A record larger than the whole bound is still held, alone, until the next one comes.
  log.append(record_of_size(10 * line));
  held = log.retained();
  ASSERT_EQ(held.lines.size(), 1u);
  EXPECT_EQ(held.first_retained, 10u);
  log.append(record_of_size(1000));
  held = log.retained();
  ASSERT_EQ(held.lines.size(), 1u);
  EXPECT_EQ(held.first_retained, 11u);
}

TEST(AuditLog, LimitCutsTheAnswerAndSaysThereIsMore) {
  AuditLog log;
  for (int i = 0; i < 5; ++i) log.append(request("/r"));
  AuditSince first = log.since(0, 2);
  EXPECT_EQ(seqs(first), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_TRUE(first.more);
  EXPECT_EQ(first.last_returned, 2u);
  AuditSince second = log.since(first.last_returned, 2);
  EXPECT_EQ(seqs(second), (std::vector<std::uint64_t>{3, 4}));
  AuditSince last = log.since(second.last_returned, 2);
  EXPECT_EQ(seqs(last), (std::vector<std::uint64_t>{5}));
  EXPECT_FALSE(last.more);
}

TEST(AuditLog, BuffersFileWritesUntilShutdown) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  FakeClock clock;  // frozen: the interval bound never triggers
  {
    AuditLog log({.path = path.string(), .flush_bytes = 1 << 20, .clock = clock.fn()});
    for (int i = 0; i < 10; ++i) log.append(request("/r"));
    EXPECT_TRUE(read_lines(path).empty()) << "10 small records are below both flush bounds";
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 10u) << "shutdown must flush the buffer";
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(seq_of(lines[i]), i + 1);
}

TEST(AuditLog, FlushesWhenTheBufferReachesItsBound) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  FakeClock clock;
  AuditLog log({.path = path.string(), .flush_bytes = 1, .clock = clock.fn()});
  log.append(request("/a"));
  EXPECT_EQ(read_lines(path).size(), 1u);
  log.append(request("/b"));
  EXPECT_EQ(read_lines(path).size(), 2u);
}

TEST(AuditLog, FlushesWhenTheIntervalHasPassed) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  FakeClock clock;
  AuditLog log({.path = path.string(), .flush_bytes = 1 << 20, .flush_interval = seconds{1}, .clock = clock.fn()});
  log.append(request("/a"));
  EXPECT_TRUE(read_lines(path).empty());
  clock.advance(milliseconds{1500});
  log.append(request("/b"));
  EXPECT_EQ(read_lines(path).size(), 2u);
  log.append(request("/c"));  // the interval restarted at the last flush
  EXPECT_EQ(read_lines(path).size(), 2u);
  log.flush();
  EXPECT_EQ(read_lines(path).size(), 3u);
}

TEST(AuditLog, AppendsToAnExistingFile) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  { std::ofstream(path) << "{\"earlier\":true}\n"; }
  { AuditLog(AuditLogOptions{.path = path.string()}).append(request("/a")); }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "{\"earlier\":true}");
  EXPECT_EQ(seq_of(lines[1]), 1u);
}

TEST(AuditLog, UnopenablePathThrowsNamingIt) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const std::string path = (dir.path() / "no-such-dir/audit.jsonl").string();
  try {
    AuditLog log({.path = path});
    FAIL() << "opened " << path;
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(AuditLog, WriteFailureIsReportedAndTheRingKeepsWorking) {
  AuditLog log({.path = "/dev/full", .flush_bytes = 1});
  EXPECT_FALSE(log.write_failed());
  log.append(request("/a"));
  EXPECT_TRUE(log.write_failed()) << "ENOSPC from /dev/full must not go unnoticed";
  log.append(request("/b"));
  EXPECT_EQ(seqs(log.since(0)), (std::vector<std::uint64_t>{1, 2}));
}

TEST(AuditLog, WriteProblemNamesTheFileTheErrorAndTheRecordsNotWritten) {
  AuditLog log({.path = "/dev/full", .flush_bytes = 1});
  EXPECT_EQ(log.write_problem(), "");
  log.append(request("/a"));
  log.append(request("/b"));
  EXPECT_EQ(log.write_problem(),
            "audit log /dev/full: writing failed: No space left on device (2 records not written to the file)");
}

TEST(AuditLog, RemovedFileIsCreatedAgainAndKeepsReceivingRecords) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  AuditLog log({.path = path.string(), .flush_bytes = 1});
  log.append(request("/before"));
  ASSERT_EQ(read_lines(path).size(), 1u);
  fs::remove(path);
  log.append(request("/after"));
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u) << "the record after the removal must land in a new file at the same path";
  EXPECT_EQ(seq_of(lines[0]), 2u);
  EXPECT_EQ(log.write_problem(), "");
}

TEST(AuditLog, FileThatCannotBeCreatedAgainIsAProblemUntilItCan) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path folder = dir.path() / "logs";
  const fs::path path = folder / "audit.jsonl";
  fs::create_directories(folder);
  AuditLog log({.path = path.string(), .flush_bytes = 1});
  fs::remove_all(folder);
  log.append(request("/lost"));
  EXPECT_EQ(log.write_problem(), "audit log " + path.string() +
                                     ": the file was removed and cannot be created again: No such file or "
                                     "directory (1 records not written to the file)");
  fs::create_directories(folder);
  log.flush();
  EXPECT_EQ(log.write_problem(), "") << "healthy again once the file can be created";
  log.append(request("/kept"));
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(seq_of(lines[0]), 2u);
}

TEST(AuditFlusher, WritesABufferedRecordOutWithoutAnotherAppend) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  FakeClock clock;  // frozen: no append ever finds the flush interval passed
  AuditLog log({.path = path.string(), .flush_bytes = 1 << 20, .clock = clock.fn()});
  boost::asio::io_context ioc;
  AuditFlusher flusher(ioc, log, milliseconds{10});
  flusher.start();
  std::thread runner([&ioc] { ioc.run(); });
  log.append(request("/quiet"));
  // Generous deadline, no timing claim: the record only has to show up at all.
  const auto deadline = steady_clock::now() + seconds{30};
  while (read_lines(path).empty() && steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds{10});
  flusher.stop();
  runner.join();  // stop() leaves the io_context without work
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u) << "the flusher must write the record although no append followed";
  EXPECT_EQ(seq_of(lines[0]), 1u);
}

TEST(AuditLog, ConcurrentAppendsGetUniqueSeqsWrittenInOrder) {
  faultline::testing::TempDir dir{"faultline-audit-test"};
  const fs::path path = dir.path() / "audit.jsonl";
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  {
    AuditLog log({.path = path.string(), .ring_capacity = 100, .flush_bytes = 4096});
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&log, t] {
        for (int i = 0; i < kPerThread; ++i) log.append(request("/t" + std::to_string(t)));
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(log.last_seq(), std::uint64_t{kThreads * kPerThread});
    AuditSince tail = log.since(0);
    EXPECT_TRUE(tail.truncated);
    EXPECT_EQ(tail.lines.size(), 100u);
    EXPECT_EQ(seq_of(tail.lines.front()), std::uint64_t{kThreads * kPerThread - 99});
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), std::size_t{kThreads * kPerThread});
  for (std::size_t i = 0; i < lines.size(); ++i) {
    ASSERT_EQ(seq_of(lines[i]), i + 1) << "file order must be seq order";
  }
}

}  // namespace
}  // namespace faultline::admin
