// The owners of UCX handles (ucx_handles.h), a session's rkey cache (rkey_cache.h) and the
// challenge inbox (challenge_inbox.h), on a real UCX 1.13.1 context over loopback TCP: the worker
// and endpoint are this test's own, progressed by the test thread.
#include "transport/ucx_handles.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "transport/challenge_inbox.h"
#include "transport/rkey_cache.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"

namespace aobj {
namespace {

class UcxHandlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DataChannelOptions o;
    o.transports = "tcp";
    auto ctx = UcxContext::Create(o);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    context_ = std::move(*ctx);
    ucp_worker_params_t wp{};
    ucp_worker_h raw = nullptr;
    ASSERT_EQ(ucp_worker_create(context_->get(), &wp, &raw), UCS_OK);
    worker_.reset(raw);
    ucp_address_t* addr = nullptr;
    size_t len = 0;
    ASSERT_EQ(ucp_worker_get_address(worker_.get(), &addr, &len), UCS_OK);
    address_.assign(reinterpret_cast<const char*>(addr), len);
    ucp_worker_release_address(worker_.get(), addr);
  }
  void TearDown() override {
    worker_.reset();
    context_.reset();
  }
  // An endpoint from the worker to itself (loopback TCP).
  UcxEndpoint Loopback(ucp_err_handling_mode_t mode = UCP_ERR_HANDLING_MODE_NONE) {
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    p.address = reinterpret_cast<const ucp_address_t*>(address_.data());
    p.err_mode = mode;
    UcxEndpoint ep;
    EXPECT_EQ(UcxEndpoint::Create(worker_.get(), p, &ep), UCS_OK);
    return ep;
  }
  // Progresses until `r` is no longer in progress (at most 10 s).
  bool Complete(const UcxRequest& r) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (r.pending() && absl::Now() < end) ucp_worker_progress(worker_.get());
    return !r.pending();
  }

  std::unique_ptr<UcxContext> context_;
  WorkerPtr worker_;
  std::string address_;
};

TEST_F(UcxHandlesTest, RequestTellsTheThreeAnswersOfAUcxCall) {
  EXPECT_EQ(UcxRequest(nullptr).status(), UCS_OK);
  EXPECT_FALSE(UcxRequest(nullptr).pending());
  const UcxRequest failed(UCS_STATUS_PTR(UCS_ERR_UNREACHABLE));
  EXPECT_EQ(failed.status(), UCS_ERR_UNREACHABLE);
  EXPECT_FALSE(failed.pending());

  // A flush: in progress until the endpoint has wired up, or done at once.
  UcxEndpoint ep = Loopback();
  ucp_request_param_t param{};
  UcxRequest flush(ucp_ep_flush_nbx(ep.get(), &param));
  ASSERT_TRUE(Complete(flush));
  EXPECT_EQ(flush.status(), UCS_OK);
  UcxRequest moved = std::move(flush);
  EXPECT_EQ(moved.status(), UCS_OK);
  moved.reset();
  EXPECT_EQ(moved.status(), UCS_OK);
  ASSERT_TRUE(Complete(ep.Close(/*force=*/false)));
}

TEST_F(UcxHandlesTest, EndpointIsEmptyOnceClosingAndItsCloseCompletes) {
  UcxEndpoint ep = Loopback(UCP_ERR_HANDLING_MODE_PEER);
  ASSERT_TRUE(ep);
  UcxEndpoint other = std::move(ep);
  EXPECT_FALSE(ep);
  ASSERT_TRUE(other);
  UcxRequest close = other.Close(/*force=*/true);
  EXPECT_FALSE(other);
  EXPECT_TRUE(Complete(close));
  EXPECT_EQ(other.Close(/*force=*/false).status(), UCS_OK);  // nothing left to close
  // One that is never closed by hand closes itself when it goes.
  { UcxEndpoint dropped = Loopback(); }
  for (int i = 0; i < 100; ++i) ucp_worker_progress(worker_.get());
}

TEST_F(UcxHandlesTest, RkeyCountsItselfUntilDestroyedOrForgotten) {
  auto memory = RegisteredMemory::Allocate(*context_, 4096);
  ASSERT_TRUE(memory.ok()) << memory.status();
  UcxEndpoint ep = Loopback();
  std::atomic<uint64_t> outstanding{0};
  auto unpack = [&] {
    ucp_rkey_h rkey = nullptr;
    EXPECT_EQ(ucp_ep_rkey_unpack(ep.get(), (*memory)->packed_rkey().data(), &rkey), UCS_OK);
    return UcxRkey(rkey, &outstanding);
  };
  {
    UcxRkey a = unpack();
    EXPECT_EQ(outstanding.load(), 1u);
    UcxRkey b = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(outstanding.load(), 1u);
    b = unpack();  // the first one is destroyed by the assignment
    EXPECT_EQ(outstanding.load(), 1u);
  }
  EXPECT_EQ(outstanding.load(), 0u);
  UcxRkey c = unpack();
  ucp_rkey_h raw = c.get();
  c.Forget();  // as when its worker went: not destroyed here, no longer counted
  EXPECT_EQ(outstanding.load(), 0u);
  ucp_rkey_destroy(raw);
  ASSERT_TRUE(Complete(ep.Close(/*force=*/false)));
}

