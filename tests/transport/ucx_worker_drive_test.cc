// UcxWorker's callers at work on the worker itself: a client's caller that waits for a message
// receives it on its own thread (DriveTicket), a second caller gives way to the first, and a
// worker destroyed under a driving caller ends its drive instead of pulling the worker out from
// under it. Two client workers in this process, talking by active messages on loopback: "peer"
// answers each request it gets with a reply carrying the same octets.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"

namespace aobj {
namespace {

constexpr uint16_t kRequestId = 90;
constexpr uint16_t kReplyId = 91;

class UcxWorkerDriveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DataChannelOptions o;
    o.net_devices = "lo";
    auto cc = UcxContext::Create(o);
    auto pc = UcxContext::Create(o);
    ASSERT_TRUE(cc.ok() && pc.ok());
    client_ctx_ = std::move(*cc);
    peer_ctx_ = std::move(*pc);
    auto c = UcxWorker::Create(*client_ctx_, "drive-client");
    auto p = UcxWorker::Create(*peer_ctx_, "drive-peer");
    ASSERT_TRUE(c.ok() && p.ok());
    client_ = std::move(*c);
    peer_ = std::move(*p);
    ASSERT_TRUE(client_
                    ->SetMessageHandler(kReplyId,
                                        [this](absl::string_view m) {
                                          absl::MutexLock l(&mu_);
                                          replies_.emplace_back(m);
                                          reply_threads_.push_back(std::this_thread::get_id());
                                        })
                    .ok());
    ASSERT_TRUE(peer_
                    ->SetMessageHandler(
                        kRequestId,
                        [this](absl::string_view m) {
                          if (answer_.load()) {
                            peer_->SendMessage(back_, kReplyId, std::string(m)).IgnoreError();
                          }
                        })
                    .ok());
    auto to_peer = client_->ConnectForMessages(peer_->address());
    auto to_client = peer_->ConnectForMessages(client_->address());
    ASSERT_TRUE(to_peer.ok() && to_client.ok());
    out_ = *to_peer;
    back_ = *to_client;
  }

  size_t Replies() {
    absl::MutexLock l(&mu_);
    return replies_.size();
  }

  // Sends `n` requests and waits for their replies by driving (the caller's ticket), as the
  // client library's fast path does; true when all came.
  bool Exchange(int n) {
    for (int i = 0; i < n; ++i) {
      const size_t before = Replies();
      if (!client_->SendMessage(out_, kRequestId, "ping-" + std::to_string(i)).ok()) return false;
      auto ticket = client_->EnterDrive();
      if (!ticket) return false;
      const absl::Time until = absl::Now() + absl::Seconds(10);
      bool got = ticket.Drive([&] { return Replies() > before; }, until);
      while (!got && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(1));
        got = Replies() > before;
      }
      if (!got) return false;
    }
    return true;
  }

  std::unique_ptr<UcxContext> client_ctx_, peer_ctx_;
  std::unique_ptr<UcxWorker> client_, peer_;
  uint64_t out_ = 0, back_ = 0;
  std::atomic<bool> answer_{true};
  absl::Mutex mu_;
  std::vector<std::string> replies_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> reply_threads_ ABSL_GUARDED_BY(mu_);
};

TEST_F(UcxWorkerDriveTest, TheWaitingCallerReceivesItsRepliesOnItsOwnThread) {
  // The first exchanges also carry UCX's wireup; after them the caller leads every time it waits
  // (nothing else uses the worker), so its handler runs here rather than on the progress thread.
  ASSERT_TRUE(Exchange(5));
  {
    absl::MutexLock l(&mu_);
    replies_.clear();
    reply_threads_.clear();
  }
  ASSERT_TRUE(Exchange(20));
  absl::MutexLock l(&mu_);
  ASSERT_EQ(replies_.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(replies_[i], "ping-" + std::to_string(i));
  int here = 0;
  for (const auto& id : reply_threads_) here += id == std::this_thread::get_id();
  // Not all: the progress thread may have been awake for the odd reply (it then delivers it).
  EXPECT_GE(here, 15) << "the caller received only " << here << " of 20 replies itself";
}

TEST_F(UcxWorkerDriveTest, ASecondCallerGivesWayAndStillGetsItsReply) {
  ASSERT_TRUE(Exchange(3));
  answer_.store(false);  // the first caller's wait will not end by a reply
  std::atomic<bool> first_driving{false};
  std::thread first([&] {
    auto ticket = client_->EnterDrive();
    ASSERT_TRUE(ticket);
    first_driving.store(true);
    EXPECT_FALSE(ticket.Drive([] { return false; }, absl::Now() + absl::Milliseconds(800)));
  });
  while (!first_driving.load()) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(50));  // the first one leads now
  auto second = client_->EnterDrive();
  ASSERT_TRUE(second);
  const absl::Time t0 = absl::Now();
  EXPECT_FALSE(second.Drive([] { return false; }, absl::Now() + absl::Seconds(5)));
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(500)) << "the second caller waited on the first";
  EXPECT_FALSE(second);  // spent: its caller waits as it would have
  // The first caller leads and receives everything that arrives, its own or not.
  answer_.store(true);
  const size_t before = Replies();
  ASSERT_TRUE(client_->SendMessage(out_, kRequestId, "while-another-leads").ok());
  for (int i = 0; i < 1000 && Replies() == before; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(Replies(), before + 1);
  first.join();
  // Back with the progress thread: replies still come without anyone driving.
  const size_t after = Replies();
  ASSERT_TRUE(client_->SendMessage(out_, kRequestId, "nobody-drives").ok());
  for (int i = 0; i < 1000 && Replies() == after; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(Replies(), after + 1);
}

TEST_F(UcxWorkerDriveTest, DestroyingTheWorkerEndsADriveInProgress) {
  ASSERT_TRUE(Exchange(3));
  answer_.store(false);
  absl::Notification driving;
  std::atomic<bool> drive_result{true};
  absl::Time ended;
  // The ticket is taken here, while the worker is known alive, as the client library does
  // under the lock that guards its worker pointer.
  auto ticket = client_->EnterDrive();
  ASSERT_TRUE(ticket);
  std::thread caller([&, t = std::move(ticket)]() mutable {
    driving.Notify();
    drive_result.store(t.Drive([] { return false; }, absl::Now() + absl::Seconds(60)));
    ended = absl::Now();
  });
  driving.WaitForNotification();
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time t0 = absl::Now();
  client_.reset();  // waits for the ticket; must not wait out the drive's 60 s
  const absl::Duration took = absl::Now() - t0;
  caller.join();
  EXPECT_FALSE(drive_result.load());
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_LE(ended, t0 + took);  // the drive ended before the worker was gone
}

TEST_F(UcxWorkerDriveTest, AServersWorkerGivesNoTicket) {
  // A server's worker cannot be driven (it has more workers than one to progress).
  DataChannelOptions o;
  o.net_devices = "lo";
  auto sc = UcxContext::CreateForServer(o);
  ASSERT_TRUE(sc.ok());
  auto sw = UcxWorker::Create(**sc, "drive-server");
  ASSERT_TRUE(sw.ok());
  EXPECT_FALSE((*sw)->EnterDrive());
  auto empty = (*sw)->EnterDrive();
  EXPECT_TRUE(empty.Drive([] { return true; }, absl::Now()));  // an empty ticket says done()
  EXPECT_FALSE(empty.Drive([] { return false; }, absl::Now()));
}

}  // namespace
}  // namespace aobj
