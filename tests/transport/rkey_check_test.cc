#include "transport/rkey_check.h"

#include <unistd.h>

#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"
#include <ucs/memory/memory_type.h>
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"

namespace aobj {
namespace {

std::string Header(uint64_t md_map, uint8_t mem_type = 0) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(md_map >> (8 * i)));
  s.push_back(static_cast<char>(mem_type));
  return s;
}

TEST(RkeyCheckTest, AcceptsWhatUcxPacks) {
  auto ctx = UcxContext::Create(DataChannelOptions{});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  for (bool allocate : {true, false}) {
    std::vector<uint8_t> own(1 << 16);
    auto mem = allocate ? RegisteredMemory::Allocate(**ctx, 1 << 16)
                        : RegisteredMemory::Register(**ctx, own.data(), own.size());
    ASSERT_TRUE(mem.ok()) << mem.status();
    EXPECT_TRUE(CheckPackedRkey((*mem)->packed_rkey(), 1024).ok()) << allocate;  // AOBJ-MEM-004
  }
}

// AOBJ-MEM-028: a System V segment named by a key must be the proven client's: one created by
// any other process fails before anything is attached.
TEST(RkeyCheckTest, PinRefusesSegmentsOfAnotherCreator) {
  auto ctx = UcxContext::Create(DataChannelOptions{});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto mem = RegisteredMemory::Allocate(**ctx, 1 << 16);
  ASSERT_TRUE(mem.ok()) << mem.status();
  const std::string blob = (*mem)->packed_rkey();
  bool names_sysv = false;
  for (absl::string_view e : PackedRkeyEntries(blob)) names_sysv |= e.size() == kSysvPackedRkeySize;
  if (!names_sysv) GTEST_SKIP() << "UCX did not allocate from System V here";
  EXPECT_TRUE(SysvSegmentPins::Pin(blob).ok());
  EXPECT_TRUE(SysvSegmentPins::Pin(blob, getpid()).ok());
  // The pid of a process that surely did not create it: our parent.
  EXPECT_EQ(ErrorCodeOf(SysvSegmentPins::Pin(blob, getppid()).status()),
            ErrorCode::kDescriptorOutOfBounds);
}

TEST(RkeyCheckTest, RejectsEmptyAndOversized) {
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey("", 1024)), ErrorCode::kInvalidRkey);  // AOBJ-MEM-003
  std::string ok = Header(1) + std::string("\x02xy", 3);
  EXPECT_TRUE(CheckPackedRkey(ok, 1024).ok());
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(ok, ok.size() - 1)), ErrorCode::kInvalidRkey);
}

TEST(RkeyCheckTest, RejectsTruncatedStructures) {
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(1).substr(0, 8), 1024)), ErrorCode::kInvalidRkey);
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(0), 1024)), ErrorCode::kInvalidRkey);
  // Two domains declared, one present.
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(3) + std::string("\x01x", 2), 1024)),
            ErrorCode::kInvalidRkey);
  // An entry that claims more bytes than remain.
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(1) + std::string("\x05xy", 3), 1024)),
            ErrorCode::kInvalidRkey);
  // Every bit set: 64 entries cannot fit in a short blob.
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(~uint64_t{0}) + std::string(20, '\0'), 1024)),
            ErrorCode::kInvalidRkey);
}

TEST(RkeyCheckTest, RejectsLongTrailerAndDeviceMemory) {
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(1) + std::string("\x00", 1) + std::string(100, 'z'),
                                        1024)),
            ErrorCode::kInvalidRkey);
  EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(1, 1) + std::string("\x00", 1), 1024)),
            ErrorCode::kUnsupportedMemoryType);
}

// Found by aobj-conformance case mem/7.2/2: random octets whose memory-type byte is no UCX memory
// type were answered UNSUPPORTED_MEMORY_TYPE; they are not a packed rkey at all.
TEST(RkeyCheckTest, UnknownMemoryTypeByteIsAnInvalidRkey) {
  for (uint8_t type : {uint8_t{UCS_MEMORY_TYPE_LAST}, uint8_t{28}, uint8_t{150}, uint8_t{255}}) {
    EXPECT_EQ(ErrorCodeOf(CheckPackedRkey(Header(1, type) + std::string("\x00", 1), 1024)),
              ErrorCode::kInvalidRkey)
        << int{type};
  }
}

}  // namespace
}  // namespace aobj
