#include "transport/rkey_check.h"

#include <ucs/memory/memory_type.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"
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

// One md entry of UCX 1.13.1's posix layout: seg_id (flags in bits 60-63), address, length.
std::string SegmentEntry(uint64_t seg_id, uint64_t address, uint64_t length,
                         const std::string& tail = "") {
  std::string e;
  for (uint64_t v : {seg_id, address, length}) {
    for (int i = 0; i < 8; ++i) e.push_back(static_cast<char>(v >> (8 * i)));
  }
  e += tail;
  return std::string(1, static_cast<char>(e.size())) + e;
}

// AOBJ-MEM-012 for emulated windows: inside the segment the key declares, to the octet.
TEST(RkeyCheckTest, WindowMustLieInsideTheDeclaredSegment) {
  constexpr uint64_t kProcfs = uint64_t{1} << 63;
  const std::string blob = Header(1) + SegmentEntry(kProcfs | 7, 0x10000, 0x4000);
  ASSERT_TRUE(CheckPackedRkey(blob, 1024).ok());
  EXPECT_TRUE(CheckWindowInDeclaredSegments(blob, 0x10000, 0x4000).ok());
  EXPECT_TRUE(CheckWindowInDeclaredSegments(blob, 0x13fff, 1).ok());
  EXPECT_TRUE(CheckWindowInDeclaredSegments(blob, 0x14000, 0).ok());
  for (auto [addr, len] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0x10000, 0x4001}, {0x13fff, 2}, {0x14000, 1}, {0xffff, 1}, {0, 0x10},
           {0x10001, ~uint64_t{0}}, {~uint64_t{0}, 2}}) {
    EXPECT_EQ(ErrorCodeOf(CheckWindowInDeclaredSegments(blob, addr, len)),
              ErrorCode::kDescriptorOutOfBounds)
        << std::hex << addr << " +" << len;
  }
  // A segment at the very top of the address space: no overflow either way.
  const std::string top = Header(1) + SegmentEntry(kProcfs, ~uint64_t{0} - 0xfff, 0x1000);
  EXPECT_TRUE(CheckWindowInDeclaredSegments(top, ~uint64_t{0} - 0xfff, 0x1000).ok());
  EXPECT_EQ(ErrorCodeOf(CheckWindowInDeclaredSegments(top, ~uint64_t{0} - 0xfff, 0x1001)),
            ErrorCode::kDescriptorOutOfBounds);
}

// The posix variants (PID namespace, a directory path) are bounded too; entries of other sizes
// (System V, knem, verbs) declare nothing; two declared segments both bound the window.
TEST(RkeyCheckTest, DeclaredSegmentsOfEveryPosixVariant) {
  constexpr uint64_t kShmOpen = uint64_t{1} << 62, kPidNs = uint64_t{1} << 60;
  const std::string pid_ns =
      Header(1) + SegmentEntry(kShmOpen | kPidNs | 3, 0x1000, 0x1000, std::string(8, '\1'));
  const std::string dir = Header(1) + SegmentEntry(5, 0x1000, 0x1000, std::string("/tmp\0", 5));
  for (const std::string& blob : {pid_ns, dir}) {
    ASSERT_TRUE(CheckPackedRkey(blob, 1024).ok());
    EXPECT_TRUE(CheckWindowInDeclaredSegments(blob, 0x1800, 0x800).ok());
    EXPECT_EQ(ErrorCodeOf(CheckWindowInDeclaredSegments(blob, 0x1800, 0x801)),
              ErrorCode::kDescriptorOutOfBounds);
  }
  const std::string undeclared = Header(3) + std::string("\x0c", 1) + std::string(12, '\2') +
                                 std::string("\x08", 1) + std::string(8, '\3');
  ASSERT_TRUE(CheckPackedRkey(undeclared, 1024).ok());
  EXPECT_TRUE(CheckWindowInDeclaredSegments(undeclared, 0, 1 << 20).ok());
  const std::string two = Header(3) + SegmentEntry(1ull << 63, 0x1000, 0x2000) +
                          SegmentEntry(1ull << 63, 0x2000, 0x2000);
  EXPECT_TRUE(CheckWindowInDeclaredSegments(two, 0x2000, 0x1000).ok());
  EXPECT_EQ(ErrorCodeOf(CheckWindowInDeclaredSegments(two, 0x1000, 0x1000)),
            ErrorCode::kDescriptorOutOfBounds);
}

