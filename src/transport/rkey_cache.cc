#include "transport/rkey_cache.h"

#include <sys/shm.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "transport/rkey_check.h"
#include "transport/shm_guard.h"
#include "transport/ucx_context.h"

namespace aobj {

namespace {

// AOBJ-MEM-024: whether the client has released a segment the entry names. Once it has
// detached, this cached rkey's own attachment is the only one left (UCX marks its segments for
// removal right after creating them, so SHM_DEST says nothing). The client will not name them
// again, and keeping them would keep its memory alive here.
bool Released(const CachedRkey& e) {
  for (uint32_t shmid : e.shmids) {
    struct shmid_ds ds {};
    if (shmctl(static_cast<int>(shmid), IPC_STAT, &ds) != 0 || ds.shm_nattch <= 1) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<CachedRkey*> RkeyCache::Acquire(const RemoteWindow& w, size_t max_rkey_bytes,
                                               const RkeyLanes& lanes) {
  CachedRkey* entry = nullptr;
  for (auto& e : entries_) {
    if (e != nullptr && e->blob == w.rkey) {
      // The key this request names is checked every time: a request must never reach a
      // segment the client has released.
      if (e->in_use == 0 && Released(*e)) {
        e.reset();
      } else {
        entry = e.get();
      }
      break;
    }
  }
  // The other idle keys: on a miss (the client may have swapped buffers) and otherwise at most
  // every kSweepInterval, so that a hit costs one shmctl per segment, not one per entry.
  const absl::Time now = absl::Now();
  if (entry == nullptr || now - last_sweep_ >= kSweepInterval) {
    last_sweep_ = now;
    for (auto& e : entries_) {
      if (e != nullptr && e.get() != entry && e->in_use == 0 && Released(*e)) e.reset();
    }
  }
  std::erase(entries_, nullptr);
  if (entry == nullptr) {
    auto fresh = Unpack(w, max_rkey_bytes, lanes);
    if (!fresh.ok()) return fresh.status();
    if (entries_.size() >= kEntries) EvictOne();
    entry = fresh->get();
    entries_.push_back(*std::move(fresh));
  }
  // AOBJ-MEM-012: where UCX maps the client's memory here, the whole window must lie inside the
  // client's segment, checked for every window (the mapping stays attached while cached).
  if (entry->maps_local) {
    void* local = nullptr;
    if (ucp_rkey_ptr(entry->rkey.get(), w.address, &local) != UCS_OK) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       "descriptor window does not lie inside memory shared by the peer");
    }
    const uintptr_t lo = reinterpret_cast<uintptr_t>(local);
    if (lo < entry->lo || lo >= entry->hi || w.length > entry->hi - lo) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       absl::StrCat("descriptor window of ", w.length,
                                    " bytes does not lie inside memory shared by the peer"));
    }
  } else if (absl::Status s = CheckWindowInDeclaredSegments(entry->blob, w.address, w.length);
             !s.ok()) {
    // AOBJ-MEM-029 for windows reached by emulation: inside the posix segment the key declares
    // (the client's own memory; a key of ordinary memory declares none and is not bounded here).
    return s;
  }
  ++entry->in_use;
  entry->last_use = ++use_clock_;
  return entry;
}

absl::StatusOr<std::unique_ptr<CachedRkey>> RkeyCache::Unpack(const RemoteWindow& w,
                                                              size_t max_rkey_bytes,
                                                              const RkeyLanes& lanes) {
  if (absl::Status s = CheckPackedRkey(w.rkey, max_rkey_bytes); !s.ok()) return s;
  // Held until UCX has attached the segments itself (rkey_check.h).
  auto pins = SysvSegmentPins::Pin(w.rkey, lanes.fifo_creator);
  if (!pins.ok()) return pins.status();
  // Every unpacked key is owned by a UcxRkey from the moment it exists (ucx_handles.h).
  UcxRkey rkey;
  ucp_ep_h ep = nullptr;
  ucs_status_t st = UCS_ERR_UNREACHABLE;
  auto unpack = [&](ucp_ep_h on) {
    ucp_rkey_h raw = nullptr;
    st = ucp_ep_rkey_unpack(on, w.rkey.data(), &raw);
    if (st == UCS_OK) rkey = UcxRkey(raw, outstanding_);
    return st == UCS_OK;
  };
  bool unpacked_unmapped = false;  // a valid key for memory the shared-memory lane cannot map
  // AOBJ-TRN-003: the shared-memory lane (mode NONE) takes only windows UCX maps into this
  // process, whose RMA is a memcpy that cannot wait on the peer; emulated windows go to the
  // session's own worker, and everything else to the PEER endpoint, which a bound can
  // force-close.
  if (lanes.shm != nullptr && unpack(lanes.shm)) {
    void* mapped = nullptr;
    if (ucp_rkey_ptr(rkey.get(), w.address, &mapped) == UCS_OK) {
      ep = lanes.shm;
    } else {
      rkey.reset();
      unpacked_unmapped = true;
    }
  }
  // AOBJ-TRN-010: emulated windows at shared-memory speed on the session's own worker, which a
  // bound can destroy where it cannot force-close a NONE endpoint.
  if (ep == nullptr && unpacked_unmapped) {
    if (ucp_ep_h emu = lanes.emulation(); emu != nullptr && unpack(emu)) ep = emu;
  }
  if (ep == nullptr && lanes.net != nullptr && unpack(lanes.net)) ep = lanes.net;
  if (ep == nullptr) {
    if (lanes.net == nullptr && unpacked_unmapped) {
      return MakeError(ErrorCode::kDataChannelUnavailable,
                       "the window is not in shared memory this server maps, and the session "
                       "has no endpoint with peer-failure detection to reach it");
    }
    return MakeError(ErrorCode::kInvalidRkey,
                     absl::StrCat("rkey does not unpack: ", UcxStatusString(st)));
  }
  auto fresh = std::make_unique<CachedRkey>();
  fresh->blob = std::string(w.rkey);
  fresh->rkey = std::move(rkey);
  fresh->ep = ep;
  fresh->shmids = SysvSegmentIds(w.rkey);
  void* local = nullptr;
  if (ucp_rkey_ptr(fresh->rkey.get(), w.address, &local) == UCS_OK) {
    // AOBJ-MEM-012: the segment this key names, not merely any segment another process made.
    auto mapping = FindForeignSharedMapping(reinterpret_cast<uintptr_t>(local), fresh->shmids);
    if (!mapping.ok()) return mapping.status();
    fresh->maps_local = true;
    fresh->lo = mapping->lo;
    fresh->hi = mapping->hi;
  }
  return fresh;
}

void RkeyCache::EvictOne() {
  // The least recently used idle entry.
  auto victim = entries_.end();
  for (auto e = entries_.begin(); e != entries_.end(); ++e) {
    if ((*e)->in_use == 0 && (victim == entries_.end() || (*e)->last_use < (*victim)->last_use)) {
      victim = e;
    }
  }
  if (victim != entries_.end()) entries_.erase(victim);
}

void RkeyCache::DropLane(ucp_ep_h ep) {
  for (auto& e : entries_) {
    if (e != nullptr && e->ep == ep) e->rkey.reset();
  }
}

void RkeyCache::ForgetAll() {
  for (auto& e : entries_) {
    if (e != nullptr) e->rkey.Forget();
  }
}

}  // namespace aobj