TEST_F(UcxHandlesTest, RkeyCacheReusesAKeyChecksEachWindowAndReleasesEverything) {
  auto memory = RegisteredMemory::Allocate(*context_, 1 << 16);
  ASSERT_TRUE(memory.ok()) << memory.status();
  UcxEndpoint ep = Loopback(UCP_ERR_HANDLING_MODE_PEER);
  std::atomic<uint64_t> outstanding{0};
  int emulation_asked = 0;
  auto emulation = [&]() -> ucp_ep_h {
    ++emulation_asked;
    return nullptr;
  };
  const RkeyLanes lanes{nullptr, emulation, ep.get(), 0};
  const auto base = reinterpret_cast<uint64_t>((*memory)->data());
  {
    RkeyCache cache(&outstanding);
    const RemoteWindow w{base, 4096, (*memory)->packed_rkey()};
    auto first = cache.Acquire(w, 1024, lanes);
    ASSERT_TRUE(first.ok()) << first.status();
    auto second = cache.Acquire(RemoteWindow{base + 4096, 4096, w.rkey}, 1024, lanes);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(*first, *second);  // one unpack for the same registration
    EXPECT_EQ((*first)->in_use, 2u);
    EXPECT_EQ(outstanding.load(), 1u);
    EXPECT_EQ(emulation_asked, 0);  // no shared-memory lane: nothing to emulate
    cache.Release(*first);
    cache.Release(*second);

    // AOBJ-MEM-003/004: a key that is not one is refused before UCX sees it, and not cached.
    auto bad =
        cache.Acquire(RemoteWindow{base, 4096, absl::string_view("\x01\x00", 2)}, 1024, lanes);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(ErrorCodeOf(bad.status()), ErrorCode::kInvalidRkey);
    cache.Clear();
    EXPECT_EQ(outstanding.load(), 0u);
    auto oversized = cache.Acquire(w, w.rkey.size() - 1, lanes);
    ASSERT_FALSE(oversized.ok());
    EXPECT_EQ(ErrorCodeOf(oversized.status()), ErrorCode::kInvalidRkey);
    auto again = cache.Acquire(w, 1024, lanes);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(outstanding.load(), 1u);
  }
  EXPECT_EQ(outstanding.load(), 0u);  // the cache's destruction destroyed its keys
  ASSERT_TRUE(Complete(ep.Close(/*force=*/true)));
}

TEST(ChallengeInboxTest, ReturnsAllChallengesOfASessionInIndexOrderOnce) {
  ChallengeInbox inbox;
  const std::string session(16, 's');
  const std::string c0(32, 'a'), c1(32, 'b');
  std::thread sender([&] {
    inbox.Add({session, 1, c1});
    absl::SleepFor(absl::Milliseconds(20));
    inbox.Add({session, 0, c0});
  });
  auto got = inbox.Await(session, 2, absl::Seconds(10));
  sender.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, c0 + c1);
  // Collected: a second wait finds nothing and says which requirement it waited for.
  auto again = inbox.Await(session, 2, absl::Milliseconds(30));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(ErrorCodeOf(again.status()), ErrorCode::kDataChannelUnavailable);
  EXPECT_NE(again.status().message().find("AOBJ-SES-025"), absl::string_view::npos);
}

TEST(ChallengeInboxTest, KeepsABoundedNumberOfSessionsAndRefusesImpossibleCounts) {
  ChallengeInbox inbox;
  const std::string challenge(32, 'c');
  std::string first(16, '\0');
  inbox.Add({first, 0, challenge});
  for (size_t i = 1; i <= ChallengeInbox::kMaxSessions; ++i) {
    std::string id(16, static_cast<char>('A' + i));
    inbox.Add({id, 0, challenge});
  }
  // The oldest went to make room; the newest is there.
  EXPECT_FALSE(inbox.Await(first, 1, absl::Milliseconds(10)).ok());
  EXPECT_TRUE(inbox
                  .Await(std::string(16, static_cast<char>('A' + ChallengeInbox::kMaxSessions)), 1,
                         absl::Milliseconds(10))
                  .ok());
  EXPECT_EQ(ErrorCodeOf(inbox.Await(first, 0, absl::Milliseconds(1)).status()),
            ErrorCode::kInternal);
  EXPECT_EQ(
      ErrorCodeOf(inbox.Await(first, kMaxEndpointChallenges + 1, absl::Milliseconds(1)).status()),
      ErrorCode::kInternal);
}

}  // namespace
}  // namespace aobj
