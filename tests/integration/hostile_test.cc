// Hostile input against a separate aobj-server: every bad request gets its specific error code
// and the server keeps serving everyone else (spec "Security considerations").
#include <cstring>
#include <thread>

#include "aobj/client.h"
#include "aobj/status.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::RawSession;
using testing::ServerProcess;
namespace pb = aobj::v1;

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }
  void StartServer(std::vector<std::string> extra) {
    if (server_) server_->Stop();
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "memory", std::move(extra));
    ASSERT_TRUE(server_->Start()) << server_->log();
    raw_ = std::make_unique<RawSession>(server_->endpoint(), kAccessKey, kSecret);
  }

  // A well-behaved client still gets full service.
  void ExpectStillServes() { testing::ExpectStillServes(*server_, "still-serving", 0x42); }

  static ErrorCode Code(const RawReply& r) { return ErrorCodeOf(r.status); }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<RawSession> raw_;
};

// ---- authentication -------------------------------------------------------------------------

TEST_F(HostileTest, WrongSignatureIsRejected) {
  RawSession::Tamper t;
  t.flip_signature = true;
  RawReply r = raw_->Send(Method::kOpenSession, raw_->DefaultOpen(), t);
  EXPECT_EQ(Code(r), ErrorCode::kSignatureDoesNotMatch);  // AOBJ-AUTH-006
  EXPECT_EQ(r.grpc_status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(r.error.s3_code(), "SignatureDoesNotMatch");
  EXPECT_EQ(r.error.name(), "SIGNATURE_DOES_NOT_MATCH");
  ExpectStillServes();
}

TEST_F(HostileTest, BodyChangedAfterSigningIsRejected) {
  ASSERT_TRUE(raw_->Open().status.ok());
  pb::HeadBucketRequest req;
  req.set_bucket("test-bucket");
  RawSession::Tamper t;
  t.body_suffix = std::string("\x0a\x01x", 3);  // a valid field appended after signing
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, req, t)), ErrorCode::kSignatureDoesNotMatch);
  ExpectStillServes();
}

TEST_F(HostileTest, MissingSignatureIsRejected) {
  RawSession::Tamper t;
  t.omit_signature = true;
  EXPECT_EQ(Code(raw_->Send(Method::kOpenSession, raw_->DefaultOpen(), t)),
            ErrorCode::kMissingAuthentication);  // AOBJ-AUTH-001
  ExpectStillServes();
}

TEST_F(HostileTest, UnknownAccessKeyIsRejected) {
  RawSession stranger(server_->endpoint(), "AKNOBODY", "whatever");
  EXPECT_EQ(Code(stranger.Open()), ErrorCode::kInvalidAccessKeyId);  // AOBJ-AUTH-005
  ExpectStillServes();
}

TEST_F(HostileTest, ReplayedRequestIsRejectedAndHasNoEffect) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(50000);
  std::memset(mem->data(), 'A', 50000);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("replayed", *mem, 50000)).status.ok());
  // The client overwrites the key with other content...
  std::memset(mem->data(), 'B', 50000);
  RawSession other(server_->endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(other.Open().status.ok());
  ASSERT_TRUE(other.Send(Method::kPutObject, other.PutRequest("replayed", *mem, 50000)).status.ok());
  // ...and an attacker replays the first PUT byte for byte.
  EXPECT_EQ(Code(raw_->Resend()), ErrorCode::kRequestReplayed);  // AOBJ-AUTH-008
  auto out = raw_->Allocate(50000);
  RawReply g = raw_->Send(Method::kGetObject, raw_->GetRequest("replayed", *out, 50000));
  ASSERT_TRUE(g.status.ok()) << g.status;
  EXPECT_EQ(out->data()[0], 'B');
  ExpectStillServes();
}

TEST_F(HostileTest, ReplayedOpenSessionIsRejected) {
  ASSERT_TRUE(raw_->Open().status.ok());
  EXPECT_EQ(Code(raw_->Resend()), ErrorCode::kRequestReplayed);
}

