// RequestHandler against a scripted data channel: a data request stops issuing RMA between steps
// once its call is cancelled, passes its deadline, or is named by `aobj-cancel`, and returns only
// after the steps it issued have completed (AOBJ-DAT-016, AOBJ-DAT-155, AOBJ-DAT-156).
// Deterministic: no UCX, no server process.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "gtest/gtest.h"
#include "server/data_channel.h"
#include "server/handler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "session/signer.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

namespace pb = aobj::v1;

constexpr size_t kStep = 4096;
constexpr size_t kObject = 16 * kStep;

uint8_t ClientByte(uint64_t a) { return static_cast<uint8_t>(a * 131 + 7); }

// Records every Execute; `on_execute` runs after each one (with its 1-based count).
class ScriptedChannel final : public DataChannel {
 public:
  absl::StatusOr<uint64_t> Connect(absl::string_view) override { return 1; }
  absl::StatusOr<Protection> GetProtection(uint64_t) override { return Protection::kEmulated; }
  absl::StatusOr<std::string> SendChallenges(uint64_t, absl::string_view) override {
    return std::string(32, 'c');
  }
  absl::Status Bind(uint64_t) override { return absl::OkStatus(); }
  void Disconnect(uint64_t) override {}
  absl::Status Execute(uint64_t, const RmaBatch& batch) override {
    uint64_t bytes = 0;
    for (const RmaOp& op : batch.ops) {
      if (batch.direction == RmaDirection::kRead) {
        for (size_t i = 0; i < op.length; ++i) op.local[i] = ClientByte(op.remote + i);
      } else {
        written.append(reinterpret_cast<const char*>(op.local), op.length);
      }
      bytes += op.length;
    }
    largest_step = std::max(largest_step, bytes);
    const int n = ++executes;
    if (on_execute) on_execute(n);
    return absl::OkStatus();
  }
  size_t endpoint_count() override { return 1; }
  uint64_t rkeys_outstanding() override { return 0; }
  uint64_t data_channels_failed() override { return 0; }

  std::atomic<int> executes{0};
  uint64_t largest_step = 0;
  std::string written;
  std::function<void(int)> on_execute;
};

std::string FakeRkey() {
  std::string r(8, '\0');
  r[0] = 1;
  r.push_back('\0');
  r.push_back('\x0c');
  r.append(12, '\x01');
  return r;
}

class HandlerCancelTest : public ::testing::Test {
 protected:
  HandlerCancelTest()
      : store_(NewMemoryStore()),
        auth_({{"AKTEST", "secret"}}, absl::Seconds(300), 4096),
        sessions_(absl::Seconds(30), absl::Seconds(60)),
        signer_("AKTEST", "secret") {
    store_->CreateBucket("bucket").IgnoreError();
    HandlerConfig config;
    config.capabilities = {kCapInline, kCapCrc32c};
    config.staging_bytes = kObject;
    config.cancel_check_bytes = kStep;
    config.log = [this](const std::string& line) {
      absl::MutexLock l(&log_mu_);
      log_.push_back(line);
    };
    handler_ =
        std::make_unique<RequestHandler>(config, store_.get(), &channel_, &auth_, &sessions_);
    pb::OpenSessionRequest open;
    open.mutable_versions()->set_min(1);
    open.mutable_versions()->set_max(1);
    open.add_capabilities(kCapCrc32c);
    open.set_worker_address("fake-worker");
    auto opened = Send(Method::kOpenSession, open.SerializeAsString(), nullptr);
    EXPECT_TRUE(opened.ok()) << opened.status();
    pb::OpenSessionResponse resp;
    resp.ParseFromString(*opened);
    session_ = HexEncode(resp.session_id());
  }

  absl::StatusOr<std::string> Send(Method method, const std::string& body, const CallControl* call,
                                   RequestAuth* signed_as = nullptr) {
    RequestAuth a = signer_.Sign(MethodPath(method), method == Method::kOpenSession ? "" : session_,
                                 body, absl::Now());
    if (signed_as != nullptr) *signed_as = a;
    return handler_->Handle(method, a, body, absl::Now(), nullptr, call);
  }

