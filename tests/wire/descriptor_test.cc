#include "wire/descriptor.h"

#include <cstdint>
#include <string>
#include <vector>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using aobj::v1::MemoryDescriptor;

constexpr uint64_t kGiB = 1ull << 30;

MemoryDescriptor* Add(Descriptors& ds, uint64_t address, uint64_t length,
                      std::string rkey = "rk",
                      aobj::v1::MemoryType type = aobj::v1::MEMORY_TYPE_HOST) {
  MemoryDescriptor* d = ds.Add();
  d->set_address(address);
  d->set_length(length);
  d->set_rkey(std::move(rkey));
  d->set_memory_type(type);
  return d;
}

SessionLimits Limits(uint32_t max_descriptors = 16, uint32_t max_rkey_bytes = 1024) {
  SessionLimits l;
  l.max_descriptors = max_descriptors;
  l.max_rkey_bytes = max_rkey_bytes;
  return l;
}

ErrorCode ValidateCode(const Descriptors& ds, const SessionLimits& limits = Limits()) {
  return ErrorCodeOf(ValidateDescriptors(ds, limits));
}

void ExpectPiece(const TransferPiece& p, size_t window, uint64_t remote, uint64_t body_offset,
                 uint64_t length) {
  EXPECT_EQ(p.window, window);
  EXPECT_EQ(p.remote, remote);
  EXPECT_EQ(p.body_offset, body_offset);
  EXPECT_EQ(p.length, length);
}

// --- ValidateDescriptors ---

TEST(ValidateDescriptorsTest, AcceptsWellFormedHostDescriptors) {
  // AOBJ-MEM-001..006
  Descriptors ds;
  Add(ds, 0x1000, 4096);
  Add(ds, 0x7f0000000000, 1);
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kOk);
}

TEST(ValidateDescriptorsTest, AcceptsEmptyList) {
  // AOBJ-MEM-005: zero descriptors is within any limit (the size check is PlanTransfer's).
  Descriptors ds;
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kOk);
}

TEST(ValidateDescriptorsTest, AcceptsCountAtLimit) {
  // AOBJ-MEM-005
  Descriptors ds;
  for (int i = 0; i < 4; ++i) Add(ds, 0x1000 * (i + 1), 16);
  EXPECT_EQ(ValidateCode(ds, Limits(/*max_descriptors=*/4)), ErrorCode::kOk);
}

TEST(ValidateDescriptorsTest, RejectsCountOverLimit) {
  // AOBJ-MEM-005
  Descriptors ds;
  for (int i = 0; i < 5; ++i) Add(ds, 0x1000 * (i + 1), 16);
  EXPECT_EQ(ValidateCode(ds, Limits(/*max_descriptors=*/4)), ErrorCode::kInvalidDescriptor);
}

TEST(ValidateDescriptorsTest, RejectsZeroLength) {
  // AOBJ-MEM-001
  Descriptors ds;
  Add(ds, 0x1000, 16);
  Add(ds, 0x2000, 0);
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kInvalidDescriptor);
}

TEST(ValidateDescriptorsTest, AcceptsWindowEndingExactlyAt2To64) {
  // AOBJ-MEM-002: address + length MUST NOT exceed 2^64; equal to 2^64 is allowed.
  Descriptors ds;
  Add(ds, UINT64_MAX - 15, 16);  // last octet at 2^64 - 1
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kOk);
  Descriptors last;
  Add(last, UINT64_MAX, 1);
  EXPECT_EQ(ValidateCode(last), ErrorCode::kOk);
  Descriptors whole;
  Add(whole, 0, UINT64_MAX);  // [0, 2^64 - 1)
  EXPECT_EQ(ValidateCode(whole), ErrorCode::kOk);
}

