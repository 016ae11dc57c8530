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

#include <cstddef>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace aobj {

inline constexpr size_t kMaxRkeyTrailer = 64;

// OK when `blob` is a structurally complete UCX 1.13 packed rkey of at most `max_bytes`.
absl::Status CheckPackedRkey(absl::string_view blob, size_t max_bytes);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_RKEY_CHECK_H_