  std::string PutBody(const std::string& key) {
    std::string content(kObject, '\0');
    for (size_t i = 0; i < kObject; ++i) content[i] = static_cast<char>(ClientByte(0x10000 + i));
    Checksummer sum(ChecksumAlgorithm::kCrc32c);
    sum.Update(content.data(), content.size());
    pb::PutObjectRequest put;
    put.set_bucket("bucket");
    put.set_key(key);
    put.set_size(kObject);
    put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
    put.set_checksum(sum.Finish());
    auto* d = put.add_source();
    d->set_address(0x10000);
    d->set_length(kObject);
    d->set_rkey(FakeRkey());
    d->set_memory_type(pb::MEMORY_TYPE_HOST);
    return put.SerializeAsString();
  }

  std::string GetBody(const std::string& key) {
    pb::GetObjectRequest get;
    get.set_bucket("bucket");
    get.set_key(key);
    auto* d = get.add_destination();
    d->set_address(0x40000);
    d->set_length(kObject);
    d->set_rkey(FakeRkey());
    d->set_memory_type(pb::MEMORY_TYPE_HOST);
    return get.SerializeAsString();
  }

  void StoreObject(const std::string& key) {
    ASSERT_TRUE(Send(Method::kPutObject, PutBody(key), nullptr).ok());
    channel_.executes = 0;
    channel_.written.clear();
  }

  // After a second (the key's log budget renewed) and the reaper's summary: the lines logged
  // with `event`, and how many more the key's summary lines say were left out.
  std::pair<int, long> LoggedAfterASecond(const std::string& event) {
    absl::SleepFor(absl::Milliseconds(1100));
    handler_->FlushLogSummary();  // the reaper's call, made here
    int lines = 0;
    long summarized = 0;
    absl::MutexLock l(&log_mu_);
    for (const std::string& line : log_) {
      if (line.find(event) != std::string::npos) ++lines;
      const size_t at = line.find("event=request_failed_suppressed count=");
      if (at != std::string::npos) summarized += std::stol(line.substr(at + 38));
    }
    return {lines, summarized};
  }

  ScriptedChannel channel_;
  std::unique_ptr<ObjectStore> store_;
  Authenticator auth_;
  SessionTable sessions_;
  RequestSigner signer_;
  std::unique_ptr<RequestHandler> handler_;
  std::string session_;
  absl::Mutex log_mu_;
  std::vector<std::string> log_ ABSL_GUARDED_BY(log_mu_);
};

TEST_F(HandlerCancelTest, UncancelledGetMovesTheBodyInBoundedSteps) {
  StoreObject("k");
  CallControl call;
  call.cancelled = [] { return false; };
  auto got = Send(Method::kGetObject, GetBody("k"), &call);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(channel_.executes.load(), static_cast<int>(kObject / kStep));
  EXPECT_EQ(channel_.largest_step, kStep);
  ASSERT_EQ(channel_.written.size(), kObject);
  for (size_t i = 0; i < kObject; ++i) {
    ASSERT_EQ(static_cast<uint8_t>(channel_.written[i]), ClientByte(0x10000 + i)) << i;
  }
}

// AOBJ-DAT-016, AOBJ-DAT-155: the gRPC call is cancelled during the third step; no fourth step is
// issued and the request fails CANCELLED.
TEST_F(HandlerCancelTest, CancelledCallStopsGetBetweenSteps) {
  StoreObject("k");
  std::atomic<bool> cancelled{false};
  CallControl call;
  call.cancelled = [&] { return cancelled.load(); };
  channel_.on_execute = [&](int n) {
    if (n == 3) cancelled = true;
  };
  auto got = Send(Method::kGetObject, GetBody("k"), &call);
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kCancelled) << got.status();
  EXPECT_EQ(channel_.executes.load(), 3);
}

// The call's deadline passes during the second step of a PUT: DEADLINE_EXCEEDED, no more steps,
// nothing stored (AOBJ-DAT-010).
TEST_F(HandlerCancelTest, PassedDeadlineStopsPutAndStoresNothing) {
  CallControl call;
  call.cancelled = [] { return false; };
  call.deadline = absl::Now() + absl::Hours(1);
  channel_.on_execute = [&](int n) {
    if (n == 2) call.deadline = absl::Now() - absl::Seconds(1);
  };
  auto put = Send(Method::kPutObject, PutBody("late"), &call);
  EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kDeadlineExceeded) << put.status();
  EXPECT_EQ(channel_.executes.load(), 2);
  EXPECT_EQ(ErrorCodeOf(store_->Head("bucket", "late").status()), ErrorCode::kNoSuchKey);
}