TEST(ValidateDescriptorsTest, RejectsWindowWrappingPast2To64ByOne) {
  // AOBJ-MEM-002
  Descriptors ds;
  Add(ds, UINT64_MAX - 14, 16);  // address + length = 2^64 + 1
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kInvalidDescriptor);
  Descriptors both_max;
  Add(both_max, UINT64_MAX, UINT64_MAX);
  EXPECT_EQ(ValidateCode(both_max), ErrorCode::kInvalidDescriptor);
  Descriptors from_one;
  Add(from_one, 1, UINT64_MAX);  // address + length = 2^64 exactly
  EXPECT_EQ(ValidateCode(from_one), ErrorCode::kOk);
  Descriptors from_two;
  Add(from_two, 2, UINT64_MAX);  // 2^64 + 1
  EXPECT_EQ(ValidateCode(from_two), ErrorCode::kInvalidDescriptor);
}

TEST(ValidateDescriptorsTest, RejectsEmptyRkey) {
  // AOBJ-MEM-003
  Descriptors ds;
  Add(ds, 0x1000, 16, "");
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kInvalidRkey);
}

TEST(ValidateDescriptorsTest, AcceptsRkeyAtLimitAndRejectsOneOver) {
  // AOBJ-MEM-003: at most max_rkey_bytes.
  Descriptors at;
  Add(at, 0x1000, 16, std::string(64, 'k'));
  EXPECT_EQ(ValidateCode(at, Limits(16, /*max_rkey_bytes=*/64)), ErrorCode::kOk);
  Descriptors over;
  Add(over, 0x1000, 16, std::string(65, 'k'));
  EXPECT_EQ(ValidateCode(over, Limits(16, /*max_rkey_bytes=*/64)), ErrorCode::kInvalidRkey);
}

TEST(ValidateDescriptorsTest, RejectsCudaWithUnsupportedMemoryType) {
  // AOBJ-MEM-006
  Descriptors ds;
  Add(ds, 0x1000, 16, "rk", aobj::v1::MEMORY_TYPE_CUDA);
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kUnsupportedMemoryType);
}

TEST(ValidateDescriptorsTest, RejectsUnspecifiedMemoryTypeAsInvalid) {
  // AOBJ-MEM-006
  Descriptors ds;
  Add(ds, 0x1000, 16, "rk", aobj::v1::MEMORY_TYPE_UNSPECIFIED);
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kInvalidDescriptor);
}

TEST(ValidateDescriptorsTest, RejectsUnknownMemoryTypeAsUnsupported) {
  // AOBJ-MEM-019: a memory_type value the server does not know -> UNSUPPORTED_MEMORY_TYPE.
  // Built from wire octets, as a peer would send it: field 4 (varint) = 7.
  aobj::v1::MemoryDescriptor d;
  const std::string wire("\x08\x80\x20\x10\x10\x1a\x02rk\x20\x07", 11);
  ASSERT_TRUE(d.ParseFromString(wire));
  ASSERT_EQ(static_cast<int>(d.memory_type()), 7);
  Descriptors ds;
  *ds.Add() = d;
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kUnsupportedMemoryType);
}

TEST(ValidateDescriptorsTest, ReportsFirstBadDescriptorAfterGoodOnes) {
  // AOBJ-MEM-020: every descriptor is checked, not only the first.
  Descriptors ds;
  Add(ds, 0x1000, 16);
  Add(ds, 0x2000, 16);
  Add(ds, 0x3000, 16, "", aobj::v1::MEMORY_TYPE_HOST);
  EXPECT_EQ(ValidateCode(ds), ErrorCode::kInvalidRkey);
}

// --- PlanTransfer (AOBJ-MEM-007, AOBJ-MEM-008, AOBJ-MEM-016, AOBJ-DAT-012) ---

