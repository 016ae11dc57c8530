// AOBJ_PEER_INPUT: decodes packed rkeys from clients (fuzz target in fuzz/).
#include "transport/rkey_check.h"

#include <sys/shm.h>
#include <ucs/memory/memory_type.h>

#include <bit>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/le_codec.h"

namespace aobj {

namespace {

// The bounded reader over an absl view (a distinct type from std::string_view in Debian's Abseil).
LeReader ReaderOf(absl::string_view b) { return LeReader(std::string_view(b.data(), b.size())); }

}  // namespace

absl::Status CheckPackedRkey(absl::string_view blob, size_t max_bytes) {
  // AOBJ-MEM-003: non-empty and bounded.
  if (blob.empty()) return MakeError(ErrorCode::kInvalidRkey, "rkey is empty");
  if (blob.size() > max_bytes) {
    return MakeError(ErrorCode::kInvalidRkey,
                     absl::StrCat("rkey is ", blob.size(), " bytes; the limit is ", max_bytes));
  }
  // AOBJ-MEM-004: the declared structure fits in the blob.
  LeReader in = ReaderOf(blob);
  uint64_t md_map = 0;
  uint8_t mem_type = 0;
  if (!in.U64(&md_map) || !in.U8(&mem_type)) {
    return MakeError(ErrorCode::kInvalidRkey, "rkey shorter than its header");
  }
  if (md_map == 0) return MakeError(ErrorCode::kInvalidRkey, "rkey names no memory domain");
  if (mem_type >= UCS_MEMORY_TYPE_LAST) {
    // Not a memory type of this UCX release: the blob is not a packed rkey (found by
    // aobj-conformance case mem/7.2/2: random octets were reported as an unsupported type).
    return MakeError(ErrorCode::kInvalidRkey,
                     absl::StrCat("rkey memory type ", mem_type, " is not a UCX memory type"));
  }
  if (mem_type != UCS_MEMORY_TYPE_HOST) {
    return MakeError(ErrorCode::kUnsupportedMemoryType,
                     absl::StrCat("rkey memory type ", mem_type, " is not host memory"));
  }
  for (int i = 0; i < std::popcount(md_map); ++i) {
    uint8_t md_size = 0;
    std::string_view entry;
    if (!in.U8(&md_size)) {
      return MakeError(ErrorCode::kInvalidRkey, "rkey truncated in its md list");
    }
    if (!in.Bytes(md_size, &entry)) {
      return MakeError(ErrorCode::kInvalidRkey, "rkey md entry runs past the end");
    }
  }
  if (in.remaining() > kMaxRkeyTrailer) {
    return MakeError(ErrorCode::kInvalidRkey,
                     absl::StrCat("rkey has ", in.remaining(), " unexpected trailing bytes"));
  }
  return absl::OkStatus();
}

std::vector<absl::string_view> PackedRkeyEntries(absl::string_view blob) {
  std::vector<absl::string_view> out;
  LeReader in = ReaderOf(blob);
  uint64_t md_map = 0;
  uint8_t mem_type = 0;
  if (!in.U64(&md_map) || !in.U8(&mem_type)) return out;
  for (int i = 0; i < std::popcount(md_map); ++i) {
    uint8_t md_size = 0;
    std::string_view entry;
    if (!in.U8(&md_size) || !in.Bytes(md_size, &entry)) break;
    out.push_back(absl::string_view(entry.data(), entry.size()));
  }
  return out;
}

namespace {

// The little-endian uint64 at `at` of an entry of at least at + 8 octets.
uint64_t LoadLe64(absl::string_view b, size_t at) {
  uint64_t v = 0;
  ReaderOf(b.substr(at, 8)).U64(&v);
  return v;
}

// Whether an md entry has the layout of a posix (or xpmem) key: see kSegmentPackedRkeySize.
bool IsSegmentEntry(absl::string_view e) {
  if (e.size() < kSegmentPackedRkeySize) return false;
  const uint64_t seg_id = LoadLe64(e, 0);
  constexpr uint64_t kProcfs = uint64_t{1} << 63, kShmOpen = uint64_t{1} << 62;
  constexpr uint64_t kPidNs = uint64_t{1} << 60;
  if (e.size() == kSegmentPackedRkeySize) return true;
  if ((seg_id & (kProcfs | kShmOpen)) != 0) {
    return (seg_id & kPidNs) != 0 && e.size() == kSegmentPackedRkeySize + 8;
  }
  return e.back() == '\0';  // a directory path follows
}

}  // namespace

absl::Status CheckWindowInDeclaredSegments(absl::string_view blob, uint64_t address,
                                           uint64_t length) {
  for (absl::string_view e : PackedRkeyEntries(blob)) {
    if (!IsSegmentEntry(e)) continue;
    const uint64_t lo = LoadLe64(e, 8), size = LoadLe64(e, 16);
    // AOBJ-MEM-029: inside the segment the client registered; written so nothing overflows.
    if (address < lo || address - lo > size || length > size - (address - lo)) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       absl::StrCat("descriptor window [0x", absl::Hex(address), ", +", length,
                                    ") does not lie inside the shared-memory segment its rkey "
                                    "covers [0x", absl::Hex(lo), ", +", size, ") (AOBJ-MEM-029)"));
    }
  }
  return absl::OkStatus();
}

KeyedMemory KeyedMemoryOf(absl::string_view blob) {
  KeyedMemory kind = KeyedMemory::kOrdinary;
  for (absl::string_view e : PackedRkeyEntries(blob)) {
    if (e.size() == kSysvPackedRkeySize) kind = KeyedMemory::kSysvSegment;
    if (IsSegmentEntry(e)) return KeyedMemory::kStatedSegment;
  }
  return kind;
}

std::vector<uint32_t> SysvSegmentIds(absl::string_view blob) {
  std::vector<uint32_t> ids;
  for (absl::string_view entry : PackedRkeyEntries(blob)) {
    if (entry.size() != kSysvPackedRkeySize) continue;
    uint32_t shmid = 0;
    ReaderOf(entry).U32(&shmid);
    ids.push_back(shmid);
  }
  return ids;
}

absl::StatusOr<SysvSegmentPins> SysvSegmentPins::Pin(absl::string_view blob, pid_t creator) {
  SysvSegmentPins pins;
  for (const uint32_t shmid : SysvSegmentIds(blob)) {
    if (creator != 0) {
      struct shmid_ds ds {};
      if (shmctl(static_cast<int>(shmid), IPC_STAT, &ds) == 0 && ds.shm_cpid != creator) {
        return MakeError(ErrorCode::kDescriptorOutOfBounds,
                         "rkey names a shared-memory segment that the session's client did not "
                         "create (AOBJ-MEM-028)");
      }
    }
    // Linux lets a segment marked for removal be attached while someone holds it, so holding
    // this attachment keeps the segment alive until UCX has attached it too.
    void* at = shmat(static_cast<int>(shmid), nullptr, SHM_RDONLY);
    if (at == reinterpret_cast<void*>(-1)) {
      return MakeError(ErrorCode::kInvalidRkey,
                       "rkey names a shared-memory segment that cannot be attached (it does not "
                       "exist, or the client exited)");
    }
    pins.attached_.push_back(at);
  }
  return pins;
}

SysvSegmentPins::~SysvSegmentPins() {
  for (void* at : attached_) shmdt(at);
}

}  // namespace aobj