// AOBJ-DAT-155: a call cancelled during the last step of a PUT is failed CANCELLED and nothing is
// committed, although every step completed; a GET likewise is not answered OK.
TEST_F(HandlerCancelTest, CancelDuringTheLastStepFailsAndCommitsNothing) {
  constexpr int kSteps = static_cast<int>(kObject / kStep);
  std::atomic<bool> cancelled{false};
  CallControl call;
  call.cancelled = [&] { return cancelled.load(); };
  channel_.on_execute = [&](int n) {
    if (n == kSteps) cancelled = true;
  };
  auto put = Send(Method::kPutObject, PutBody("last"), &call);
  EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kCancelled) << put.status();
  EXPECT_EQ(channel_.executes.load(), kSteps);
  EXPECT_EQ(ErrorCodeOf(store_->Head("bucket", "last").status()), ErrorCode::kNoSuchKey);

  channel_.on_execute = nullptr;
  StoreObject("k");
  cancelled = false;
  channel_.on_execute = [&](int n) {
    if (n == kSteps) cancelled = true;
  };
  auto got = Send(Method::kGetObject, GetBody("k"), &call);
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kCancelled) << got.status();
  EXPECT_EQ(channel_.executes.load(), kSteps);
}

// AOBJ-DAT-156: a RenewSession carrying `aobj-cancel` with a running PUT's nonce stops that PUT,
// which then returns CANCELLED without committing.
TEST_F(HandlerCancelTest, CancelNamedOnRenewStopsTheRunningRequest) {
  absl::Notification in_second_step, renewed;
  channel_.on_execute = [&](int n) {
    if (n == 2) {
      in_second_step.Notify();
      renewed.WaitForNotification();
    }
  };
  RequestAuth put_auth;
  absl::StatusOr<std::string> put;
  const std::string body = PutBody("stopped");
  put_auth = signer_.Sign(MethodPath(Method::kPutObject), session_, body, absl::Now());
  std::thread t([&] {
    put = handler_->Handle(Method::kPutObject, put_auth, body, absl::Now(), nullptr, nullptr);
  });
  ASSERT_TRUE(in_second_step.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(handler_->in_flight().size(), 1u);
  CallControl renew;
  renew.cancel_nonce = put_auth.nonce_hex;
  auto r = Send(Method::kRenewSession, pb::RenewSessionRequest().SerializeAsString(), &renew);
  EXPECT_TRUE(r.ok()) << r.status();
  renewed.Notify();
  t.join();
  EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kCancelled) << put.status();
  EXPECT_EQ(channel_.executes.load(), 2);
  EXPECT_EQ(handler_->in_flight().size(), 0u);
  EXPECT_EQ(ErrorCodeOf(store_->Head("bucket", "stopped").status()), ErrorCode::kNoSuchKey);
}

// A cancellation that arrives before its request is remembered: the request issues no RMA.
TEST_F(HandlerCancelTest, CancelBeforeTheRequestArrivesStopsItBeforeAnyRma) {
  StoreObject("k");
  const std::string body = GetBody("k");
  RequestAuth get_auth = signer_.Sign(MethodPath(Method::kGetObject), session_, body, absl::Now());
  CallControl renew;
  renew.cancel_nonce = get_auth.nonce_hex;
  ASSERT_TRUE(
      Send(Method::kRenewSession, pb::RenewSessionRequest().SerializeAsString(), &renew).ok());
  auto got = handler_->Handle(Method::kGetObject, get_auth, body, absl::Now(), nullptr, nullptr);
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kCancelled) << got.status();
  EXPECT_EQ(channel_.executes.load(), 0);
}

TEST_F(HandlerCancelTest, MalformedCancelEntryIsInvalidArgument) {
  for (const std::string& bad :
       std::vector<std::string>{"xyz", std::string(32, 'g'), std::string(31, 'a')}) {
    CallControl renew;
    renew.cancel_nonce = bad;
    auto r = Send(Method::kRenewSession, pb::RenewSessionRequest().SerializeAsString(), &renew);
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArgument) << bad;
  }
}

