// RunStaged (server/staged_transfer.h): the chunk loop that GetObject and ReceiveBody share.
// Chunks of 1 MiB run their I/O step on the helper thread, smaller ones inline; both are run.
#include "server/staged_transfer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "aobj/status.h"
#include "exec/helpers.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

// The octet at `offset` of the test body.
uint8_t At(uint64_t offset) { return static_cast<uint8_t>((offset * 7 + offset / 251) & 0xff); }

struct Record {
  absl::Mutex mu;
  std::vector<std::string> events;  // "io 0", "transfer 0", ... in the order they ended
  void Add(const std::string& e) {
    absl::MutexLock l(&mu);
    events.push_back(e);
  }
};

class StagedTransferTest : public ::testing::TestWithParam<size_t> {};

TEST_P(StagedTransferTest, AGetReadsEachChunkBeforeItTravelsAndDeliversTheBodyInOrder) {
  const size_t chunk = GetParam();
  StagingPool pool(chunk);
  const uint64_t size = 3 * chunk + chunk / 3;  // four chunks, the last one short
  std::vector<uint8_t> out(size, 0);
  Record rec;
  uint64_t next_read = 0;  // reads come strictly in order
  auto read = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    EXPECT_EQ(off, next_read);
    next_read = off + n;
    for (uint64_t i = 0; i < n; ++i) buf[i] = At(off + i);
    rec.Add("io " + std::to_string(off / chunk));
    return absl::OkStatus();
  };
  auto send = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    std::memcpy(out.data() + off, buf, n);
    rec.Add("transfer " + std::to_string(off / chunk));
    return absl::OkStatus();
  };
  ASSERT_TRUE(RunStaged(pool, size, StageOrder::kIoFirst, {}, send, read).ok());
  for (uint64_t i = 0; i < size; ++i) ASSERT_EQ(out[i], At(i)) << "octet " << i;
  EXPECT_EQ(next_read, size);
  // Every chunk was read before it travelled.
  for (int k = 0; k < 4; ++k) {
    const auto io = std::find(rec.events.begin(), rec.events.end(), "io " + std::to_string(k));
    const auto tr =
        std::find(rec.events.begin(), rec.events.end(), "transfer " + std::to_string(k));
    ASSERT_NE(io, rec.events.end());
    ASSERT_NE(tr, rec.events.end());
    EXPECT_LT(io, tr) << "chunk " << k;
  }
}

TEST_P(StagedTransferTest, APutChecksEachChunkAfterItArrivedInOrder) {
  const size_t chunk = GetParam();
  StagingPool pool(chunk);
  const uint64_t size = 2 * chunk + 5;
  std::vector<uint8_t> stored;
  auto receive = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    for (uint64_t i = 0; i < n; ++i) buf[i] = At(off + i);
    return absl::OkStatus();
  };
  auto store = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    EXPECT_EQ(off, stored.size());  // in order, each chunk once
    stored.insert(stored.end(), buf, buf + n);
    return absl::OkStatus();
  };
  ASSERT_TRUE(RunStaged(pool, size, StageOrder::kTransferFirst, {}, receive, store).ok());
  ASSERT_EQ(stored.size(), size);
  for (uint64_t i = 0; i < size; ++i) ASSERT_EQ(stored[i], At(i)) << "octet " << i;
}

TEST_P(StagedTransferTest, AFailedTransferEndsTheLoopAndNoLaterStepRuns) {
  const size_t chunk = GetParam();
  StagingPool pool(chunk);
  const uint64_t size = 5 * chunk;
  int transfers = 0, ios = 0;
  auto transfer = [&](uint8_t*, uint64_t off, uint64_t) -> absl::Status {
    ++transfers;
    if (off / chunk == 2) return MakeError(ErrorCode::kTransferFailed, "chunk 2 failed");
    return absl::OkStatus();
  };
  auto io = [&](uint8_t*, uint64_t off, uint64_t) -> absl::Status {
    ++ios;
    EXPECT_LT(off / chunk, 2u) << "a PUT's chunk is stored only after it arrived";
    return absl::OkStatus();
  };
  const absl::Status st = RunStaged(pool, size, StageOrder::kTransferFirst, {}, transfer, io);
  EXPECT_EQ(ErrorCodeOf(st), ErrorCode::kTransferFailed);
  EXPECT_EQ(transfers, 3);
  EXPECT_EQ(ios, 2);
}

TEST_P(StagedTransferTest, AFailedReadIsReportedAndItsChunkNeverTravels) {
  const size_t chunk = GetParam();
  StagingPool pool(chunk);
  const uint64_t size = 5 * chunk;
  std::vector<uint64_t> sent;
  auto read = [&](uint8_t*, uint64_t off, uint64_t) -> absl::Status {
    if (off / chunk == 2) return MakeError(ErrorCode::kStorageError, "short object");
    return absl::OkStatus();
  };
  auto send = [&](uint8_t*, uint64_t off, uint64_t) -> absl::Status {
    sent.push_back(off / chunk);
    return absl::OkStatus();
  };
  const absl::Status st = RunStaged(pool, size, StageOrder::kIoFirst, {}, send, read);
  EXPECT_EQ(ErrorCodeOf(st), ErrorCode::kStorageError);
  EXPECT_EQ(sent, (std::vector<uint64_t>{0, 1}));
}

INSTANTIATE_TEST_SUITE_P(Chunks, StagedTransferTest,
                         ::testing::Values(size_t{4096}, size_t{kOverlapMinBytes}),
                         [](const auto& info) {
                           return info.param >= kOverlapMinBytes ? "Overlapped" : "Inline";
                         });

