#include "transport/shm_guard.h"

#include <sys/ipc.h>
#include <sys/shm.h>

#include <vector>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

constexpr char kMaps[] =
    "55d000000000-55d000100000 r-xp 00000000 08:01 1234   /usr/bin/aobj-server\n"
    "55d000200000-55d000400000 rw-p 00000000 00:00 0      [heap]\n"
    "7f0000000000-7f0000100000 rw-s 00000000 00:01 4242   /SYSV00000000 (deleted)\n"
    "7f0000100000-7f0000200000 rw-s 00000000 00:01 4343   /SYSV00000000 (deleted)\n"
    "7f0000300000-7f0000400000 rw-s 00000000 00:05 77     /dev/shm/ucx_posix_1 (deleted)\n";

bool ForeignIs4242(uint64_t shmid) { return shmid == 4242; }

TEST(ShmGuardTest, AcceptsWindowInsideForeignSysvSegment) {
  EXPECT_TRUE(CheckForeignSharedWindowIn(kMaps, 0x7f0000000000, 0x100000, ForeignIs4242).ok());
  EXPECT_TRUE(CheckForeignSharedWindowIn(kMaps, 0x7f0000080000, 4096, ForeignIs4242).ok());
}

TEST(ShmGuardTest, RejectsWindowCrossingTheSegmentEnd) {
  // AOBJ-MEM-012: one byte past the segment, even into the adjacent one.
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, 0x7f0000000000, 0x100001, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);
}

TEST(ShmGuardTest, RejectsServersOwnSegmentsHeapAndUnmapped) {
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, 0x7f0000100000, 16, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);  // created by the server itself
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, 0x55d000200000, 16, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);  // heap
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, 0x1000, 16, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);  // unmapped
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, 0x7f0000300000, 16, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);  // posix: creator unknown, fail closed
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindowIn(kMaps, UINT64_MAX - 4, 16, ForeignIs4242)),
            ErrorCode::kDescriptorOutOfBounds);  // wraps
}

bool AllForeign(uint64_t) { return true; }

// AOBJ-MEM-012: UCX computes a window's local image as address plus the key's offset, without
// bounds, so a window outside its key's segment can land in another foreign segment (another
// client's memory, a receive FIFO). Only the segments the key names qualify.
TEST(ShmGuardTest, MappingMustBeASegmentTheKeyNames) {
  const std::vector<uint32_t> names_4242 = {4242};
  auto ok = FindForeignSharedMappingIn(kMaps, 0x7f0000080000, names_4242, AllForeign);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->lo, 0x7f0000000000u);
  EXPECT_EQ(ok->hi, 0x7f0000100000u);
  // 4343 is foreign too, but the key does not name it.
  EXPECT_EQ(ErrorCodeOf(
                FindForeignSharedMappingIn(kMaps, 0x7f0000100000, names_4242, AllForeign).status()),
            ErrorCode::kDescriptorOutOfBounds);
  // A key that names no System V segment reaches none.
  EXPECT_EQ(ErrorCodeOf(FindForeignSharedMappingIn(kMaps, 0x7f0000080000, {}, AllForeign).status()),
            ErrorCode::kDescriptorOutOfBounds);
  // Named but created by this process: still refused.
  EXPECT_EQ(ErrorCodeOf(FindForeignSharedMappingIn(kMaps, 0x7f0000080000, names_4242,
                                                   [](uint64_t) { return false; })
                            .status()),
            ErrorCode::kDescriptorOutOfBounds);
}

TEST(ShmGuardTest, RealSegmentCreatedByThisProcessIsRefused) {
  const int id = shmget(IPC_PRIVATE, 1 << 16, IPC_CREAT | 0600);
  ASSERT_GE(id, 0);
  void* p = shmat(id, nullptr, 0);
  shmctl(id, IPC_RMID, nullptr);
  ASSERT_NE(p, reinterpret_cast<void*>(-1));
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindow(reinterpret_cast<uintptr_t>(p), 4096)),
            ErrorCode::kDescriptorOutOfBounds);
  std::vector<char> heap(4096);
  EXPECT_EQ(ErrorCodeOf(CheckForeignSharedWindow(reinterpret_cast<uintptr_t>(heap.data()), 16)),
            ErrorCode::kDescriptorOutOfBounds);
  shmdt(p);
}

}  // namespace
}  // namespace aobj
