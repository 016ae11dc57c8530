// Structural validation of a peer's packed UCP worker address before it reaches ucp_ep_create.
//
// ucp_ep_create() takes no length for UCP_EP_PARAM_FIELD_REMOTE_ADDRESS: ucp_address_unpack()
// walks the blob by the lengths and flags the blob itself declares, and calls abort() on an
// unknown address version (UCX 1.13.1, address.c: "Assertion `*addr_version ==
// UCP_OBJECT_VERSION_V2' failed"). We walk the same layout first, bounded by the real length, so
// a short, inconsistent or foreign blob is refused with INVALID_ARGUMENT (AOBJ-SES-011) instead
// of crashing the server. Same spirit as rkey_check.h.
//
// Layout of UCX 1.13 (src/ucp/wireup/address.c, ucp_address_do_pack / ucp_address_unpack), all
// multi-byte values in host order (little endian on every platform we build for):
//
//   header     v1: one byte, version (low 4 bits, 0) | flags << 4
//              v2: two bytes, version (low 4 bits, 1), then the flags byte
//              flags: DEBUG_INFO 0x1, WORKER_UUID 0x2, CLIENT_ID 0x4, AM_ONLY 0x8
//   uuid       8 bytes; always in v1 (ucp_ep_create unpacks with WORKER_UUID), in v2 if flagged
//   client id  8 bytes if CLIENT_ID
//   name       1 length byte + that many bytes if DEBUG_INFO
//   then either one byte 0xFF (UCP_NULL_RESOURCE: no transports), or devices until one has LAST:
//     md byte      EMPTY_DEV 0x80 | md index (v1: 5 bits; v2: 7 bits, 0x7F = index in next byte)
//     dev len byte LAST 0x80 | NUM_PATHS 0x40 | SYS_DEVICE 0x20 | length (5 bits; v2: 0x1F =
//                  length in next byte)
//     [num paths byte] [system device byte] device address
//     unless EMPTY_DEV, interfaces until one has LAST (non-unified mode):
//       uint16 transport-name checksum
//       interface attributes: v1 16 bytes (3 floats + uint32 prio/flags), v2 8 bytes
//       iface len byte LAST 0x80 | HAS_EP_ADDR 0x40 | length (6 bits; v2: 0x3F = next byte)
//       interface address
//       if HAS_EP_ADDR, endpoint addresses until one has LAST: length byte, address, lane byte
//                       (LAST 0x80 | lane)
//   nothing after the last device (ucp_address_pack asserts the exact size).
//
// UCX_UNIFIED_MODE=y packs a different interface layout (lengths taken from the local
// resources); it is not supported: the server's own address then fails to parse and every
// OpenSession is refused DATA_CHANNEL_UNAVAILABLE, loudly, instead of parsing peer bytes wrongly.
//
// Pure functions; thread-safe.
#ifndef AOBJ_TRANSPORT_ADDRESS_CHECK_H_
#define AOBJ_TRANSPORT_ADDRESS_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace aobj {

// Bounds of UCX 1.13 (ucp_def.h / ucp_context.h): more than these cannot come from a real peer.
inline constexpr size_t kUcpMaxMds = 16;         // UCP_MAX_MDS
inline constexpr size_t kUcpMaxResources = 128;  // UCP_MAX_RESOURCES: transport entries
inline constexpr size_t kUcpMaxLanes = 16;       // bound on endpoint addresses per entry

// One transport entry of a parsed address.
struct WorkerAddressEntry {
  uint16_t tl_name_csum = 0;
  uint8_t md_index = 0;
  size_t device = 0;          // index of the device record it belongs to
  size_t dev_addr_len = 0;
  size_t iface_addr_len = 0;
  size_t iface_addr_offset = 0;  // where the interface address starts in the blob
  size_t ep_addrs = 0;
};

struct WorkerAddressLayout {
  uint8_t version = 0;  // 0 = UCP_OBJECT_VERSION_V1, 1 = UCP_OBJECT_VERSION_V2
  uint8_t flags = 0;
  size_t devices = 0;
  std::vector<WorkerAddressEntry> entries;
};

// Walks `blob` as UCX 1.13's ucp_address_unpack would, never reading outside it. INVALID_ARGUMENT
// when the blob is not a complete, exactly sized address of that layout, or carries values no
// UCX peer packs (unknown version or header flags, md index >= kUcpMaxMds, a path count of 0,
// non-finite v1 interface attributes, more than kUcpMaxResources entries).
absl::StatusOr<WorkerAddressLayout> ParseWorkerAddress(absl::string_view blob);

// The segment id an interface address of UCX's mm transports (sysv, posix) starts with:
// uct_mm_iface_addr_t's 8-octet fifo_seg_id, little endian. `iface_address` must hold 8 octets.
uint64_t MmFifoSegmentId(absl::string_view iface_address);

// The check run before ucp_ep_create (AOBJ-SES-011). OK when `peer` is 1..8192 octets, parses
// with ParseWorkerAddress, carries no endpoint addresses (a worker address never does), and every
// entry for a transport this side also runs (same name checksum as an entry of `local`, this
// worker's own address) has device and interface address lengths equal to one of this side's
// entries for that transport: UCT reads those addresses by its own fixed layout, with no length
// (uct_iface_is_reachable, uct_ep_create), so a shorter or empty one would be read past its end.
// A posix interface address must also carry what its segment flags tell UCX to read (UCX 1.13.1
// aborts otherwise).
// Entries for transports this side does not run never reach UCT. Errors: INVALID_ARGUMENT for the
// peer's address; DATA_CHANNEL_UNAVAILABLE when `local` itself does not parse (a UCX release or
// mode this file does not describe).
absl::Status CheckWorkerAddress(absl::string_view peer, absl::string_view local);

// Test and conformance tools only (the attack of AOBJ-SEC-021): points the interface address of
// every tcp entry of a packed worker address at `port`. In UCX 1.13.1 that address is
// uct_tcp_iface_addr_t, the listening port alone in network byte order (src/uct/tcp/tcp.h); tcp's
// entries are found by their transport name checksum. Returns how many it rewrote; `only_tcp`
// (if set) tells whether every entry was tcp's.
absl::StatusOr<size_t> RewriteTcpPorts(std::string* address, uint16_t port,
                                       bool* only_tcp = nullptr);

// Test tools only (issue 15 finding 6, AOBJ-SES-024): the System V receive FIFO a packed worker
// address names (the segment id of its sysv entry; NOT_FOUND without one), and the same address
// naming `segment` instead (returns how many sysv entries it rewrote).
absl::StatusOr<uint64_t> SysvFifoSegment(absl::string_view address);
absl::StatusOr<size_t> RewriteSysvFifo(std::string* address, uint64_t segment);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_ADDRESS_CHECK_H_