TEST(StagedTransferDirectTest, ADirectBufferIsUsedInPlaceOfStaging) {
  StagingPool pool(4096);
  std::vector<uint8_t> direct(3 * 4096 + 1);
  auto receive = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    EXPECT_EQ(buf, direct.data() + off);
    std::memset(buf, 0xab, n);
    return absl::OkStatus();
  };
  uint64_t seen = 0;
  auto io = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    EXPECT_EQ(buf, direct.data() + off);
    seen += n;
    return absl::OkStatus();
  };
  ASSERT_TRUE(RunStaged(pool, direct.size(), StageOrder::kTransferFirst, absl::MakeSpan(direct),
                        receive, io)
                  .ok());
  EXPECT_EQ(seen, direct.size());
  for (uint8_t b : direct) ASSERT_EQ(b, 0xab);
}

TEST(StagingPoolTest, ALeaseGivesItsBufferBackOnEveryReturn) {
  StagingPool pool(4096);
  uint8_t* first = nullptr;
  {
    const StagingPool::Lease lease = pool.Lend();
    first = lease.get();
    ASSERT_NE(first, nullptr);
    const StagingPool::Lease second = pool.Lend();
    EXPECT_NE(second.get(), first) << "a lent buffer is not lent twice";
  }
  auto early_return = [&]() -> absl::Status {
    const StagingPool::Lease lease = pool.Lend();
    if (lease.get() != nullptr) return absl::InternalError("an early return");
    return absl::OkStatus();
  };
  EXPECT_FALSE(early_return().ok());
  // Both buffers went back: the next two leases reuse them (pre-faulted pages), whichever first.
  const StagingPool::Lease a = pool.Lend();
  const StagingPool::Lease b = pool.Lend();
  EXPECT_TRUE(a.get() == first || b.get() == first);
}

TEST(RunInParallelTest, RunsEveryIndexOnceAndTheFirstOnTheCaller) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4}}) {
    std::vector<std::atomic<int>> runs(n);
    std::atomic<bool> zero_on_caller{false};
    const std::thread::id caller = std::this_thread::get_id();
    RunInParallel(n, [&](size_t k) {
      runs[k].fetch_add(1);
      if (k == 0) zero_on_caller = std::this_thread::get_id() == caller;
    });
    for (size_t k = 0; k < n; ++k) EXPECT_EQ(runs[k].load(), 1) << "index " << k << " of " << n;
    if (n > 0) {
      EXPECT_TRUE(zero_on_caller.load());
    }
  }
}

TEST(StartDetachedTest, RunsTheWorkOnAThreadOfItsOwnThatNobodyJoins) {
  auto done = std::make_shared<absl::Notification>();
  auto ran_on = std::make_shared<std::thread::id>();
  ASSERT_TRUE(StartDetached([done, ran_on] {
    *ran_on = std::this_thread::get_id();
    done->Notify();
  }));
  ASSERT_TRUE(done->WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_NE(*ran_on, std::this_thread::get_id());
}

// A thread that finished its work takes the next (no new thread), works that overlap get a
// thread each, and an idle thread ends after its linger.
TEST(ReusedThreadsTest, AnIdleThreadTakesTheNextWorkAndEndsAfterItsLinger) {
  auto threads = std::make_unique<ReusedThreads>(absl::Seconds(1));
  auto until = [](const std::function<bool()>& what) {
    for (int i = 0; i < 10000 && !what(); ++i) absl::SleepFor(absl::Milliseconds(1));
    return what();
  };
  auto first = std::make_shared<std::thread::id>();
  ASSERT_TRUE(threads->Start([first] { *first = std::this_thread::get_id(); }));
  ASSERT_TRUE(until([&] { return threads->idle_threads() == 1; }));
  auto second = std::make_shared<std::thread::id>();
  absl::Notification ran;
  ASSERT_TRUE(threads->Start([second, &ran] {
    *second = std::this_thread::get_id();
    ran.Notify();
  }));
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(*second, *first) << "the idle thread should have taken the work";
  EXPECT_NE(*second, std::this_thread::get_id());

  // Two works that can end only while both run: one idle thread is not enough, so a second
  // starts.
  ASSERT_TRUE(until([&] { return threads->idle_threads() == 1; }));
  absl::Mutex mu;
  int running = 0;
  auto both = [&] {
    absl::MutexLock l(&mu);
    ++running;
    mu.AwaitWithTimeout(absl::Condition(
                            +[](int* r) { return *r == 2; }, &running),
                        absl::Seconds(30));
  };
  absl::Notification a_done, b_done;
  ASSERT_TRUE(threads->Start([&] {
    both();
    a_done.Notify();
  }));
  ASSERT_TRUE(threads->Start([&] {
    both();
    b_done.Notify();
  }));
  ASSERT_TRUE(a_done.WaitForNotificationWithTimeout(absl::Seconds(40)));
  ASSERT_TRUE(b_done.WaitForNotificationWithTimeout(absl::Seconds(40)));
  {
    absl::MutexLock l(&mu);
    EXPECT_EQ(running, 2);
  }
  // Both linger, then end.
  ASSERT_TRUE(until([&] { return threads->idle_threads() == 2; }));
  EXPECT_TRUE(until([&] { return threads->idle_threads() == 0; }))
      << threads->idle_threads() << " threads still idle after their linger";
  threads.reset();  // nothing left to end; must not wait
}

TEST(OverlapTest, WaitReturnsWhatTheWorkReported) {
  Overlap overlap;
  EXPECT_TRUE(overlap.Wait().ok());  // nothing ran
  overlap.Run([] { return MakeError(ErrorCode::kStorageError, "disk"); });
  EXPECT_EQ(ErrorCodeOf(overlap.Wait()), ErrorCode::kStorageError);
  EXPECT_TRUE(overlap.Wait().ok());  // reported once
}

}  // namespace
}  // namespace aobj