TEST(PlanTransferTest, SingleWindowOfExactSize) {
  // AOBJ-MEM-008: ordered fill from the window's start.
  Descriptors ds;
  Add(ds, 0x1000, 4096);
  auto plan = PlanTransfer(ds, 4096, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  ExpectPiece((*plan)[0], 0, 0x1000, 0, 4096);
}

TEST(PlanTransferTest, WindowLargerThanBodyIsFilledFromItsStartOnly) {
  // AOBJ-MEM-016: nothing past the body's last octet.
  Descriptors ds;
  Add(ds, 0x1000, 4096);
  Add(ds, 0x9000, 4096);
  auto plan = PlanTransfer(ds, 100, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  ExpectPiece((*plan)[0], 0, 0x1000, 0, 100);
}

TEST(PlanTransferTest, SeveralWindowsFilledInOrder) {
  // AOBJ-MEM-008 / AOBJ-MEM-016: first window full, then the next from its start.
  Descriptors ds;
  Add(ds, 0x9000, 10);
  Add(ds, 0x1000, 20);  // windows need not be ascending or adjacent
  Add(ds, 0x5000, 30);
  auto plan = PlanTransfer(ds, 45, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);
  ExpectPiece((*plan)[0], 0, 0x9000, 0, 10);
  ExpectPiece((*plan)[1], 1, 0x1000, 10, 20);
  ExpectPiece((*plan)[2], 2, 0x5000, 30, 15);
}

TEST(PlanTransferTest, SplitsPiecesAtMaxPiece) {
  // AOBJ-DAT-012: pieces of at most max_piece octets, contiguous inside a window.
  Descriptors ds;
  Add(ds, 0x1000, 10);
  Add(ds, 0x8000, 7);
  auto plan = PlanTransfer(ds, 17, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 5u);
  ExpectPiece((*plan)[0], 0, 0x1000, 0, 4);
  ExpectPiece((*plan)[1], 0, 0x1004, 4, 4);
  ExpectPiece((*plan)[2], 0, 0x1008, 8, 2);
  ExpectPiece((*plan)[3], 1, 0x8000, 10, 4);
  ExpectPiece((*plan)[4], 1, 0x8004, 14, 3);
}

TEST(PlanTransferTest, PiecesCoverBodyExactlyOnce) {
  // AOBJ-MEM-008, AOBJ-DAT-012
  Descriptors ds;
  Add(ds, 0x10000, 1000);
  Add(ds, 0x20000, 333);
  Add(ds, 0x30000, 5000);
  auto plan = PlanTransfer(ds, 6000, 64);
  ASSERT_TRUE(plan.ok()) << plan.status();
  uint64_t next = 0;
  for (const TransferPiece& p : *plan) {
    EXPECT_EQ(p.body_offset, next);
    EXPECT_GT(p.length, 0u);
    EXPECT_LE(p.length, 64u);
    const auto& d = ds[static_cast<int>(p.window)];
    EXPECT_GE(p.remote, d.address());
    EXPECT_LE(p.remote + p.length, d.address() + d.length());  // AOBJ-MEM-009
    next += p.length;
  }
  EXPECT_EQ(next, 6000u);
}

TEST(PlanTransferTest, RejectsWindowsOneByteTooSmall) {
  // AOBJ-MEM-007 / AOBJ-MEM-008
  Descriptors ds;
  Add(ds, 0x1000, 10);
  Add(ds, 0x2000, 20);
  EXPECT_EQ(ErrorCodeOf(PlanTransfer(ds, 31, 0).status()), ErrorCode::kDescriptorTooSmall);
  EXPECT_EQ(ErrorCodeOf(PlanTransfer(ds, 31, 4).status()), ErrorCode::kDescriptorTooSmall);
  EXPECT_TRUE(PlanTransfer(ds, 30, 0).ok());
}

TEST(PlanTransferTest, RejectsNonEmptyBodyWithoutWindows) {
  // AOBJ-MEM-007
  Descriptors ds;
  EXPECT_EQ(ErrorCodeOf(PlanTransfer(ds, 1, 0).status()), ErrorCode::kDescriptorTooSmall);
}

TEST(PlanTransferTest, EmptyBodyGivesNoPieces) {
  // AOBJ-MEM-016: nothing is written for a zero-length body.
  Descriptors ds;
  Add(ds, 0x1000, 10);
  auto plan = PlanTransfer(ds, 0, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->empty());
  Descriptors none;
  auto none_plan = PlanTransfer(none, 0, 4);
  ASSERT_TRUE(none_plan.ok()) << none_plan.status();
  EXPECT_TRUE(none_plan->empty());
}

TEST(PlanTransferTest, HandlesSizesAbove4GiBWithoutOverflow) {
  // AOBJ-MEM-008 with 64-bit lengths; AOBJ-DAT-012 reference pieces of 64 MiB.
  Descriptors ds;
  Add(ds, 0x100000000000, 5 * kGiB + 3);
  Add(ds, 0x200000000000, 3 * kGiB);
  const uint64_t size = 7 * kGiB + 1;
  const uint64_t piece = 64ull << 20;
  auto plan = PlanTransfer(ds, size, piece);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Window 0: 80 full pieces and one of 3 octets; window 1: the last 2 GiB - 2 octets in 32
  // pieces, the last one 2 octets short.
  uint64_t total = 0;
  size_t in_window0 = 0;
  for (const TransferPiece& p : *plan) {
    EXPECT_LE(p.length, piece);
    EXPECT_EQ(p.body_offset, total);
    if (p.window == 0) {
      ++in_window0;
      EXPECT_EQ(p.remote, 0x100000000000 + p.body_offset);
    } else {
      EXPECT_EQ(p.remote, 0x200000000000 + (p.body_offset - (5 * kGiB + 3)));
    }
    total += p.length;
  }
  EXPECT_EQ(total, size);
  EXPECT_EQ(in_window0, 81u);
  EXPECT_EQ(plan->size(), 81u + 32u);
  const TransferPiece& last0 = (*plan)[80];
  ExpectPiece(last0, 0, 0x100000000000 + 5 * kGiB, 5 * kGiB, 3);
  const TransferPiece& last = plan->back();
  ExpectPiece(last, 1, 0x200000000000 + 31 * piece, 5 * kGiB + 3 + 31 * piece,
              size - (5 * kGiB + 3) - 31 * piece);
}

TEST(PlanTransferTest, HugeSingleWindowWithoutPieceLimit) {
  // AOBJ-MEM-008: 64-bit sizes, no 32-bit truncation; max_piece 0 means one piece per window.
  Descriptors ds;
  Add(ds, 0x1000, UINT64_MAX - 0x1000);
  const uint64_t size = (1ull << 40) + 12345;
  auto plan = PlanTransfer(ds, size, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  ExpectPiece((*plan)[0], 0, 0x1000, 0, size);
}

TEST(PlanTransferTest, WindowEndingAt2To64IsPlannedWithoutWrap) {
  // AOBJ-MEM-002, AOBJ-MEM-009: remote addresses stay inside the window.
  Descriptors ds;
  Add(ds, UINT64_MAX - 7, 8);
  auto plan = PlanTransfer(ds, 8, 3);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);
  ExpectPiece((*plan)[0], 0, UINT64_MAX - 7, 0, 3);
  ExpectPiece((*plan)[1], 0, UINT64_MAX - 4, 3, 3);
  ExpectPiece((*plan)[2], 0, UINT64_MAX - 1, 6, 2);
}

TEST(PlanTransferTest, RejectsTooSmallHugeWindows) {
  // AOBJ-MEM-007: sums above 4 GiB are compared in 64 bits.
  Descriptors ds;
  Add(ds, 0x1000, 4 * kGiB);
  Add(ds, 0x200000000000, 4 * kGiB);
  EXPECT_EQ(ErrorCodeOf(PlanTransfer(ds, 8 * kGiB + 1, 64ull << 20).status()),
            ErrorCode::kDescriptorTooSmall);
}

}  // namespace
}  // namespace aobj
