// RequestScheduler (src/server/scheduler.h): fairness between principals and bounded queues
// (issue 16, control-plane probe findings 4 and 5; AOBJ-SEC-013, AOBJ-SEC-014). Tasks block on
// notifications the test controls, so every assertion is about order and counts, not timing.
#include "server/scheduler.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

// Holds the one thread of a single-thread scheduler until Open(), so that what is submitted
// meanwhile waits in the queue.
class Gate {
 public:
  explicit Gate(RequestScheduler& s) {
    EXPECT_TRUE(s.Submit("gate", 0, [this] {
                   started_.Notify();
                   open_.WaitForNotification();
                 }).ok());
    started_.WaitForNotification();
  }
  ~Gate() { Open(); }  // before the scheduler's Stop, should a test end early
  void Open() {
    if (!open_.HasBeenNotified()) open_.Notify();
  }

 private:
  absl::Notification started_, open_;
};

// One principal with more blocking requests than there are threads leaves threads for another:
// the other's request runs while every one of the first principal's is still blocked.
TEST(SchedulerTest, OnePrincipalCannotTakeEveryThread) {
  SchedulerLimits limits;
  limits.threads = 4;  // max_running_per_principal: 4 - 2
  RequestScheduler s(limits);
  EXPECT_EQ(s.limits().max_running_per_principal, 2);
  absl::Notification release;
  std::atomic<int> running{0}, most{0}, finished{0};
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(s.Submit("heavy", 0, [&] {
                   const int now = ++running;
                   int seen = most.load();
                   while (now > seen && !most.compare_exchange_weak(seen, now)) {
                   }
                   release.WaitForNotification();
                   --running;
                   ++finished;
                 }).ok());
  }
  // Two of them block on their threads (the most they may hold), the other eight wait.
  for (int i = 0; i < 3000 && running.load() < 2; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(running.load(), 2);
  absl::Notification other_ran;
  ASSERT_TRUE(s.Submit("light", 0, [&] { other_ran.Notify(); }).ok());
  EXPECT_TRUE(other_ran.WaitForNotificationWithTimeout(absl::Seconds(30)))
      << "the light principal's request waited behind the heavy one's";
  EXPECT_EQ(finished.load(), 0);
  EXPECT_LE(most.load(), 2) << "the heavy principal ran more than its share at once";
  release.Notify();
  s.Stop();
  EXPECT_EQ(finished.load(), 10) << "Stop runs what is queued";
  EXPECT_EQ(most.load(), 2);
}

// Waiting principals are served in turn, not in arrival order.
TEST(SchedulerTest, PrincipalsTakeTurns) {
  SchedulerLimits limits;
  limits.threads = 1;
  RequestScheduler s(limits);
  Gate gate(s);
  std::mutex mu;
  std::string order;
  for (char c : std::string("AAAB")) {
    ASSERT_TRUE(s.Submit(std::string(1, c), 0, [&, c] {
                   std::lock_guard<std::mutex> l(mu);
                   order += c;
                 }).ok());
  }
  ASSERT_TRUE(s.Submit("C", 0, [&] {
                 std::lock_guard<std::mutex> l(mu);
                 order += 'C';
               }).ok());
  gate.Open();
  s.Stop();
  EXPECT_EQ(order, "ABCAA");
}

