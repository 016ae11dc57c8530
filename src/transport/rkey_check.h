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