// AOBJ-AUTH-017 across a restart: the new run remembers no nonce, so a request captured before
// it and sent again afterwards is refused by its timestamp (SLOW_DOWN, retryable with a hint),
// not served; a new request of the same client is.
TEST_F(HostileTest, ARequestOfTheLastRunIsNotServedAgainAfterARestart) {
  ASSERT_TRUE(raw_->Open().status.ok());
  pb::HeadBucketRequest hb;
  hb.set_bucket("no-such-bucket");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, hb)), ErrorCode::kNoSuchBucket);
  ASSERT_TRUE(server_->RestartOnSamePort()) << server_->log();
  RawReply again;
  for (int i = 0; i < 50; ++i) {  // until the channel has reconnected
    again = raw_->Resend();
    if (again.grpc_status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(Code(again), ErrorCode::kSlowDown) << again.error.ShortDebugString();
  EXPECT_TRUE(again.error.retryable());
  EXPECT_GT(again.error.retry_after_ms(), 0u);
  EXPECT_NE(again.error.message().find("AOBJ-AUTH-017"), std::string::npos);
  // A new request (a later timestamp) of the same principal passes authentication.
  EXPECT_TRUE(raw_->Open().status.ok());
  ExpectStillServes();
}

TEST_F(HostileTest, ClockSkewIsRejectedBothWays) {
  for (int64_t offset : {int64_t{600000}, int64_t{-600000}}) {
    RawSession::Tamper t;
    t.clock_offset_ms = offset;
    EXPECT_EQ(Code(raw_->Send(Method::kOpenSession, raw_->DefaultOpen(), t)),
              ErrorCode::kRequestTimeTooSkewed);  // AOBJ-AUTH-007
  }
  ExpectStillServes();
}

// ---- negotiation ----------------------------------------------------------------------------

TEST_F(HostileTest, UnsupportedVersionRangeGetsTheServersRange) {
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.mutable_versions()->set_min(2);
  req.mutable_versions()->set_max(5);
  RawReply r = raw_->Open(req);
  EXPECT_EQ(Code(r), ErrorCode::kUnsupportedVersion);  // AOBJ-SES-003
  EXPECT_EQ(r.error.supported_versions().min(), 1u);
  EXPECT_EQ(r.error.supported_versions().max(), 1u);
  ExpectStillServes();
}

TEST_F(HostileTest, MalformedVersionRangesAreInvalid) {
  for (auto [lo, hi] : {std::pair<uint32_t, uint32_t>{0, 0}, {3, 1}, {0, 1}}) {
    pb::OpenSessionRequest req = raw_->DefaultOpen();
    req.mutable_versions()->set_min(lo);
    req.mutable_versions()->set_max(hi);
    EXPECT_EQ(Code(raw_->Open(req)), ErrorCode::kInvalidArgument) << lo << "," << hi;
  }
  pb::OpenSessionRequest no_range = raw_->DefaultOpen();
  no_range.clear_versions();
  EXPECT_EQ(Code(raw_->Open(no_range)), ErrorCode::kInvalidArgument);  // AOBJ-SES-004
}

TEST_F(HostileTest, GreaseVersionAndCapabilitiesAreIgnored) {
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.mutable_versions()->set_max(0x7A7A7A7A);  // AOBJ-EXT-021
  req.add_capabilities(0x0A0A0A0A);             // AOBJ-EXT-001
  req.add_capabilities(0xFAFAFAFA);
  req.add_capabilities(999);
  RawReply r = raw_->Open(req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::OpenSessionResponse resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  EXPECT_EQ(resp.version(), 1u);
  // AOBJ-EXT-012: the server adds one grease ID of its own, and nothing else unoffered.
  std::vector<uint32_t> known;
  int grease = 0;
  for (uint32_t c : resp.capabilities()) {
    if (IsGrease(c)) {
      ++grease;
    } else {
      known.push_back(c);
    }
  }
  EXPECT_EQ(known, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(grease, 1);
  EXPECT_EQ(resp.session_id().size(), 16u);  // AOBJ-SES-015
  EXPECT_EQ(resp.memory_protection(), pb::MEMORY_PROTECTION_EMULATED);  // AOBJ-SES-013
}

// AOBJ-EXT-015: capability_params is bounded; AOBJ-EXT-018 and AOBJ-CTL-004: within the bounds
// every entry is ignored, and so are grease fields; AOBJ-EXT-017: the response greases both.
TEST_F(HostileTest, CapabilityParamsAreBoundedAndGreaseIsIgnoredAndSent) {
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  for (uint32_t c : {2u, 0x1A2A3A4Au, 77u}) {
    pb::CapabilityParams* e = req.add_capability_params();
    e->set_capability(c);
    e->set_params(std::string(kMaxCapabilityParamBytes, 'x'));
  }
  req.GetReflection()->MutableUnknownFields(&req)->AddVarint(1777, 3);
  RawReply r = raw_->Open(req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::OpenSessionResponse resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  uint32_t grease = 0;
  for (uint32_t c : resp.capabilities()) {
    if (IsGrease(c)) grease = c;
  }
  ASSERT_NE(grease, 0u);
  ASSERT_EQ(resp.capability_params_size(), 1);
  EXPECT_EQ(resp.capability_params(0).capability(), grease);  // AOBJ-EXT-020
  EXPECT_GE(resp.capability_params(0).params().size(), 1u);
  EXPECT_LE(resp.capability_params(0).params().size(), 16u);
  const auto& unknown = resp.GetReflection()->GetUnknownFields(resp);
  ASSERT_EQ(unknown.field_count(), 1);
  EXPECT_GE(static_cast<uint32_t>(unknown.field(0).number()), kGreaseFieldFirst);
  EXPECT_LE(static_cast<uint32_t>(unknown.field(0).number()), kGreaseFieldLast);

  pb::OpenSessionRequest big = raw_->DefaultOpen();
  big.add_capability_params()->set_params(std::string(kMaxCapabilityParamBytes + 1, 'x'));
  RawReply refused = raw_->Open(big);
  EXPECT_EQ(Code(refused), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error.message().find("1025 octets"), std::string::npos)
      << refused.error.message();
  ExpectStillServes();
}

// AOBJ-EXT-019: --grease-errors 100 answers every failure that is not retryable with a grease
// code, naming the one it replaced; UNSUPPORTED_VERSION is never replaced.
TEST_F(HostileTest, GreaseErrorsOnlyWhereConfiguredAndNeverForTheInvariants) {
  pb::HeadBucketRequest missing;
  missing.set_bucket("no-such-bucket");
  ASSERT_TRUE(raw_->Open(raw_->DefaultOpen()).status.ok());
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, missing)), ErrorCode::kNoSuchBucket);

  StartServer({"--grease-errors", "100"});
  ASSERT_TRUE(raw_->Open(raw_->DefaultOpen()).status.ok());
  RawReply r = raw_->Send(Method::kHeadBucket, missing);
  EXPECT_TRUE(IsGrease(static_cast<uint32_t>(Code(r)))) << r.error.ShortDebugString();
  EXPECT_EQ(r.error.name(), "UNKNOWN");
  EXPECT_EQ(r.error.s3_code(), "InternalError");
  EXPECT_FALSE(r.error.retryable());
  EXPECT_EQ(r.grpc_status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(r.error.message().find("in place of NO_SUCH_BUCKET"), std::string::npos)
      << r.error.message();
  pb::OpenSessionRequest nine = raw_->DefaultOpen();
  nine.mutable_versions()->set_min(9);
  nine.mutable_versions()->set_max(9);
  EXPECT_EQ(Code(raw_->Open(nine)), ErrorCode::kUnsupportedVersion);
}

TEST_F(HostileTest, OfferedVersionsListIsUsedAndGreaseIsNeverSelected) {
  // AOBJ-SES-035: the list wins over a range that alone would be refused.
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.mutable_versions()->set_min(7);
  req.mutable_versions()->set_max(9);
  for (uint32_t v : {0x1A1A1A1Au, 1u, 0x0A0A0A0Au}) req.add_offered_versions(v);
  RawReply r = raw_->Open(req, /*confirm=*/false);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::OpenSessionResponse resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  EXPECT_EQ(resp.version(), 1u);
  // Only grease: UNSUPPORTED_VERSION with the server's range (AOBJ-EXT-011, AOBJ-SES-003).
  pb::OpenSessionRequest grease = raw_->DefaultOpen();
  grease.add_offered_versions(0x0A0A0A0Au);
  RawReply g = raw_->Send(Method::kOpenSession, grease);
  EXPECT_EQ(Code(g), ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(g.error.supported_versions().max(), 1u);
  // 17 entries: INVALID_ARGUMENT.
  pb::OpenSessionRequest many = raw_->DefaultOpen();
  for (int i = 0; i < 17; ++i) many.add_offered_versions(1);
  EXPECT_EQ(Code(raw_->Send(Method::kOpenSession, many)), ErrorCode::kInvalidArgument);
  ExpectStillServes();
}

TEST_F(HostileTest, ARetryWhoseFirstOfferThisServerSupportsIsADowngrade) {
  // AOBJ-SES-036: the UNSUPPORTED_VERSION that made the client retry was not this server's.
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.add_offered_versions(1);
  req.add_previous_offer(3);
  req.add_previous_offer(1);
  EXPECT_EQ(Code(raw_->Send(Method::kOpenSession, req)), ErrorCode::kNegotiationFailed);
  pb::OpenSessionRequest fine = raw_->DefaultOpen();
  fine.add_offered_versions(1);
  fine.add_previous_offer(3);
  fine.add_previous_offer(0x2A2A2A2A);
  EXPECT_TRUE(raw_->Open(fine, /*confirm=*/false).status.ok());
  pb::OpenSessionRequest many = raw_->DefaultOpen();
  for (int i = 0; i < 17; ++i) many.add_previous_offer(5);
  EXPECT_EQ(Code(raw_->Send(Method::kOpenSession, many)), ErrorCode::kInvalidArgument);
  ExpectStillServes();
}

TEST_F(HostileTest, OpenSessionResponseIsSignedOverTheOfferAndTheOctets) {
  // AOBJ-AUTH-020: verifies as sent; any altered octet or another request's signature fails.
  RawReply r = raw_->Open(raw_->DefaultOpen(), /*confirm=*/false);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.response_signature.size(), 64u);
  EXPECT_TRUE(raw_->VerifyResponseSignature(r).ok());
  RawReply altered = r;
  altered.body.back() = static_cast<char>(altered.body.back() ^ 1);
  EXPECT_EQ(ErrorCodeOf(raw_->VerifyResponseSignature(altered)), ErrorCode::kSignatureDoesNotMatch);
  RawReply unsigned_reply = r;
  unsigned_reply.response_signature.clear();
  EXPECT_EQ(ErrorCodeOf(raw_->VerifyResponseSignature(unsigned_reply)),
            ErrorCode::kSignatureDoesNotMatch);
  // The same octets answering another request (a replayed answer) do not verify either.
  RawReply other = raw_->Open(raw_->DefaultOpen(), /*confirm=*/false);
  ASSERT_TRUE(other.status.ok()) << other.status;
  RawReply replayed = r;
  EXPECT_EQ(ErrorCodeOf(raw_->VerifyResponseSignature(replayed)),
            ErrorCode::kSignatureDoesNotMatch);
  // Failures carry no signature.
  pb::OpenSessionRequest bad = raw_->DefaultOpen();
  bad.clear_worker_address();
  RawReply refused = raw_->Send(Method::kOpenSession, bad);
  EXPECT_FALSE(refused.status.ok());
  EXPECT_TRUE(refused.response_signature.empty());
}

TEST_F(HostileTest, RequiringHardwareProtectionIsRefusedOnEmulatedChannel) {
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.set_require_hardware_protection(true);
  EXPECT_EQ(Code(raw_->Open(req)), ErrorCode::kAccessDenied);  // AOBJ-SES-014
  ExpectStillServes();
}

TEST_F(HostileTest, OversizedOrEmptyWorkerAddressIsInvalid) {
  pb::OpenSessionRequest req = raw_->DefaultOpen();
  req.set_worker_address(std::string(9000, 'x'));
  EXPECT_EQ(Code(raw_->Open(req)), ErrorCode::kInvalidArgument);  // AOBJ-SES-011
  req.clear_worker_address();
  EXPECT_EQ(Code(raw_->Open(req)), ErrorCode::kInvalidArgument);
  ExpectStillServes();
}

TEST_F(HostileTest, MalformedMessageIsInvalidArgument) {
  ASSERT_TRUE(raw_->Open().status.ok());
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, std::string("\xff\xff\xff\xff", 4))),
            ErrorCode::kInvalidArgument);
  ExpectStillServes();
}

