// AOBJ_PEER_INPUT: decodes packed UCP worker addresses from clients (fuzz target in fuzz/).
#include "transport/address_check.h"

#include <arpa/inet.h>
#include <ucs/algorithm/crc.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/le_codec.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

// Constants of UCX 1.13 src/ucp/wireup/address.c. Never changed there within a release; a
// release that changes them packs a new address version, which we refuse.
constexpr uint8_t kVersionMask = 0x0F;        // UCP_ADDRESS_HEADER_VERSION_MASK
constexpr uint8_t kVersionV1 = 0;             // UCP_OBJECT_VERSION_V1
constexpr uint8_t kVersionV2 = 1;             // UCP_OBJECT_VERSION_V2
constexpr uint8_t kFlagDebugInfo = 0x1;       // UCP_ADDRESS_HEADER_FLAG_DEBUG_INFO
constexpr uint8_t kFlagWorkerUuid = 0x2;      // UCP_ADDRESS_HEADER_FLAG_WORKER_UUID
constexpr uint8_t kFlagClientId = 0x4;        // UCP_ADDRESS_HEADER_FLAG_CLIENT_ID
constexpr uint8_t kFlagAmOnly = 0x8;          // UCP_ADDRESS_HEADER_FLAG_AM_ONLY
constexpr uint8_t kKnownHeaderFlags = kFlagDebugInfo | kFlagWorkerUuid | kFlagClientId | kFlagAmOnly;
constexpr uint8_t kNullResource = 0xFF;       // UCP_NULL_RESOURCE
constexpr uint8_t kFlagLast = 0x80;           // UCP_ADDRESS_FLAG_LAST
constexpr uint8_t kFlagHasEpAddr = 0x40;      // UCP_ADDRESS_FLAG_HAS_EP_ADDR (iface length byte)
constexpr uint8_t kFlagNumPaths = 0x40;       // UCP_ADDRESS_FLAG_NUM_PATHS (device length byte)
constexpr uint8_t kFlagSysDevice = 0x20;      // UCP_ADDRESS_FLAG_SYS_DEVICE (device length byte)
constexpr uint8_t kFlagMdEmptyDev = 0x80;     // UCP_ADDRESS_FLAG_MD_EMPTY_DEV
constexpr uint8_t kMdMaskV1 = 0x1F;           // UCP_ADDRESS_FLAG_MD_MASK_V1
constexpr uint8_t kMdMaskV2 = 0x7F;           // UCP_ADDRESS_FLAG_MD_MASK
constexpr uint8_t kDeviceLenMask = 0x1F;      // UCP_ADDRESS_DEVICE_LEN_MASK
constexpr uint8_t kIfaceLenMask = 0x3F;       // UCP_ADDRESS_IFACE_LEN_MASK
constexpr uint8_t kFp8ExponentMask = 0x0F;    // _UCS_FP8_EXPONENT_MASK
constexpr uint8_t kFp8Nan = 0x0F;             // _UCS_FP8_NAN
// UCP_ADDR_IFACE_FLAG_AM_SYNC | UCP_ADDR_IFACE_FLAG_CB_ASYNC (ucp_address_v2 flags).
constexpr uint16_t kAddrIfaceFlagsAm = 0x2 | 0x4;
constexpr uint16_t kMinAmSegSize64 = 16;      // 1 KiB, in UCP_ADDRESS_IFACE_SEG_SIZE_FACTOR units

// Transport-name checksums (ucs_crc16_string of the UCT name) and what UCX 1.13.1's readers of
// their interface addresses require beyond the length (src/uct/sm/mm/posix/mm_posix.c).
constexpr uint16_t kCsumPosix = 0xd3a7;       // "posix": uint64 seg_id (flags | mmid) + extra
constexpr uint64_t kPosixProcfs = uint64_t{1} << 63;   // UCT_POSIX_SEG_FLAG_PROCFS
constexpr uint64_t kPosixShmOpen = uint64_t{1} << 62;  // UCT_POSIX_SEG_FLAG_SHM_OPEN
constexpr uint64_t kPosixPidNs = uint64_t{1} << 60;    // UCT_POSIX_SEG_FLAG_PID_NS
constexpr size_t kSysNsBytes = 8;                       // sizeof(ucs_sys_ns_t)

absl::Status Malformed(absl::string_view what) {
  // AOBJ-SES-011: a worker_address UCX cannot take is refused before ucp_ep_create sees it.
  return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("worker_address is not a UCX 1.13 "
                                                             "worker address: ", what));
}

