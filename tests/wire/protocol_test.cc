#include "wire/protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// --- SelectOfferedVersion, CheckPreviousOffer (AOBJ-SES-035, AOBJ-SES-036, AOBJ-EXT-011) ---

TEST(SelectOfferedVersionTest, HighestSupportedEntryGreaseNeverSelected) {
  EXPECT_EQ(*SelectOfferedVersion({1, 0x0A0A0A0A}, 1, 1), 1u);
  EXPECT_EQ(*SelectOfferedVersion({0xFAFAFAFA, 2, 1, 3}, 1, 2), 2u);
  // A grease value inside the server's range is still never selected.
  EXPECT_EQ(*SelectOfferedVersion({1, 0x0A0A0A0A}, 1, 0xFFFFFFFF), 1u);
  // Order does not matter; zero is ignored.
  EXPECT_EQ(*SelectOfferedVersion({0, 1}, 1, 1), 1u);
}

TEST(SelectOfferedVersionTest, NothingInCommonOrTooManyEntries) {
  EXPECT_EQ(ErrorCodeOf(SelectOfferedVersion({0x0A0A0A0A}, 1, 1).status()),
            ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(ErrorCodeOf(SelectOfferedVersion({2, 3}, 1, 1).status()),
            ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(ErrorCodeOf(SelectOfferedVersion(std::vector<uint32_t>(16, 1), 1, 1).status()),
            ErrorCode::kOk);
  EXPECT_EQ(ErrorCodeOf(SelectOfferedVersion(std::vector<uint32_t>(17, 1), 1, 1).status()),
            ErrorCode::kInvalidArgument);
}

TEST(SelectBindingTest, TheClientsFirstImplementedBindingGreaseAndUnknownSkipped) {
  // An empty offer is UCX (binding 1).
  EXPECT_EQ(*SelectBinding({}, {kBindingUcx}), kBindingUcx);
  EXPECT_EQ(*SelectBinding({{0x0A0A0A0A, 8}, {77, 40}, {kBindingUcx, 0}}, {kBindingUcx}),
            kBindingUcx);
  // The client's order decides among bindings both implement.
  EXPECT_EQ(
      *SelectBinding({{kBindingVerbsRc, 28}, {kBindingUcx, 0}}, {kBindingUcx, kBindingVerbsRc}),
      kBindingVerbsRc);
  EXPECT_EQ(
      *SelectBinding({{kBindingUcx, 0}, {kBindingVerbsRc, 28}}, {kBindingVerbsRc, kBindingUcx}),
      kBindingUcx);
  // Zero is never assigned and is skipped like an unknown ID.
  EXPECT_EQ(*SelectBinding({{0, 0}, {kBindingUcx, 0}}, {kBindingUcx}), kBindingUcx);
}

TEST(SelectBindingTest, RefusalsNameTheirCause) {
  absl::Status none =
      SelectBinding({{0x0A0A0A0A, 0}, {kBindingVerbsRc, 28}}, {kBindingUcx}).status();
  EXPECT_EQ(ErrorCodeOf(none), ErrorCode::kNegotiationFailed);
  EXPECT_THAT(std::string(none.message()), ::testing::HasSubstr("{168430090, 2}"));
  EXPECT_EQ(ErrorCodeOf(SelectBinding({}, {kBindingVerbsRc}).status()),
            ErrorCode::kNegotiationFailed);
  std::vector<BindingOffer> sixteen(15, BindingOffer{0x0A0A0A0A, 0});
  sixteen.push_back({kBindingUcx, 0});
  EXPECT_TRUE(SelectBinding(sixteen, {kBindingUcx}).ok());
  sixteen.insert(sixteen.begin(), BindingOffer{0x1A1A1A1A, 0});
  EXPECT_EQ(ErrorCodeOf(SelectBinding(sixteen, {kBindingUcx}).status()),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      ErrorCodeOf(SelectBinding({{9, kMaxWorkerAddressBytes + 1}, {kBindingUcx, 0}}, {kBindingUcx})
                      .status()),
      ErrorCode::kInvalidArgument);
  EXPECT_TRUE(SelectBinding({{9, kMaxWorkerAddressBytes}, {kBindingUcx, 0}}, {kBindingUcx}).ok());
  EXPECT_EQ(ErrorCodeOf(SelectBinding({{kBindingUcx, 1}}, {kBindingUcx}).status()),
            ErrorCode::kInvalidArgument);
}

TEST(CheckSelectedBindingTest, OnlyAnOfferedBindingAndZeroMeansUcx) {
  EXPECT_TRUE(CheckSelectedBinding({kBindingUcx}, kBindingUcx).ok());
  EXPECT_TRUE(CheckSelectedBinding({kBindingUcx}, 0).ok());
  EXPECT_EQ(ErrorCodeOf(CheckSelectedBinding({kBindingUcx}, kBindingVerbsRc)),
            ErrorCode::kNegotiationFailed);
  EXPECT_EQ(ErrorCodeOf(CheckSelectedBinding({kBindingVerbsRc}, 0)), ErrorCode::kNegotiationFailed);
  // A grease value is never a selection, even one the client sent.
  EXPECT_EQ(ErrorCodeOf(CheckSelectedBinding({kBindingUcx, 0x3A3A3A3A}, 0x3A3A3A3A)),
            ErrorCode::kNegotiationFailed);
}

TEST(CheckPreviousOfferTest, AFirstOfferThisServerCouldServeIsADowngrade) {
  EXPECT_TRUE(CheckPreviousOffer({}, 1, 1).ok());
  EXPECT_TRUE(CheckPreviousOffer({2, 0x0A0A0A0A}, 1, 1).ok());
  EXPECT_EQ(ErrorCodeOf(CheckPreviousOffer({2, 1}, 1, 1)), ErrorCode::kNegotiationFailed);
  EXPECT_EQ(ErrorCodeOf(CheckPreviousOffer(std::vector<uint32_t>(17, 9), 1, 1)),
            ErrorCode::kInvalidArgument);
}

TEST(CheckNegotiatedTest, OnlyWhatWasOfferedGreaseAside) {
  const std::vector<uint32_t> versions = {1};
  const std::vector<uint32_t> caps = {1, 2, 0x1A2A3A4A};
  EXPECT_TRUE(CheckNegotiated(versions, caps, 1, {1, 2}).ok());
  EXPECT_TRUE(CheckNegotiated(versions, caps, 1, {2, 0x5A5A5A5A}).ok());  // AOBJ-EXT-012
  EXPECT_TRUE(CheckNegotiated(versions, caps, 1, {}).ok());
  EXPECT_EQ(ErrorCodeOf(CheckNegotiated(versions, caps, 2, {1})), ErrorCode::kNegotiationFailed);
  EXPECT_EQ(ErrorCodeOf(CheckNegotiated(versions, caps, 0, {1})), ErrorCode::kNegotiationFailed);
  EXPECT_EQ(ErrorCodeOf(CheckNegotiated({1, 0x0A0A0A0A}, caps, 0x0A0A0A0A, {1})),
            ErrorCode::kNegotiationFailed);
  EXPECT_EQ(ErrorCodeOf(CheckNegotiated(versions, caps, 1, {1, 3})), ErrorCode::kNegotiationFailed);
}

TEST(RandomGreaseValueTest, AlwaysGreaseAndNotAlwaysTheSame) {
  std::vector<uint32_t> seen;
  for (int i = 0; i < 64; ++i) {
    const uint32_t v = RandomGreaseValue();
    EXPECT_TRUE(IsGrease(v)) << std::hex << v;
    seen.push_back(v);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_GT(std::unique(seen.begin(), seen.end()) - seen.begin(), 8);
}

// --- SelectVersion (AOBJ-SES-002..004, AOBJ-EXT-021) ---

TEST(SelectVersionTest, SelectsOnlyCommonVersion) {
  // AOBJ-SES-002
  auto v = SelectVersion(1, 1, 1, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 1u);
}

TEST(SelectVersionTest, SelectsHighestCommonVersion) {
  // AOBJ-SES-002: [2, 7] ∩ [1, 5] = [2, 5] -> 5; [1, 3] ∩ [2, 9] = [2, 3] -> 3.
  auto a = SelectVersion(2, 7, 1, 5);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, 5u);
  auto b = SelectVersion(1, 3, 2, 9);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, 3u);
}

TEST(SelectVersionTest, SelectsSingleOverlappingVersionAtEdges) {
  // AOBJ-SES-002: ranges that touch in one version.
  auto a = SelectVersion(1, 3, 3, 6);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, 3u);
  auto b = SelectVersion(6, 8, 3, 6);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, 6u);
}