// ---- sessions -------------------------------------------------------------------------------

TEST_F(HostileTest, UnknownSessionIsRejected) {
  pb::HeadBucketRequest req;
  req.set_bucket("test-bucket");
  RawSession::Tamper t;
  t.session_hex = "00112233445566778899aabbccddeeff";
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, req, t)), ErrorCode::kNoSuchSession);
  ExpectStillServes();
}

TEST_F(HostileTest, AnotherPrincipalsSessionIsNotUsable) {
  ASSERT_TRUE(raw_->Open().status.ok());
  RawSession second(server_->endpoint(), "AKTESTSECOND", "second-secret-for-tests");
  pb::HeadBucketRequest req;
  req.set_bucket("test-bucket");
  RawSession::Tamper t;
  t.session_hex = raw_->session_hex();
  EXPECT_EQ(Code(second.Send(Method::kHeadBucket, req, t)), ErrorCode::kNoSuchSession);
}

TEST_F(HostileTest, SessionLimitAnswersSlowDownAndRecovers) {
  StartServer({"--max-sessions", "2"});
  RawSession a(server_->endpoint(), kAccessKey, kSecret), b(server_->endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(a.Open().status.ok());
  ASSERT_TRUE(b.Open().status.ok());
  RawReply r = raw_->Open();
  EXPECT_EQ(Code(r), ErrorCode::kSlowDown);  // AOBJ-SES-017, Table 1, AOBJ-SES-021
  EXPECT_TRUE(r.error.retryable());
  ASSERT_TRUE(a.Send(Method::kCloseSession, pb::CloseSessionRequest()).status.ok());
  EXPECT_TRUE(raw_->Open().status.ok());  // room again once a session closed
}

// AOBJ-FLO-003: the client library waits and retries a busy refusal by itself. At the session
// limit, a Connect that starts while the only session is held succeeds once it is closed (the
// library used to return the first SLOW_DOWN); with busy_retries 0 the refusal comes back as is.
TEST_F(HostileTest, TheClientRetriesABusyRefusalAfterAPause) {
  StartServer({"--max-sessions", "1"});
  ASSERT_TRUE(raw_->Open().status.ok());
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  o.busy_retries = 0;
  auto refused = Client::Connect(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ErrorCodeOf(refused.status()), ErrorCode::kSlowDown) << refused.status();
  o.busy_retries = 5;  // pauses of 10-20, 20-40, 40-80, ... ms: about a second in all
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(raw_->Send(Method::kCloseSession, pb::CloseSessionRequest()).status.ok());
  });
  auto c = Client::Connect(o);
  closer.join();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE((*c)->HeadBucket("test-bucket").ok());
}