// TryRunHere (a fast-path request that waits on nothing, spec 8.9) runs the task on the calling
// thread only where a request thread would start it at once, and counts it as running: not past
// the principal's cap, not beside another running request of the principal (those run side by
// side on threads), not before a request that waits, not when every thread is busy.
TEST(SchedulerTest, TryRunHereRunsOnlyWhatAThreadWouldStartAtOnce) {
  SchedulerLimits limits;
  limits.threads = 4;  // max_running_per_principal: 2
  RequestScheduler s(limits);
  std::thread::id ran_on;
  uint64_t running_inside = 0;
  EXPECT_TRUE(s.TryRunHere("a", [&] {
    ran_on = std::this_thread::get_id();
    running_inside = s.stats().running;
  }));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(running_inside, 1u);
  EXPECT_EQ(s.stats().running, 0u);

  absl::Notification release;
  std::atomic<int> blocked{0};
  auto hold = [&] {
    ++blocked;
    release.WaitForNotification();
  };
  ASSERT_TRUE(s.Submit("a", 0, hold).ok());
  ASSERT_TRUE(s.Submit("a", 0, hold).ok());
  ASSERT_TRUE(s.Submit("c", 0, hold).ok());
  for (int i = 0; i < 3000 && blocked.load() < 3; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(blocked.load(), 3);
  bool ran = false;
  EXPECT_FALSE(s.TryRunHere("a", [&] { ran = true; })) << "past a's cap of two";
  EXPECT_FALSE(s.TryRunHere("c", [&] { ran = true; })) << "c runs one already";
  EXPECT_FALSE(ran);
  EXPECT_TRUE(s.TryRunHere("b", [&] { ran = true; })) << "b is below its cap, threads are idle";
  EXPECT_TRUE(ran);
  ASSERT_TRUE(s.Submit("a", 0, [] {}).ok());  // waits behind a's cap
  EXPECT_EQ(s.stats().queued, 1u);
  ran = false;
  EXPECT_FALSE(s.TryRunHere("b", [&] { ran = true; })) << "a request waits";
  EXPECT_FALSE(ran);
  release.Notify();
  s.Stop();
  EXPECT_FALSE(s.TryRunHere("b", [&] { ran = true; })) << "after Stop";
  EXPECT_FALSE(ran);

  SchedulerLimits two;
  two.threads = 2;  // max_running_per_principal: 1
  RequestScheduler busy(two);
  absl::Notification go;
  std::atomic<int> busy_blocked{0};
  for (const char* p : {"a", "b"}) {
    ASSERT_TRUE(busy.Submit(p, 0,
                            [&] {
                              ++busy_blocked;
                              go.WaitForNotification();
                            })
                    .ok());
  }
  for (int i = 0; i < 3000 && busy_blocked.load() < 2; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(busy_blocked.load(), 2);
  EXPECT_FALSE(busy.TryRunHere("c", [&] { ran = true; })) << "every thread is busy";
  EXPECT_FALSE(ran);
  go.Notify();
  busy.Stop();
}

// The queue bounds answer SLOW_DOWN at once: in all, per principal, and in bytes; nothing
// refused is ever run, and a request larger than the byte budget gets in when nothing waits.
TEST(SchedulerTest, QueuesAreBoundedWithSlowDown) {
  SchedulerLimits limits;
  limits.threads = 1;
  limits.max_queued = 4;
  limits.max_queued_per_principal = 2;
  limits.max_queued_bytes = 1000;
  RequestScheduler s(limits);
  Gate gate(s);
  std::atomic<int> ran{0}, refused_ran{0};
  auto counted = [&] { ++ran; };
  auto never = [&] { ++refused_ran; };
  EXPECT_TRUE(s.Submit("a", 0, counted).ok());
  EXPECT_TRUE(s.Submit("a", 0, counted).ok());
  const absl::Status per = s.Submit("a", 0, never);
  EXPECT_EQ(ErrorCodeOf(per), ErrorCode::kSlowDown) << "per principal";
  EXPECT_NE(per.message().find("this access key"), std::string::npos) << per;
  EXPECT_TRUE(s.Submit("b", 600, counted).ok());
  EXPECT_EQ(ErrorCodeOf(s.Submit("c", 500, never)), ErrorCode::kSlowDown) << "bytes";
  EXPECT_EQ(s.stats().queued_bytes, 600u);
  EXPECT_TRUE(s.Submit("c", 0, counted).ok());
  EXPECT_EQ(ErrorCodeOf(s.Submit("d", 0, never)), ErrorCode::kSlowDown) << "in all";
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.queued, 4u);
  EXPECT_EQ(st.running, 1u);
  EXPECT_EQ(st.rejected, 3u);
  gate.Open();
  s.Stop();
  EXPECT_EQ(ran.load(), 4);
  EXPECT_EQ(refused_ran.load(), 0);
  EXPECT_EQ(ErrorCodeOf(s.Submit("a", 0, never)), ErrorCode::kSlowDown) << "after Stop";
  EXPECT_EQ(s.stats().queued_bytes, 0u);

  // A request larger than the whole byte budget is not refused forever: it gets in alone.
  RequestScheduler t(limits);
  Gate t_gate(t);
  EXPECT_TRUE(t.Submit("a", 5000, counted).ok());
  EXPECT_EQ(ErrorCodeOf(t.Submit("b", 1, never)), ErrorCode::kSlowDown);
  t_gate.Open();
  t.Stop();
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(refused_ran.load(), 0);
}

// AOBJ-FLO-009: the pressure behind the grant of credits is the fullest of the server's queue
// and the principal's own, so that one principal filling its share lowers its own grant first.
TEST(SchedulerTest, PressureIsTheFullestQueueOfThePrincipal) {
  SchedulerLimits limits;
  limits.threads = 1;
  limits.max_queued = 4;
  limits.max_queued_per_principal = 2;
  RequestScheduler s(limits);
  EXPECT_EQ(s.Pressure("a"), 0.0);
  Gate gate(s);  // the one thread is busy: what follows waits
  ASSERT_TRUE(s.Submit("a", 0, [] {}).ok());
  EXPECT_DOUBLE_EQ(s.Pressure("a"), 0.5);   // its own queue: 1 of 2
  EXPECT_DOUBLE_EQ(s.Pressure("b"), 0.25);  // the server's: 1 of 4
  ASSERT_TRUE(s.Submit("a", 0, [] {}).ok());
  EXPECT_DOUBLE_EQ(s.Pressure("a"), 1.0);
  EXPECT_DOUBLE_EQ(s.Pressure("b"), 0.5);
  EXPECT_EQ(GrantCredits(16, s.Pressure("a")), 1u);
  EXPECT_EQ(GrantCredits(16, s.Pressure("b")), 16u);
  gate.Open();
  // Once the queue has drained, the whole grant again (the gate outlives its task).
  for (int i = 0; i < 200 && s.stats().queued + s.stats().running > 0; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(s.Pressure("a"), 0.0);
}

}  // namespace
}  // namespace aobj