TEST(SelectVersionTest, GreaseMaximumStillSelectsVersionOne) {
  // AOBJ-EXT-021: a maximum above every assigned version selects the server's highest.
  for (uint32_t max : {0x7A7A7A7Au, 0x0A0A0A0Au, UINT32_MAX}) {
    auto v = SelectVersion(1, max, 1, kProtocolVersion);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(*v, 1u) << max;
  }
}

TEST(SelectVersionTest, RejectsClientRangeAboveServer) {
  // AOBJ-SES-003
  EXPECT_EQ(ErrorCodeOf(SelectVersion(2, 5, 1, 1).status()), ErrorCode::kUnsupportedVersion);
}

TEST(SelectVersionTest, RejectsClientRangeBelowServer) {
  // AOBJ-SES-003
  EXPECT_EQ(ErrorCodeOf(SelectVersion(1, 2, 3, 5).status()), ErrorCode::kUnsupportedVersion);
}

TEST(SelectVersionTest, RejectsZeroMinimum) {
  // AOBJ-SES-004: min 0 is malformed, even when the range would overlap.
  EXPECT_EQ(ErrorCodeOf(SelectVersion(0, 1, 1, 1).status()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(SelectVersion(0, 0, 1, 1).status()), ErrorCode::kInvalidArgument);
}

TEST(SelectVersionTest, RejectsMinimumAboveMaximum) {
  // AOBJ-SES-004: malformed ranges report INVALID_ARGUMENT, not UNSUPPORTED_VERSION.
  EXPECT_EQ(ErrorCodeOf(SelectVersion(2, 1, 1, 1).status()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(SelectVersion(5, 3, 1, 10).status()), ErrorCode::kInvalidArgument);
}

// --- IsGrease (AOBJ-EXT-001, AOBJ-EXT-004) ---

TEST(IsGreaseTest, RecognisesGreasePattern) {
  // AOBJ-EXT-001: (v & 0x0F0F0F0F) == 0x0A0A0A0A.
  EXPECT_TRUE(IsGrease(0x0A0A0A0Au));
  EXPECT_TRUE(IsGrease(0x3A5A7A9Au));  // 979008154, spec Appendix A.2
  EXPECT_TRUE(IsGrease(0x7A7A7A7Au));
  EXPECT_TRUE(IsGrease(0xFAFAFAFAu));
}

TEST(IsGreaseTest, RejectsNearMissesAndAssignedValues) {
  // AOBJ-EXT-001
  EXPECT_FALSE(IsGrease(0));
  EXPECT_FALSE(IsGrease(kCapInline));
  EXPECT_FALSE(IsGrease(kCapMultiDescriptor));
  EXPECT_FALSE(IsGrease(0x0A0A0A0Bu));
  EXPECT_FALSE(IsGrease(0x0A0A0B0Au));
  EXPECT_FALSE(IsGrease(0x0B0A0A0Au));
  EXPECT_FALSE(IsGrease(0x0A0A0A00u));
  EXPECT_FALSE(IsGrease(0xFFFFFFFFu));
}

// --- IntersectCapabilities (AOBJ-SES-005) ---

const std::vector<uint32_t> kServerCaps = {kCapInline, kCapCrc32c, kCapCrc64Nvme,
                                           kCapMultiDescriptor};

TEST(IntersectCapabilitiesTest, ReturnsCommonCapabilitiesAscending) {
  // AOBJ-SES-005
  EXPECT_THAT(IntersectCapabilities({kCapMultiDescriptor, kCapInline}, kServerCaps),
              ElementsAre(kCapInline, kCapMultiDescriptor));
}

TEST(IntersectCapabilitiesTest, IgnoresGreaseAndUnknownIds) {
  // AOBJ-SES-005, AOBJ-EXT-001
  EXPECT_THAT(IntersectCapabilities({0x3A5A7A9Au, kCapCrc32c, 99, 0x0A0A0A0Au, 0}, kServerCaps),
              ElementsAre(kCapCrc32c));
}

TEST(IntersectCapabilitiesTest, DeduplicatesOfferedAndSupported) {
  // AOBJ-SES-005: duplicates are ignored.
  EXPECT_THAT(IntersectCapabilities({kCapCrc32c, kCapInline, kCapCrc32c, kCapInline},
                                    {kCapInline, kCapCrc32c, kCapInline}),
              ElementsAre(kCapInline, kCapCrc32c));
}

TEST(IntersectCapabilitiesTest, ListsNothingTheClientDidNotOffer) {
  // AOBJ-SES-005
  EXPECT_THAT(IntersectCapabilities({}, kServerCaps), IsEmpty());
  EXPECT_THAT(IntersectCapabilities({0x7A7A7A7Au, 77}, kServerCaps), IsEmpty());
}

TEST(IntersectCapabilitiesTest, ListsNothingTheServerDoesNotSupport) {
  // AOBJ-SES-005
  EXPECT_THAT(IntersectCapabilities({kCapInline, kCapCrc64Nvme}, {kCapCrc64Nvme}),
              ElementsAre(kCapCrc64Nvme));
  EXPECT_THAT(IntersectCapabilities({kCapInline}, {}), IsEmpty());
}

// --- EffectiveLimits (AOBJ-SES-006) ---

SessionLimits ServerLimits() {
  SessionLimits s;
  s.max_transfer_bytes = 64ull << 30;
  s.max_in_flight = 16;
  s.inline_threshold = 16384;
  s.max_descriptors = 16;
  s.max_rkey_bytes = 1024;
  return s;
}

SessionLimits Zero() {
  SessionLimits z;
  z.max_transfer_bytes = 0;
  z.max_in_flight = 0;
  z.inline_threshold = 0;
  z.max_descriptors = 0;
  z.max_rkey_bytes = 0;
  return z;
}

TEST(EffectiveLimitsTest, ZeroRequestsTakeServerValues) {
  // AOBJ-SES-006: zero means "the server's value".
  SessionLimits e = EffectiveLimits(ServerLimits(), Zero());
  EXPECT_EQ(e.max_transfer_bytes, 64ull << 30);
  EXPECT_EQ(e.max_in_flight, 16u);
  EXPECT_EQ(e.inline_threshold, 16384u);
  EXPECT_EQ(e.max_descriptors, 16u);
  EXPECT_EQ(e.max_rkey_bytes, 1024u);
}

TEST(EffectiveLimitsTest, SmallerNonZeroRequestsWin) {
  // AOBJ-SES-006: a client can lower each limit.
  SessionLimits r;
  r.max_transfer_bytes = 1 << 20;
  r.max_in_flight = 2;
  r.inline_threshold = 1;
  r.max_descriptors = 1;
  r.max_rkey_bytes = 512;
  SessionLimits e = EffectiveLimits(ServerLimits(), r);
  EXPECT_EQ(e.max_transfer_bytes, 1u << 20);
  EXPECT_EQ(e.max_in_flight, 2u);
  EXPECT_EQ(e.inline_threshold, 1u);
  EXPECT_EQ(e.max_descriptors, 1u);
  EXPECT_EQ(e.max_rkey_bytes, 512u);
}

TEST(EffectiveLimitsTest, LargerRequestsDoNotRaiseLimits) {
  // AOBJ-SES-006: a client can never raise a limit.
  SessionLimits r;
  r.max_transfer_bytes = UINT64_MAX;
  r.max_in_flight = 17;
  r.inline_threshold = 16385;
  r.max_descriptors = UINT32_MAX;
  r.max_rkey_bytes = 1025;
  SessionLimits e = EffectiveLimits(ServerLimits(), r);
  EXPECT_EQ(e.max_transfer_bytes, 64ull << 30);
  EXPECT_EQ(e.max_in_flight, 16u);
  EXPECT_EQ(e.inline_threshold, 16384u);
  EXPECT_EQ(e.max_descriptors, 16u);
  EXPECT_EQ(e.max_rkey_bytes, 1024u);
}

TEST(EffectiveLimitsTest, EqualRequestsKeepServerValues) {
  // AOBJ-SES-006
  SessionLimits e = EffectiveLimits(ServerLimits(), ServerLimits());
  EXPECT_EQ(e.max_transfer_bytes, 64ull << 30);
  EXPECT_EQ(e.max_in_flight, 16u);
  EXPECT_EQ(e.max_rkey_bytes, 1024u);
}

TEST(EffectiveLimitsTest, FieldsAreChosenIndependently) {
  // AOBJ-SES-006: each field on its own.
  SessionLimits r = Zero();
  r.max_in_flight = 4;
  r.max_rkey_bytes = 4096;
  SessionLimits e = EffectiveLimits(ServerLimits(), r);
  EXPECT_EQ(e.max_transfer_bytes, 64ull << 30);
  EXPECT_EQ(e.max_in_flight, 4u);
  EXPECT_EQ(e.inline_threshold, 16384u);
  EXPECT_EQ(e.max_descriptors, 16u);
  EXPECT_EQ(e.max_rkey_bytes, 1024u);
}

// --- Credits (spec section 10.1) ---

// AOBJ-FLO-008, AOBJ-FLO-009: the whole max_in_flight up to half-full queues, then in proportion
// down to 1; never 0, never above max_in_flight.
TEST(GrantCreditsTest, FullGrantUntilHalfFullThenDownToOne) {
  EXPECT_EQ(GrantCredits(16, 0.0), 16u);
  EXPECT_EQ(GrantCredits(16, 0.5), 16u);
  EXPECT_EQ(GrantCredits(16, 0.75), 8u);
  EXPECT_EQ(GrantCredits(16, 0.99), 1u);
  EXPECT_EQ(GrantCredits(16, 1.0), 1u);
  EXPECT_EQ(GrantCredits(16, 7.0), 1u);
  EXPECT_EQ(GrantCredits(16, std::nan("")), 16u);
  EXPECT_EQ(GrantCredits(0, 0.0), 1u);  // never a grant of zero
  for (double p = 0.0; p <= 1.0; p += 0.01) {
    const uint32_t c = GrantCredits(5, p);
    EXPECT_GE(c, 1u) << p;
    EXPECT_LE(c, 5u) << p;
    EXPECT_LE(c, GrantCredits(5, p - 0.01)) << "the grant never grows with the pressure: " << p;
  }
}

// AOBJ-FLO-010: 0 is no grant (max_in_flight); a grant above max_in_flight is capped.
TEST(CreditsFromReplyTest, NoGrantMeansMaxInFlightAndTheGrantIsCapped) {
  EXPECT_EQ(CreditsFromReply(0, 16), 16u);
  EXPECT_EQ(CreditsFromReply(4, 16), 4u);
  EXPECT_EQ(CreditsFromReply(1, 16), 1u);
  EXPECT_EQ(CreditsFromReply(20, 16), 16u);
  EXPECT_EQ(CreditsFromReply(0, 0), 1u);
}

// The server grants after serializing (AppendCredits); every data reply has `credits` as field
// 15, so the appended octets parse as that field in each, replacing any earlier value.
TEST(AppendCreditsTest, ParsesAsTheCreditsFieldOfEveryDataReply) {
  aobj::v1::GetObjectResponse get;
  get.set_bytes_transferred(4096);
  get.set_credits(3);
  std::string octets = get.SerializeAsString();
  AppendCredits(&octets, 300);  // two varint octets
  aobj::v1::GetObjectResponse back;
  ASSERT_TRUE(back.ParseFromString(octets));
  EXPECT_EQ(back.credits(), 300u);
  EXPECT_EQ(back.bytes_transferred(), 4096u);
  const google::protobuf::Descriptor* replies[] = {
      aobj::v1::PutObjectResponse::descriptor(), aobj::v1::GetObjectResponse::descriptor(),
      aobj::v1::UploadPartResponse::descriptor(), aobj::v1::GetObjectsResponse::descriptor(),
      aobj::v1::PutObjectsResponse::descriptor()};
  for (const google::protobuf::Descriptor* d : replies) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByNumber(kCreditsField);
    ASSERT_NE(f, nullptr) << d->full_name();
    EXPECT_EQ(f->name(), "credits") << d->full_name();
    EXPECT_EQ(f->type(), google::protobuf::FieldDescriptor::TYPE_UINT32) << d->full_name();
  }
}

// --- Capability parameters and grease fields (AOBJ-EXT-015 to AOBJ-EXT-017) ---

TEST(CheckCapabilityParamsTest, BoundsAndDuplicatesAreRefusedAndNamed) {
  std::vector<CapabilityParamEntry> at_bounds;
  for (uint32_t i = 0; i < kMaxCapabilityParams; ++i) {
    at_bounds.push_back({1000 + i, kMaxCapabilityParamBytes});
  }
  EXPECT_TRUE(CheckCapabilityParams(at_bounds).ok());
  EXPECT_TRUE(CheckCapabilityParams({}).ok());
  std::vector<CapabilityParamEntry> too_many = at_bounds;
  too_many.push_back({5000, 0});
  const absl::Status many = CheckCapabilityParams(too_many);
  EXPECT_EQ(ErrorCodeOf(many), ErrorCode::kInvalidArgument);
  EXPECT_THAT(std::string(many.message()), ::testing::HasSubstr("65 entries"));
  const absl::Status big = CheckCapabilityParams({{2, 1}, {7, kMaxCapabilityParamBytes + 1}});
  EXPECT_EQ(ErrorCodeOf(big), ErrorCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.message()), ::testing::HasSubstr("entry 1 (capability 7)"));
  const absl::Status twice = CheckCapabilityParams({{2, 1}, {3, 1}, {2, 0}});
  EXPECT_EQ(ErrorCodeOf(twice), ErrorCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.message()), ::testing::HasSubstr("entries 0 and 2"));
}

TEST(GreaseFieldTest, NumbersInTheReservedRangeAndShortOctets) {
  bool low = false, high = false;
  for (int i = 0; i < 2000; ++i) {
    const uint32_t f = RandomGreaseField();
    ASSERT_GE(f, kGreaseFieldFirst);
    ASSERT_LE(f, kGreaseFieldLast);
    low = low || f < 1500;
    high = high || f >= 1500;
    const std::string octets = RandomGreaseOctets();
    ASSERT_GE(octets.size(), 1u);
    ASSERT_LE(octets.size(), 16u);
  }
  EXPECT_TRUE(low && high) << "the whole range is drawn from";
  // Nothing of aobj.v1 uses the range (AOBJ-EXT-016).
  const google::protobuf::FileDescriptor* file = aobj::v1::Limits::descriptor()->file();
  ASSERT_GT(file->message_type_count(), 40);
  for (int m = 0; m < file->message_type_count(); ++m) {
    const google::protobuf::Descriptor* d = file->message_type(m);
    for (int i = 0; i < d->field_count(); ++i) {
      EXPECT_LT(static_cast<uint32_t>(d->field(i)->number()), kGreaseFieldFirst)
          << d->field(i)->full_name();
    }
  }
}

}  // namespace
}  // namespace aobj