// AOBJ-DAT-160: the same cancellation named in the RenewSession's signed body (capability
// CANCEL); one renewal stops every request it names.
TEST_F(HandlerCancelTest, CancelNamedInTheSignedBodyStopsEveryNamedRequest) {
  StoreObject("k");
  std::vector<RequestAuth> auths;
  std::vector<std::string> bodies;
  pb::RenewSessionRequest renew;
  for (int i = 0; i < 2; ++i) {
    bodies.push_back(GetBody("k"));
    auths.push_back(
        signer_.Sign(MethodPath(Method::kGetObject), session_, bodies.back(), absl::Now()));
    renew.add_cancel(auths.back().nonce_hex);
  }
  auto r = Send(Method::kRenewSession, renew.SerializeAsString(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < 2; ++i) {
    auto got =
        handler_->Handle(Method::kGetObject, auths[i], bodies[i], absl::Now(), nullptr, nullptr);
    EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kCancelled) << i << ": " << got.status();
  }
  EXPECT_EQ(channel_.executes.load(), 0);
}

// AOBJ-DAT-161: a malformed entry, or more than 16, fails the renewal and cancels nothing (the
// good entry beside a bad one stays unapplied).
TEST_F(HandlerCancelTest, MalformedOrTooManyBodyCancelsCancelNothing) {
  StoreObject("k");
  const std::string body = GetBody("k");
  RequestAuth get_auth = signer_.Sign(MethodPath(Method::kGetObject), session_, body, absl::Now());
  pb::RenewSessionRequest bad;
  bad.add_cancel(get_auth.nonce_hex);
  bad.add_cancel(std::string(31, 'a'));
  EXPECT_EQ(ErrorCodeOf(Send(Method::kRenewSession, bad.SerializeAsString(), nullptr).status()),
            ErrorCode::kInvalidArgument);
  pb::RenewSessionRequest many;
  for (int i = 0; i < 17; ++i) many.add_cancel(get_auth.nonce_hex);
  EXPECT_EQ(ErrorCodeOf(Send(Method::kRenewSession, many.SerializeAsString(), nullptr).status()),
            ErrorCode::kInvalidArgument);
  auto got = handler_->Handle(Method::kGetObject, get_auth, body, absl::Now(), nullptr, nullptr);
  EXPECT_TRUE(got.ok()) << got.status();
}

// Seventh hostile probe: every cancel entry was a log line, so RenewSessions of 16 random entries
// each wrote 780,800 lines (119 MB) in 15 s. The entries of one access key share its 20 lines a
// second with its failures; the rest are counted in its summary line (AOBJ-OPS-010).
TEST_F(HandlerCancelTest, CancelEntriesAreLoggedWithinTheKeysBudget) {
  constexpr int kRenewals = 100;
  for (int i = 0; i < kRenewals; ++i) {
    pb::RenewSessionRequest renew;
    for (int k = 0; k < 16; ++k) {
      renew.add_cancel(absl::StrFormat("%016x%016x", i, k));  // no such request
    }
    ASSERT_TRUE(Send(Method::kRenewSession, renew.SerializeAsString(), nullptr).ok()) << i;
  }
  const auto [lines, summarized] = LoggedAfterASecond("event=request_cancel ");
  EXPECT_LE(lines, 60) << "at most 20 a second, and this took well under two seconds";
  EXPECT_GE(lines, 20);
  EXPECT_EQ(lines + summarized, kRenewals * 16);
}

// Eighth hostile probe (N6): sessions opened, confirmed and closed were logged outside the key's
// budget, a line each however fast a tenant cycled them. They share it now.
TEST_F(HandlerCancelTest, SessionEventsAreLoggedWithinTheKeysBudget) {
  constexpr int kSessions = 100;
  pb::OpenSessionRequest open;
  open.mutable_versions()->set_min(1);
  open.mutable_versions()->set_max(1);
  open.set_worker_address("fake-worker");
  for (int i = 0; i < kSessions; ++i) {
    ASSERT_TRUE(Send(Method::kOpenSession, open.SerializeAsString(), nullptr).ok()) << i;
  }
  const auto [lines, summarized] = LoggedAfterASecond("event=session_opened ");
  EXPECT_LE(lines, 60) << "at most 20 a second (the fixture's own session among them)";
  EXPECT_EQ(lines + summarized, kSessions + 1);
}