// Issue 16 (third probe): RenewSession runs on gRPC's thread so that a cancellation never waits
// behind data requests, and the signature check there hashes its body. One larger than any valid
// RenewSession (16 cancel entries) goes through the request queue instead; it is answered as
// before: a forged one fails its signature, a signed one its 2000 cancel entries (AOBJ-DAT-161).
TEST_F(HostileTest, AnOversizedRenewSessionIsAnsweredThroughTheQueue) {
  ASSERT_TRUE(raw_->Open().status.ok());
  RawSession::Tamper forged;
  forged.flip_signature = true;
  pb::RenewSessionRequest big;
  for (int i = 0; i < 2000; ++i) big.add_cancel(std::string(32, 'a'));  // 68 KB
  EXPECT_EQ(Code(raw_->Send(Method::kRenewSession, big, forged)),
            ErrorCode::kSignatureDoesNotMatch);
  EXPECT_EQ(Code(raw_->Send(Method::kRenewSession, big)), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(raw_->Send(Method::kRenewSession, pb::RenewSessionRequest()).status.ok());
}

TEST_F(HostileTest, OnePrincipalCannotTakeEverySession) {
  StartServer({"--max-sessions-per-principal", "2"});
  RawSession a(server_->endpoint(), kAccessKey, kSecret), b(server_->endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(a.Open().status.ok());
  ASSERT_TRUE(b.Open().status.ok());
  EXPECT_EQ(Code(raw_->Open()), ErrorCode::kSlowDown);  // AOBJ-SEC-006
  RawSession other(server_->endpoint(), "AKTESTSECOND", "second-secret-for-tests");
  EXPECT_TRUE(other.Open().status.ok()) << "another principal is still served";
}

TEST_F(HostileTest, ConfiguredKeyAndPageLimitsAreEnforced) {
  StartServer({"--max-key-bytes", "16", "--max-list-page", "10"});
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  auto buf = (*c)->AllocateBuffer(10);
  ASSERT_TRUE(buf.ok());
  EXPECT_TRUE((*c)->Put("test-bucket", std::string(16, 'k'), **buf, 10).ok());
  EXPECT_EQ(ErrorCodeOf((*c)->Put("test-bucket", std::string(17, 'k'), **buf, 10).status()),
            ErrorCode::kKeyTooLong);  // AOBJ-OBJ-159
  ListObjectsOptions page;
  page.max_keys = 11;
  EXPECT_EQ(ErrorCodeOf((*c)->ListObjects("test-bucket", page).status()),
            ErrorCode::kInvalidArgument);
  page.max_keys = 10;
  EXPECT_TRUE((*c)->ListObjects("test-bucket", page).ok());
  ExpectStillServes();
}

TEST_F(HostileTest, ClosedSessionIsGone) {
  ASSERT_TRUE(raw_->Open().status.ok());
  ASSERT_TRUE(raw_->Send(Method::kCloseSession, pb::CloseSessionRequest()).status.ok());
  pb::HeadBucketRequest req;
  req.set_bucket("test-bucket");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, req)), ErrorCode::kNoSuchSession);
}

