// The unpacked rkeys of one session's data endpoint, reused while the client keeps the same
// registration, and the checks that a window in one may be touched (spec 7.4, 7.6, 14.1).
//
// Unpacking attaches the client's segment and checking a shared-memory window reads
// /proc/self/maps; both cost more than a 64 MiB copy's worth of page faults, so a client that
// reuses its buffers (the normal case) pays them once. Every acquisition still checks the window
// (AOBJ-MEM-012, AOBJ-MEM-029) and that the client has not released the segments the key names
// (AOBJ-MEM-024).
//
// Threading: the progress thread of the worker whose endpoints the keys are unpacked on
// (UcxWorker). The entries' rkeys die before that worker (ucx_handles.h).
#ifndef AOBJ_TRANSPORT_RKEY_CACHE_H_
#define AOBJ_TRANSPORT_RKEY_CACHE_H_

#include <sys/types.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/rma_batch.h"
#include "transport/ucx_handles.h"

namespace aobj {

// One unpacked rkey, reused while the client keeps the same registration.
struct CachedRkey {
  std::string blob;              // the packed rkey exactly as the client sent it
  UcxRkey rkey;                  // empty: released with its emulation worker
  ucp_ep_h ep = nullptr;         // the endpoint it was unpacked on and whose RMA uses it
  std::vector<uint32_t> shmids;  // System V segments the blob names
  bool maps_local = false;       // UCX maps the window into this process
  uintptr_t lo = 0, hi = 0;      // the client's mapping that holds it (when maps_local)
  uint32_t in_use = 0;           // batches using it now
  uint64_t last_use = 0;
};

// The session's endpoints a key may be unpacked on, in the order they are tried
// (AOBJ-TRN-003, AOBJ-TRN-010). Borrowed for one Acquire.
struct RkeyLanes {
  ucp_ep_h shm = nullptr;  // mode NONE: only windows UCX maps into this process
  // The session's emulation endpoint, made on first need; null when there is none.
  absl::FunctionRef<ucp_ep_h()> emulation;
  ucp_ep_h net = nullptr;  // mode PEER: every other window
  // The process whose System V FIFO the session's proven endpoint reaches (AOBJ-MEM-028).
  pid_t fifo_creator = 0;
};

class RkeyCache {
 public:
  // 64: a client with one buffer per thread and 16 requests in flight (the default
  // max_in_flight) must not evict its own keys; with 8 entries every request of such a client
  // missed and paid the attach and the maps read (docs/benchmarks.md section 5).
  static constexpr size_t kEntries = 64;
  // How often a hit also looks for other entries whose segments the client released.
  static constexpr absl::Duration kSweepInterval = absl::Milliseconds(100);

  // `outstanding` counts the live rkeys of every cache of a worker; it must outlive this.
  explicit RkeyCache(std::atomic<uint64_t>* outstanding) : outstanding_(outstanding) {}
  RkeyCache(RkeyCache&&) = default;  // entries are heap-allocated: pointers to them stay valid
  RkeyCache& operator=(RkeyCache&&) = default;
  RkeyCache(const RkeyCache&) = delete;
  RkeyCache& operator=(const RkeyCache&) = delete;

  // Finds or unpacks the key of `w` (AOBJ-MEM-003, AOBJ-MEM-004 before UCX sees it), checks
  // the window against what the key covers (AOBJ-MEM-012, AOBJ-MEM-028, AOBJ-MEM-029) and
  // marks the entry in use until Release. Errors: INVALID_RKEY, DESCRIPTOR_OUT_OF_BOUNDS,
  // DATA_CHANNEL_UNAVAILABLE (no lane can reach the window).
  absl::StatusOr<CachedRkey*> Acquire(const RemoteWindow& w, size_t max_rkey_bytes,
                                      const RkeyLanes& lanes);
  // AOBJ-MEM-023: the batch no longer uses it; it stays cached for the session.
  void Release(CachedRkey* entry) { --entry->in_use; }
  // Destroys the rkeys unpacked on `ep`, whose worker is about to go (the entries stay, empty).
  void DropLane(ucp_ep_h ep);
  // Destroys every rkey (the session is over, or failed and idle).
  void Clear() { entries_.clear(); }
  // The worker goes with every rkey still held (shutdown with batches outstanding).
  void ForgetAll();

 private:
  // Unpacks `w`'s key on the first lane that takes it.
  absl::StatusOr<std::unique_ptr<CachedRkey>> Unpack(const RemoteWindow& w, size_t max_rkey_bytes,
                                                     const RkeyLanes& lanes);
  void EvictOne();

  std::atomic<uint64_t>* outstanding_;
  std::vector<std::unique_ptr<CachedRkey>> entries_;
  absl::Time last_sweep_ = absl::InfinitePast();
  uint64_t use_clock_ = 0;
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_RKEY_CACHE_H_