// Spec 8.9: a request run on the thread that delivered it (CallControl::must_not_wait) is
// refused SLOW_DOWN before its first RMA step, GET and PUT alike, and stores nothing; which
// requests the handler sends there (AnswersWithoutWaiting) never includes one that moves its
// body by RMA.
TEST_F(HandlerCancelTest, ARequestThatMustNotWaitIsRefusedBeforeItsFirstRmaStep) {
  StoreObject("k");
  std::shared_ptr<const SessionState> s = sessions_.Peek(session_);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(handler_->AnswersWithoutWaiting(Method::kGetObject, *s, GetBody("k")));
  EXPECT_FALSE(handler_->AnswersWithoutWaiting(Method::kPutObject, *s, PutBody("p")));
  EXPECT_FALSE(handler_->AnswersWithoutWaiting(Method::kDeleteObject, *s, ""));
  EXPECT_TRUE(handler_->AnswersWithoutWaiting(Method::kHeadObject, *s, ""));
  pb::GetObjectRequest inline_get;
  inline_get.set_bucket("bucket");
  inline_get.set_key("missing");       // (a key the store lacks is answered without waiting)
  inline_get.set_accept_inline(true);  // but the session did not negotiate INLINE
  EXPECT_FALSE(
      handler_->AnswersWithoutWaiting(Method::kGetObject, *s, inline_get.SerializeAsString()));
  pb::PutObjectRequest inline_put;
  inline_put.set_bucket("bucket");
  inline_put.set_key("small");
  inline_put.set_size(3);
  inline_put.set_inline_data("abc");
  EXPECT_TRUE(
      handler_->AnswersWithoutWaiting(Method::kPutObject, *s, inline_put.SerializeAsString()));
  inline_put.set_size(RequestHandler::kAnsweredHereBytes + 1);
  EXPECT_FALSE(
      handler_->AnswersWithoutWaiting(Method::kPutObject, *s, inline_put.SerializeAsString()));
  // Nor an inline PUT over a larger object (its release may unmap a large buffer on that
  // thread); over one of at most kAnsweredHereBytes it is.
  inline_put.set_size(3);
  static_assert(kObject <= RequestHandler::kAnsweredHereBytes);
  inline_put.set_key("k");  // kObject octets
  EXPECT_TRUE(
      handler_->AnswersWithoutWaiting(Method::kPutObject, *s, inline_put.SerializeAsString()));
  {
    auto w = store_->BeginPut("bucket", "large", RequestHandler::kAnsweredHereBytes + 1, "");
    ASSERT_TRUE(w.ok()) << w.status();
    const std::string large(RequestHandler::kAnsweredHereBytes + 1, 'x');
    ASSERT_TRUE((*w)->Append({reinterpret_cast<const uint8_t*>(large.data()), large.size()}).ok());
    ObjectInfo info;
    info.size = large.size();
    info.etag = "\"large\"";
    ASSERT_TRUE((*w)->Commit(info).ok());
  }
  inline_put.set_key("large");
  EXPECT_FALSE(
      handler_->AnswersWithoutWaiting(Method::kPutObject, *s, inline_put.SerializeAsString()));

  CallControl here;
  here.must_not_wait = true;
  auto got = Send(Method::kGetObject, GetBody("k"), &here);
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kSlowDown) << got.status();
  auto put = Send(Method::kPutObject, PutBody("p"), &here);
  EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kSlowDown) << put.status();
  EXPECT_EQ(channel_.executes.load(), 0);
  EXPECT_TRUE(channel_.written.empty());
  EXPECT_EQ(ErrorCodeOf(store_->Head("bucket", "p").status()), ErrorCode::kNoSuchKey);
  // The same requests on a request thread move their bodies.
  EXPECT_TRUE(Send(Method::kGetObject, GetBody("k"), nullptr).ok());
  EXPECT_EQ(channel_.written.size(), kObject);
}

}  // namespace
}  // namespace aobj