TEST_F(HostileTest, ExpiredSessionIsRejectedAndReleased) {
  StartServer({"--lease-ms", "300"});
  ASSERT_TRUE(raw_->Open().status.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  pb::HeadBucketRequest req;
  req.set_bucket("test-bucket");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadBucket, req)), ErrorCode::kSessionExpired);
  EXPECT_NE(server_->log().find("event=endpoint_released"), std::string::npos)
      << server_->log();  // AOBJ-SES-009
  ExpectStillServes();
}

// ---- descriptors ----------------------------------------------------------------------------

TEST_F(HostileTest, DescriptorPastItsSegmentIsOutOfBounds) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(64 << 10);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("small", *mem, 64 << 10)).status.ok());
  // GET into a window that claims 16 MiB of a 64 KiB registration: the server must not write.
  pb::PutObjectRequest big_put = raw_->PutRequest("big", *mem, 64 << 10);
  big_put.set_size(16 << 20);
  big_put.mutable_source(0)->set_length(16 << 20);
  RawReply r = raw_->Send(Method::kPutObject, big_put);
  // AOBJ-MEM-012, AOBJ-MEM-021, AOBJ-SEC-001 (the channel here is EMULATED)
  EXPECT_EQ(Code(r), ErrorCode::kDescriptorOutOfBounds) << r.status;
  pb::HeadObjectRequest head;
  head.set_bucket("test-bucket");
  head.set_key("big");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadObject, head)), ErrorCode::kNoSuchKey);

  // A 16 MiB object read into a 64 KiB registration that claims 16 MiB.
  auto big = raw_->Allocate(16 << 20);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("big", *big, 16 << 20)).status.ok());
  pb::GetObjectRequest get = raw_->GetRequest("big", *mem, 16 << 20);
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, get)), ErrorCode::kDescriptorOutOfBounds);
  ExpectStillServes();
}