// Reads forward through the blob, on the one bounds-checked codec (wire/le_codec.h), in the
// vocabulary of UCX's address format.
class Reader {
 public:
  explicit Reader(absl::string_view blob)
      : r_(std::string_view(blob.data(), blob.size())), n_(blob.size()) {}
  size_t remaining() const { return r_.remaining(); }
  size_t offset() const { return n_ - r_.remaining(); }
  std::optional<uint8_t> Peek() const {
    if (r_.remaining() == 0) return std::nullopt;
    return static_cast<uint8_t>(r_.rest()[0]);
  }
  std::optional<uint8_t> Byte() {
    uint8_t v;
    if (!r_.U8(&v)) return std::nullopt;
    return v;
  }
  std::optional<uint32_t> Le32() {
    uint32_t v;
    if (!r_.U32(&v)) return std::nullopt;
    return v;
  }
  std::optional<uint16_t> Le16() {
    uint16_t v;
    if (!r_.U16(&v)) return std::nullopt;
    return v;
  }
  bool Skip(size_t k) {
    std::string_view unused;
    return r_.Bytes(k, &unused);
  }
  // ucp_address_unpack_byte_extended: the masked value, or in v2 the next byte when the masked
  // value is all ones.
  std::optional<uint8_t> Extended(uint8_t first, uint8_t mask, uint8_t version) {
    const uint8_t value = first & mask;
    if (version != kVersionV1 && value == mask) return Byte();
    return value;
  }

 private:
  LeReader r_;
  const size_t n_;
};

