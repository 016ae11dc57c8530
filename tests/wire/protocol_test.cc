#include "wire/protocol.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "aobj/status.h"
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

// --- SelectVersion (AOBJ-SES-002..004, AOBJ-EXT-003) ---

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
  // AOBJ-EXT-003: a maximum above every assigned version selects the server's highest.
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

}  // namespace
}  // namespace aobj