TEST_F(HostileTest, DescriptorAtAForeignAddressIsOutOfBounds) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(64 << 10);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("small", *mem, 64 << 10)).status.ok());
  for (uint64_t address : {uint64_t{0x1000}, reinterpret_cast<uint64_t>(mem->data()) - (1 << 20),
                           uint64_t{0x7ff000000000}}) {
    pb::GetObjectRequest get = raw_->GetRequest("small", *mem, 64 << 10);
    get.mutable_destination(0)->set_address(address);
    RawReply r = raw_->Send(Method::kGetObject, get);
    EXPECT_EQ(Code(r), ErrorCode::kDescriptorOutOfBounds) << std::hex << address << " " << r.status;
  }
  ExpectStillServes();
}

TEST_F(HostileTest, DescriptorWrappingAroundIsInvalid) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(4096);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("w", *mem, 4096)).status.ok());
  pb::GetObjectRequest get = raw_->GetRequest("w", *mem, 4096);
  get.set_accept_inline(false);
  get.mutable_destination(0)->set_address(UINT64_MAX - 100);
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, get)), ErrorCode::kInvalidDescriptor);  // MEM-002
  get.mutable_destination(0)->set_address(reinterpret_cast<uint64_t>(mem->data()));
  get.mutable_destination(0)->set_length(0);
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, get)), ErrorCode::kInvalidDescriptor);  // MEM-001
  ExpectStillServes();
}