float Float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The posix transport's interface address: seg_id, then (depending on its flags) the PID
// namespace or a NUL-terminated backing directory. UCX reads them without a length, and asserts
// (abort) on a seg_id that names neither procfs nor shm_open when no directory follows.
absl::Status CheckPosixIfaceAddress(absl::string_view a) {
  if (a.size() < 8) return Malformed("posix interface address shorter than its segment id");
  const uint64_t seg_id = MmFifoSegmentId(a);
  const absl::string_view extra = a.substr(8);
  if ((seg_id & kPosixPidNs) != 0 && extra.size() < kSysNsBytes) {
    return Malformed("posix interface address names a PID namespace it does not carry");
  }
  if ((seg_id & (kPosixProcfs | kPosixShmOpen)) == 0 &&
      extra.find('\0') == absl::string_view::npos) {
    return Malformed("posix interface address names a backing directory it does not carry");
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t MmFifoSegmentId(absl::string_view iface_address) {
  uint64_t id = 0;
  LeReader(std::string_view(iface_address.data(), iface_address.size())).U64(&id);
  return id;
}

absl::StatusOr<WorkerAddressLayout> ParseWorkerAddress(absl::string_view blob) {
  WorkerAddressLayout out;
  Reader r(blob);
  // Header: an unknown version is what made UCX 1.13.1 abort (ucp_address_unpack_header).
  auto h0 = r.Byte();
  if (!h0) return Malformed("empty");
  out.version = *h0 & kVersionMask;
  if (out.version == kVersionV1) {
    out.flags = *h0 >> 4;
  } else if (out.version == kVersionV2) {
    if ((*h0 & ~kVersionMask) != 0) return Malformed("v2 header with bits above the version");
    auto h1 = r.Byte();
    if (!h1) return Malformed("truncated in its header");
    out.flags = *h1;
  } else {
    return Malformed(absl::StrCat("unknown address version ", out.version));
  }
  if ((out.flags & ~kKnownHeaderFlags) != 0) {
    return Malformed(absl::StrCat("unknown header flags 0x", absl::Hex(out.flags)));
  }
  // v1 always carries the uuid where ucp_ep_create unpacks it (unpack flag WORKER_UUID).
  if (out.version == kVersionV1 || (out.flags & kFlagWorkerUuid) != 0) {
    if (!r.Skip(8)) return Malformed("truncated in its worker uuid");
  }
  if ((out.flags & kFlagClientId) != 0 && !r.Skip(8)) {
    return Malformed("truncated in its client id");
  }
  if ((out.flags & kFlagDebugInfo) != 0) {
    auto len = r.Byte();
    if (!len || !r.Skip(*len)) return Malformed("truncated in its worker name");
  }
  auto first = r.Peek();
  if (!first) return Malformed("truncated before its device list");
  if (*first == kNullResource) {
    r.Byte();
  } else {
    const uint8_t md_mask = out.version == kVersionV1 ? kMdMaskV1 : kMdMaskV2;
    bool last_dev = false;
    while (!last_dev) {
      auto md_byte = r.Byte();
      if (!md_byte) return Malformed("truncated in a device's md index");
      const bool empty_dev = (*md_byte & kFlagMdEmptyDev) != 0;
      auto md_index = r.Extended(*md_byte, md_mask, out.version);
      if (!md_index) return Malformed("truncated in a device's md index");
      if (*md_index >= kUcpMaxMds) {
        return Malformed(absl::StrCat("md index ", *md_index, " (UCX has at most ", kUcpMaxMds,
                                      ")"));
      }
      auto len_byte = r.Byte();
      if (!len_byte) return Malformed("truncated in a device address length");
      last_dev = (*len_byte & kFlagLast) != 0;
      auto dev_len = r.Extended(*len_byte, kDeviceLenMask, out.version);
      if (!dev_len) return Malformed("truncated in a device address length");
      if ((*len_byte & kFlagNumPaths) != 0) {
        auto paths = r.Byte();
        if (!paths) return Malformed("truncated in a device's path count");
        if (*paths == 0) return Malformed("a device with 0 paths");
      }
      if ((*len_byte & kFlagSysDevice) != 0 && !r.Byte()) {
        return Malformed("truncated in a device's system device");
      }
      if (!r.Skip(*dev_len)) return Malformed("device address runs past the end");
      const size_t device = out.devices++;
      bool last_tl = empty_dev;
      while (!last_tl) {
        if (out.entries.size() >= kUcpMaxResources) {
          return Malformed(absl::StrCat("more than ", kUcpMaxResources, " transport entries"));
        }
        WorkerAddressEntry e;
        e.md_index = *md_index;
        e.device = device;
        e.dev_addr_len = *dev_len;
        auto csum = r.Le16();
        if (!csum) return Malformed("truncated in a transport name checksum");
        e.tl_name_csum = *csum;
        if (out.version == kVersionV1) {
          // overhead, bandwidth, latency overhead (floats), then prio/flags. They become lane
          // scores: UCX 1.13.1 asserts a non-negative score (select.c:294) and aborts on a
          // negative overhead or latency. A negative bandwidth is legal (peers up to UCX 1.11
          // send "dedicated - shared"); UCX refuses 0 itself.
          auto overhead = r.Le32();
          auto bandwidth = r.Le32();
          auto latency = r.Le32();
          if (!latency || !r.Skip(4)) return Malformed("truncated in interface attributes");
          if (!std::isfinite(Float(*bandwidth)) || !std::isfinite(Float(*overhead)) ||
              !std::isfinite(Float(*latency)) || !(Float(*overhead) >= 0) ||
              !(Float(*latency) >= 0)) {
            return Malformed("interface attributes no UCX transport has (negative or "
                             "non-finite overhead, latency or bandwidth)");
          }
        } else {
          // ucs_fp8_t overhead, bandwidth, latency: exponent (low 4 bits) 0xF unpacks to NaN
          // (ucs/type/float8.h), which reaches the same lane-score assertion.
          for (int i = 0; i < 3; ++i) {
            auto fp8 = r.Byte();
            if (!fp8) return Malformed("truncated in interface attributes");
            if ((*fp8 & kFp8ExponentMask) == kFp8Nan) {
              return Malformed("interface attribute is NaN");
            }
          }
          // prio, uint16 seg_size (units of 64 bytes), uint16 flags. An active-message
          // interface with a tiny segment aborts UCX 1.13.1 in ucp_ep_create ("rndv.rkey_size <=
          // am.max_bcopy", ucp_ep.c:2634, found by this project's fuzzer); real ones have >= 8 KiB.
          auto prio = r.Byte();
          auto seg_size = r.Le16();
          auto iface_flags = r.Le16();
          if (!prio || !seg_size || !iface_flags) {
            return Malformed("truncated in interface attributes");
          }
          if ((*iface_flags & kAddrIfaceFlagsAm) != 0 && *seg_size < kMinAmSegSize64) {
            return Malformed(absl::StrCat("active-message segment of ", *seg_size * 64,
                                          " bytes"));
          }
        }
        auto if_byte = r.Byte();
        if (!if_byte) return Malformed("truncated in an interface address length");
        last_tl = (*if_byte & kFlagLast) != 0;
        const bool has_ep = (*if_byte & kFlagHasEpAddr) != 0;
        auto if_len = r.Extended(*if_byte, kIfaceLenMask, out.version);
        if (!if_len) return Malformed("truncated in an interface address length");
        e.iface_addr_len = *if_len;
        e.iface_addr_offset = r.offset();
        if (!r.Skip(*if_len)) return Malformed("interface address runs past the end");
        bool last_ep = !has_ep;
        while (!last_ep) {
          if (e.ep_addrs >= kUcpMaxLanes) return Malformed("too many endpoint addresses");
          auto ep_len = r.Byte();
          if (!ep_len) return Malformed("truncated in an endpoint address length");
          if (!r.Skip(*ep_len)) return Malformed("endpoint address runs past the end");
          auto lane = r.Byte();
          if (!lane) return Malformed("truncated in an endpoint lane index");
          last_ep = (*lane & kFlagLast) != 0;
          ++e.ep_addrs;
        }
        out.entries.push_back(e);
      }
    }
  }
  if (r.remaining() != 0) {
    return Malformed(absl::StrCat(r.remaining(), " bytes after the last device"));
  }
  return out;
}

absl::Status CheckWorkerAddress(absl::string_view peer, absl::string_view local) {
  // AOBJ-SES-011: 1..8192 octets.
  if (peer.empty() || peer.size() > kMaxWorkerAddressBytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("worker_address is ", peer.size(), " bytes; it must be 1 to ",
                                  kMaxWorkerAddressBytes));
  }
  auto ours = ParseWorkerAddress(local);
  if (!ours.ok()) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("this server's own UCX worker address does not parse as UCX "
                                  "1.13 non-unified mode (address_check.h): ",
                                  ours.status().message()));
  }
  auto theirs = ParseWorkerAddress(peer);
  if (!theirs.ok()) return theirs.status();
  for (const WorkerAddressEntry& e : theirs->entries) {
    if (e.ep_addrs != 0) return Malformed("a worker address carries no endpoint addresses");
    bool runs_here = false;
    bool same_lengths = false;
    for (const WorkerAddressEntry& o : ours->entries) {
      if (o.tl_name_csum != e.tl_name_csum) continue;
      runs_here = true;
      if (o.dev_addr_len == e.dev_addr_len && o.iface_addr_len == e.iface_addr_len) {
        same_lengths = true;
      }
    }
    // UCT reads a matching entry's addresses by its own layout, without a length.
    if (runs_here && !same_lengths) {
      return Malformed(absl::StrCat("transport 0x", absl::Hex(e.tl_name_csum),
                                    " has a device address of ", e.dev_addr_len,
                                    " bytes and an interface address of ", e.iface_addr_len,
                                    " bytes, which this side's transport does not use"));
    }
    if (runs_here && e.tl_name_csum == kCsumPosix) {
      if (absl::Status s = CheckPosixIfaceAddress(peer.substr(e.iface_addr_offset,
                                                               e.iface_addr_len));
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RewriteTcpPorts(std::string* address, uint16_t port, bool* only_tcp) {
  auto layout = ParseWorkerAddress(*address);
  if (!layout.ok()) return layout.status();
  const uint16_t tcp = ucs_crc16_string("tcp");
  const uint16_t be = htons(port);
  size_t rewritten = 0;
  if (only_tcp != nullptr) *only_tcp = !layout->entries.empty();
  for (const WorkerAddressEntry& e : layout->entries) {
    if (e.tl_name_csum != tcp || e.iface_addr_len != sizeof(be)) {
      if (only_tcp != nullptr) *only_tcp = false;
      continue;
    }
    std::memcpy(address->data() + e.iface_addr_offset, &be, sizeof(be));
    ++rewritten;
  }
  return rewritten;
}

absl::StatusOr<uint64_t> SysvFifoSegment(absl::string_view address) {
  auto layout = ParseWorkerAddress(address);
  if (!layout.ok()) return layout.status();
  const uint16_t sysv = ucs_crc16_string("sysv");
  for (const WorkerAddressEntry& e : layout->entries) {
    if (e.tl_name_csum == sysv && e.iface_addr_len >= 8) {
      return MmFifoSegmentId(address.substr(e.iface_addr_offset, 8));
    }
  }
  return absl::NotFoundError("the worker address has no System V entry");
}

absl::StatusOr<size_t> RewriteSysvFifo(std::string* address, uint64_t segment) {
  auto layout = ParseWorkerAddress(*address);
  if (!layout.ok()) return layout.status();
  const uint16_t sysv = ucs_crc16_string("sysv");
  size_t rewritten = 0;
  for (const WorkerAddressEntry& e : layout->entries) {
    if (e.tl_name_csum != sysv || e.iface_addr_len < 8) continue;
    for (int i = 0; i < 8; ++i)
      (*address)[e.iface_addr_offset + i] = static_cast<char>(segment >> (8 * i));
    ++rewritten;
  }
  return rewritten;
}

}  // namespace aobj
