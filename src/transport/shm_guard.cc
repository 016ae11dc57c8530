// AOBJ_PEER_INPUT: decodes windows named by client descriptors (fuzz target in fuzz/).
#include "transport/shm_guard.h"

#include <fcntl.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "aobj/status.h"
#include "transport/address_check.h"

namespace aobj {
namespace {

absl::Status OutOfBounds(uintptr_t local, size_t length, absl::string_view why) {
  // AOBJ-MEM-012: the message names no server address (no information for an attacker).
  return MakeError(ErrorCode::kDescriptorOutOfBounds,
                   absl::StrCat("descriptor window of ", length,
                                " bytes does not lie inside memory shared by the peer: ", why));
}

std::string ReadSelfMaps() {
  std::string text;
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[16384];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  close(fd);
  return text;
}

}  // namespace

namespace {

// The foreign System V mapping of `maps` holding `local`, or why there is none. When `named` is
// set, the mapping must also be one of the segments it lists.
absl::StatusOr<SharedMapping> FindMappingIn(absl::string_view maps, uintptr_t local, size_t length,
                                            const std::function<bool(uint64_t)>& is_foreign,
                                            const absl::Span<const uint32_t>* named = nullptr) {
  for (absl::string_view line : absl::StrSplit(maps, '\n')) {
    // "start-end perms offset dev inode   path"
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 5) continue;
    std::vector<absl::string_view> range = absl::StrSplit(f[0], '-');
    uint64_t lo = 0, hi = 0;
    if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &lo) ||
        !absl::SimpleHexAtoi(range[1], &hi)) {
      continue;
    }
    if (local < lo || local >= hi) continue;
    if (f[1].size() < 4 || f[1][3] != 's') return OutOfBounds(local, length, "private memory");
    if (f.size() < 6 || !absl::StartsWith(f[5], "/SYSV")) {
      return OutOfBounds(local, length, "not a System V shared segment");
    }
    uint64_t shmid = 0;
    if (!absl::SimpleAtoi(f[4], &shmid)) return OutOfBounds(local, length, "unreadable map");
    if (!is_foreign(shmid)) return OutOfBounds(local, length, "segment belongs to the server");
    if (named != nullptr && std::find(named->begin(), named->end(), shmid) == named->end()) {
      return OutOfBounds(local, length, "not the segment its remote key names");
    }
    return SharedMapping{static_cast<uintptr_t>(lo), static_cast<uintptr_t>(hi)};
  }
  return OutOfBounds(local, length, "unmapped address");
}

bool CreatedByOther(uint64_t shmid) {
  struct shmid_ds ds {};
  if (shmctl(static_cast<int>(shmid), IPC_STAT, &ds) != 0) return false;
  return ds.shm_cpid != getpid();
}

}  // namespace

absl::Status CheckForeignSharedWindowIn(absl::string_view maps, uintptr_t local, size_t length,
                                        const std::function<bool(uint64_t shmid)>& is_foreign) {
  if (length == 0) return absl::OkStatus();
  if (local + length < local) return OutOfBounds(local, length, "window wraps around");
  auto mapping = FindMappingIn(maps, local, length, is_foreign);
  if (!mapping.ok()) return mapping.status();
  // The whole window must lie in the mapping that holds its first byte.
  if (local + length > mapping->hi) {
    return OutOfBounds(local, length, "window extends past its segment");
  }
  return absl::OkStatus();
}

absl::StatusOr<SharedMapping> FindForeignSharedMappingIn(
    absl::string_view maps, uintptr_t local, absl::Span<const uint32_t> named,
    const std::function<bool(uint64_t shmid)>& is_foreign) {
  return FindMappingIn(maps, local, 0, is_foreign, &named);
}

absl::StatusOr<SharedMapping> FindForeignSharedMapping(uintptr_t local,
                                                       absl::Span<const uint32_t> named) {
  return FindForeignSharedMappingIn(ReadSelfMaps(), local, named, CreatedByOther);
}

absl::Status CheckForeignSharedWindow(uintptr_t local, size_t length) {
  return CheckForeignSharedWindowIn(ReadSelfMaps(), local, length, CreatedByOther);
}

absl::Status CheckPeerFifoSegments(absl::string_view peer, absl::string_view local_shm,
                                   pid_t* creator) {
  pid_t seen = 0;
  auto local = ParseWorkerAddress(local_shm);
  if (!local.ok()) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     "this server's shared-memory worker address does not parse");
  }
  // The System V transport's entry: UCX 1.13's mm interface address starts with the 8-octet
  // segment id of the receive FIFO (uct_mm_iface_addr_t; nothing follows it for sysv).
  uint16_t csum = 0;
  uint64_t own_id = 0;
  struct shmid_ds own {};
  bool found = false;
  for (const WorkerAddressEntry& e : local->entries) {
    if (e.iface_addr_len != 8) continue;
    own_id = MmFifoSegmentId(local_shm.substr(e.iface_addr_offset, 8));
    if (own_id > INT32_MAX || shmctl(static_cast<int>(own_id), IPC_STAT, &own) != 0) continue;
    csum = e.tl_name_csum;
    found = true;
    break;
  }
  if (!found) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     "this server's shared-memory worker has no System V FIFO");
  }
  auto parsed = ParseWorkerAddress(peer);
  if (!parsed.ok()) return parsed.status();
  for (const WorkerAddressEntry& e : parsed->entries) {
    if (e.tl_name_csum != csum) continue;
    // CheckWorkerAddress already held the length to this side's own entry's.
    if (e.iface_addr_len != 8) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "worker_address: a System V interface address of the wrong length");
    }
    const uint64_t id = MmFifoSegmentId(peer.substr(e.iface_addr_offset, 8));
    struct shmid_ds ds {};
    if (id > INT32_MAX || shmctl(static_cast<int>(id), IPC_STAT, &ds) != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "worker_address names a System V FIFO segment that does not exist");
    }
    if (ds.shm_segsz != own.shm_segsz) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("worker_address names a System V segment of ", ds.shm_segsz,
                                    " octets as its FIFO; a FIFO here has ", own.shm_segsz));
    }
    if (ds.shm_perm.cuid != geteuid() || ds.shm_perm.uid != geteuid()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "worker_address names a System V segment of another user");
    }
    if (id == own_id) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "worker_address names this server's own FIFO");
    }
    if (seen != 0 && ds.shm_cpid != seen) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "worker_address names System V FIFOs of two different processes");
    }
    seen = ds.shm_cpid;
  }
  if (creator != nullptr) *creator = seen;
  return absl::OkStatus();
}

}  // namespace aobj