TEST_F(HostileTest, GarbageAndOversizedRkeysAreInvalid) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(100000);
  pb::PutObjectRequest put = raw_->PutRequest("rk", *mem, 100000);
  const std::vector<std::string> bad = {
      std::string(2000, '\x01'),                          // over max_rkey_bytes (AOBJ-MEM-003)
      "garbage",                                           // shorter than the header
      std::string("\xff\xff\xff\xff\xff\xff\xff\xff\x00\x05", 10),  // 64 mds declared, 1 given
      std::string("\x01\x00\x00\x00\x00\x00\x00\x00\x00\xf0xx", 12),  // md entry past the end
  };
  for (const std::string& rkey : bad) {
    put.mutable_source(0)->set_rkey(rkey);
    EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidRkey)
        << rkey.size();  // AOBJ-MEM-004
  }
  put.mutable_source(0)->set_rkey("");
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidRkey);
  ExpectStillServes();
}

TEST_F(HostileTest, TooManyDescriptorsAndUnsupportedMemoryTypes) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(100000);
  pb::PutObjectRequest put = raw_->PutRequest("many", *mem, 100000);
  for (int i = 0; i < 16; ++i) *put.add_source() = put.source(0);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidDescriptor);  // MEM-005
  put = raw_->PutRequest("cuda", *mem, 100000);
  put.mutable_source(0)->set_memory_type(pb::MEMORY_TYPE_CUDA);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kUnsupportedMemoryType);
  put.mutable_source(0)->set_memory_type(pb::MEMORY_TYPE_UNSPECIFIED);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidDescriptor);
  ExpectStillServes();
}

TEST_F(HostileTest, WindowSmallerThanBodyIsTooSmall) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(100000);
  pb::PutObjectRequest put = raw_->PutRequest("short", *mem, 100000);
  put.mutable_source(0)->set_length(99999);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kDescriptorTooSmall);
  ExpectStillServes();
}

// A request without windows: a PUT states the size its windows must hold (AOBJ-MEM-022), a GET
// learns it from the object (AOBJ-MEM-007, spec 7.3), so the two fail with different codes; an
// empty object needs no window at all (AOBJ-DAT-011).
TEST_F(HostileTest, MissingWindowsFailPutAndGetWithTheirOwnCodes) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(4096);
  std::memset(mem->data(), 'w', 4096);
  ASSERT_TRUE(
      raw_->Send(Method::kPutObject, raw_->PutRequest("windowless", *mem, 4096)).status.ok());
  ASSERT_TRUE(
      raw_->Send(Method::kPutObject, raw_->PutRequest("windowless-empty", *mem, 0)).status.ok());

  pb::PutObjectRequest put = raw_->PutRequest("windowless", *mem, 4096);
  put.clear_source();
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidDescriptor);

  pb::GetObjectRequest get = raw_->GetRequest("windowless", *mem, 4096);
  get.clear_destination();
  get.set_accept_inline(false);
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, get)), ErrorCode::kDescriptorTooSmall);

  get.set_key("windowless-empty");
  RawReply empty = raw_->Send(Method::kGetObject, get);
  ASSERT_TRUE(empty.status.ok()) << empty.status;
  pb::GetObjectResponse resp;
  ASSERT_TRUE(resp.ParseFromString(empty.body));
  EXPECT_EQ(resp.bytes_transferred(), 0u);
  EXPECT_EQ(resp.path(), pb::TRANSFER_PATH_NONE);
  ExpectStillServes();
}

// ---- bodies ---------------------------------------------------------------------------------

