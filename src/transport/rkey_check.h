// Structural validation of a peer's packed UCX rkey before it reaches ucp_ep_rkey_unpack.
//
// ucp_ep_rkey_unpack() takes no length (shared/FACTS.md): it walks the blob by the counts the
// blob itself declares. We walk the same layout first, bounded by the real length, so a short
// or inconsistent blob is refused with INVALID_RKEY instead of being read past its end
// (AOBJ-MEM-004). Layout of UCX 1.13 (ucp_rkey_pack_uct): uint64 md_map (host order, little
// endian on every platform we build for), uint8 memory type, then for each bit set in md_map a
// uint8 size followed by that many bytes; optionally followed by system-device information,
// which UCX reads only when present and which we bound by kMaxRkeyTrailer.
//
// Pure function; thread-safe.
#ifndef AOBJ_TRANSPORT_RKEY_CHECK_H_
#define AOBJ_TRANSPORT_RKEY_CHECK_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include "absl/strings/string_view.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace aobj {

inline constexpr size_t kMaxRkeyTrailer = 64;

// OK when `blob` is a structurally complete UCX 1.13 packed rkey of at most `max_bytes`.
absl::Status CheckPackedRkey(absl::string_view blob, size_t max_bytes);

// The per-memory-domain entries of a blob that passed CheckPackedRkey, in order.
std::vector<absl::string_view> PackedRkeyEntries(absl::string_view blob);

// Size of UCX 1.13's System V packed key: uint32 shmid + uintptr owner address, packed.
inline constexpr size_t kSysvPackedRkeySize = 12;

// The System V segment IDs that the entries of System V size of `blob` (which passed
// CheckPackedRkey) name, in order: each entry's first four octets, little endian.
std::vector<uint32_t> SysvSegmentIds(absl::string_view blob);

// Sizes of UCX 1.13.1's posix packed key (uct_posix_packed_rkey_t: uint64 seg_id with flags in
// bits 60-63, uintptr segment address, size_t segment length, packed) and its variants: +8 octets
// of PID namespace (flag bit 60), or a NUL-terminated directory path when neither the procfs
// (bit 63) nor the shm_open (bit 62) flag is set. xpmem's packed key has the same first 24
// octets (segment id, address, length).
inline constexpr size_t kSegmentPackedRkeySize = 24;

// The client's own statement, in its packed rkey, of the memory the key covers: the address
// range of the posix (or xpmem) segment it was allocated from. AOBJ-MEM-029, for windows the
// server does not map itself (the shared-memory lane takes System V only, so posix windows are
// reached by emulation): the window [address, address + length) must lie inside every segment
// the key declares; DESCRIPTOR_OUT_OF_BOUNDS otherwise, before any RMA. A key that declares no
// segment (ordinary memory registered without allocation) bounds nothing: OK. `blob` passed
// CheckPackedRkey. Pure; thread-safe.
absl::Status CheckWindowInDeclaredSegments(absl::string_view blob, uint64_t address,
                                           uint64_t length);

// What a packed key states about the memory it covers (spec Section 14.1), which decides what
// a server can check of a window in it: a System V segment (a server on the same host can map
// it and check the window against the mapping, AOBJ-MEM-012), a posix or xpmem segment with its
// address range (AOBJ-MEM-029), or nothing at all (ordinary memory registered without
// allocation: no server can bound a window in it). `blob` passed CheckPackedRkey. Pure.
enum class KeyedMemory { kOrdinary, kSysvSegment, kStatedSegment };
KeyedMemory KeyedMemoryOf(absl::string_view blob);

// Holds every System V segment that `blob` may name attached for the life of the object, so
// that ucp_ep_rkey_unpack cannot fail on it: UCX 1.13.1 releases uninitialised entries when an
// unpack fails halfway (a crash the fuzzers and sanitizers found), so every way an unpack can
// fail must be ruled out before UCX sees the blob. Entries of the System V size whose segment
// cannot be attached fail with INVALID_RKEY. With `creator` non-zero (the process whose FIFO the
// session's proven endpoint reaches, AOBJ-MEM-028), a segment some other process created fails
// with DESCRIPTOR_OUT_OF_BOUNDS before anything is attached: it is not the client's memory.
// Move-only.
class SysvSegmentPins {
 public:
  static absl::StatusOr<SysvSegmentPins> Pin(absl::string_view blob, pid_t creator = 0);
  SysvSegmentPins(SysvSegmentPins&& other) noexcept : attached_(std::move(other.attached_)) {
    other.attached_.clear();
  }
  SysvSegmentPins& operator=(SysvSegmentPins&&) = delete;
  SysvSegmentPins(const SysvSegmentPins&) = delete;
  ~SysvSegmentPins();

 private:
  SysvSegmentPins() = default;
  std::vector<void*> attached_;
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_RKEY_CHECK_H_