// What UCX packs for posix memory (UCX_ALLOC_PRIO=md:posix) declares exactly the allocation.
TEST(RkeyCheckTest, UcxPosixKeyDeclaresItsSegment) {
  setenv("UCX_ALLOC_PRIO", "md:posix", 1);
  auto ctx = UcxContext::Create(DataChannelOptions{});
  unsetenv("UCX_ALLOC_PRIO");
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto mem = RegisteredMemory::Allocate(**ctx, 1 << 16);
  if (!mem.ok()) GTEST_SKIP() << "no posix allocation here: " << mem.status();
  const std::string blob = (*mem)->packed_rkey();
  const uint64_t base = reinterpret_cast<uint64_t>((*mem)->data());
  EXPECT_TRUE(CheckWindowInDeclaredSegments(blob, base, 1 << 16).ok());
  EXPECT_EQ(ErrorCodeOf(CheckWindowInDeclaredSegments(blob, base - 4096, 4096)),
            ErrorCode::kDescriptorOutOfBounds);
}

// What UCX packs for each allocator states the memory kind the conformance suite reports:
// System V and posix segments by default and with md:posix, nothing for ordinary memory (the
// TCP-only data channel allocates from mmap, and its key has one empty entry).
TEST(RkeyCheckTest, KeysStateTheirMemoryKind) {
  struct Case {
    const char* prio;
    KeyedMemory want;
  };
  for (const Case& c :
       {Case{"md:sysv", KeyedMemory::kSysvSegment}, Case{"md:posix", KeyedMemory::kStatedSegment},
        Case{"mmap", KeyedMemory::kOrdinary}}) {
    SCOPED_TRACE(c.prio);
    setenv("UCX_ALLOC_PRIO", c.prio, 1);
    auto ctx = UcxContext::Create(DataChannelOptions{});
    unsetenv("UCX_ALLOC_PRIO");
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    auto mem = RegisteredMemory::Allocate(**ctx, 1 << 16);
    ASSERT_TRUE(mem.ok()) << mem.status();
    ASSERT_TRUE(CheckPackedRkey((*mem)->packed_rkey(), 1024).ok());
    EXPECT_EQ(KeyedMemoryOf((*mem)->packed_rkey()), c.want);
  }
  EXPECT_EQ(KeyedMemoryOf(Header(1) + std::string("\x00", 1)), KeyedMemory::kOrdinary);
}

// Guard octets (the conformance suite's watch on writes outside windows) lie inside the same
// System V segment as the window, so a server that maps it checks windows against the whole
// registration, and the suite's window starts page-aligned after the guard.
TEST(RkeyCheckTest, GuardedAllocationSharesItsSegment) {
  auto ctx = UcxContext::Create(DataChannelOptions{});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto mem = RegisteredMemory::Allocate(**ctx, 1000, 4096);
  ASSERT_TRUE(mem.ok()) << mem.status();
  EXPECT_EQ((*mem)->size(), 1000u);
  EXPECT_EQ((*mem)->guard(), 4096u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*mem)->data()) % 4096, 0u);
  std::memset((*mem)->data() - 4096, 0x11, 4096 + 1000 + 4096);  // all of it is mapped
  EXPECT_EQ(KeyedMemoryOf((*mem)->packed_rkey()), KeyedMemory::kSysvSegment);
  auto plain = RegisteredMemory::Allocate(**ctx, 1000);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->guard(), 0u);
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