// A body of several server chunks (the server checksums chunk k while chunk k+1 travels) with a
// wrong checksum stores nothing; the memory store then recycles the failed writer's buffer, and
// the next PUT of that size must overwrite every octet of it.
TEST_F(HostileTest, LargeBadChecksumStoresNothingAndRecycledBuffersAreOverwritten) {
  ASSERT_TRUE(raw_->Open().status.ok());
  const size_t n = (size_t{20} << 20) + 3;
  auto mem = raw_->Allocate(n);
  auto put_all = [&](char c, bool good) {
    std::memset(mem->data(), c, n);
    pb::PutObjectRequest put = raw_->PutRequest("digest-big", *mem, n);
    if (!good) put.set_checksum(std::string("\0\0\0\0", 4));
    return raw_->Send(Method::kPutObject, put);
  };
  auto expect_all = [&](char c) {
    auto out = raw_->Allocate(n);
    ASSERT_TRUE(raw_->Send(Method::kGetObject, raw_->GetRequest("digest-big", *out, n)).status.ok());
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += out->data()[i] != static_cast<uint8_t>(c);
    EXPECT_EQ(wrong, 0u) << "octets that are not '" << c << "'";
  };
  ASSERT_TRUE(put_all('x', true).status.ok());
  EXPECT_EQ(Code(put_all('y', false)), ErrorCode::kBadDigest);  // AOBJ-DAT-005
  expect_all('x');                                              // AOBJ-OBJ-014
  ASSERT_TRUE(put_all('z', true).status.ok());
  expect_all('z');
  ASSERT_TRUE(put_all('w', true).status.ok());  // reuses the buffer 'x' or 'y' was in
  expect_all('w');
  ExpectStillServes();
}

TEST_F(HostileTest, BadChecksumStoresNothing) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(200000);
  std::memset(mem->data(), 'x', 200000);
  ASSERT_TRUE(raw_->Send(Method::kPutObject, raw_->PutRequest("digest", *mem, 200000)).status.ok());
  std::memset(mem->data(), 'y', 200000);
  pb::PutObjectRequest put = raw_->PutRequest("digest", *mem, 200000);
  put.set_checksum(std::string("\0\0\0\0", 4));
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kBadDigest);  // AOBJ-DAT-005
  auto out = raw_->Allocate(200000);
  ASSERT_TRUE(raw_->Send(Method::kGetObject, raw_->GetRequest("digest", *out, 200000)).status.ok());
  EXPECT_EQ(out->data()[123], 'x');  // the old object is intact
  put.set_checksum("abc");
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidArgument);  // DAT-020
  put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_UNSPECIFIED);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidArgument);
  ExpectStillServes();
}

TEST_F(HostileTest, InlineBodiesAreBounded) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(100);
  pb::PutObjectRequest put = raw_->PutRequest("inline", *mem, 100);
  put.set_inline_data(std::string(100, 'i'));
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidArgument);  // both
  put.clear_source();
  put.set_inline_data(std::string(99, 'i'));
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kInvalidArgument);  // size
  put.set_size(20000);
  put.set_inline_data(std::string(20000, 'i'));
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kEntityTooLarge);  // DAT-007
  ExpectStillServes();
}

TEST_F(HostileTest, BadNamesAreRejected) {
  ASSERT_TRUE(raw_->Open().status.ok());
  pb::HeadObjectRequest head;
  head.set_bucket("test-bucket");
  head.set_key(std::string(1025, 'k'));
  EXPECT_EQ(Code(raw_->Send(Method::kHeadObject, head)), ErrorCode::kKeyTooLong);
  head.set_key("bad\xff utf8");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadObject, head)), ErrorCode::kInvalidArgument);
  head.set_key("ok");
  head.set_bucket("../etc");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadObject, head)), ErrorCode::kInvalidBucketName);
  ExpectStillServes();
}

TEST_F(HostileTest, OversizedObjectIsEntityTooLarge) {
  ASSERT_TRUE(raw_->Open().status.ok());
  auto mem = raw_->Allocate(4096);
  pb::PutObjectRequest put = raw_->PutRequest("huge", *mem, 4096);
  put.set_size(uint64_t{1} << 50);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, put)), ErrorCode::kEntityTooLarge);  // DAT-006
}

}  // namespace
}  // namespace aobj
