// Guard for shared-memory RMA: where UCX maps the peer's memory into this process (sysv/posix
// transports), a put or get is a plain memcpy at an address computed from the peer's descriptor,
// and no hardware checks it (shared/FACTS.md). A descriptor pointing outside the peer's segment
// would make the server write into its own heap. Before any such RMA, the server checks that the
// local image of the window lies inside one shared mapping that this process did not create
// (AOBJ-MEM-012).
//
// Threading: any thread. Reads /proc/self/maps; costs tens of microseconds.
#ifndef AOBJ_TRANSPORT_SHM_GUARD_H_
#define AOBJ_TRANSPORT_SHM_GUARD_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace aobj {

// OK when [local, local+length) lies inside a single shared-memory mapping of this process
// that was created by another process. Only System V segments qualify (UCX's sysv transport, the
// one UCX allocates client memory from by default); the creator is read with shmctl(IPC_STAT).
// Anything else (heap, stack, our own segments, posix segments whose creator cannot be told)
// fails closed with DESCRIPTOR_OUT_OF_BOUNDS.
absl::Status CheckForeignSharedWindow(uintptr_t local, size_t length);

// The bounds [lo, hi) of the foreign System V mapping that holds address `local`, so a caller
// that keeps the segment attached can check later windows without reading /proc/self/maps
// again. The mapping must be one of the segments `named` (the ids the window's remote key
// names): UCX computes the local image of a window as its address plus the key's offset without
// bounds, so a window outside its key's segment can land in another segment this process has
// attached (another client's memory, or a receive FIFO). DESCRIPTOR_OUT_OF_BOUNDS when `local`
// is not in such a mapping.
struct SharedMapping {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};
absl::StatusOr<SharedMapping> FindForeignSharedMapping(uintptr_t local,
                                                       absl::Span<const uint32_t> named);

// AOBJ-SES-024: before the shared-memory lane creates an endpoint to `peer` (a worker address that
// passed CheckWorkerAddress), every System V segment the address names as a receive FIFO (the
// interface address of each entry for the transport of `local_shm`, this server's System V-only
// worker address) must exist, be exactly the size of this server's own FIFO segment, belong to
// this server's user, and not be that FIFO itself. (A client in the same process is legitimate:
// an embedding that hosts both.) UCX attaches such a segment and
// writes into it as a FIFO of its own configured size: a smaller one is a SIGBUS in the server,
// and any other is another process's memory. INVALID_ARGUMENT otherwise;
// DATA_CHANNEL_UNAVAILABLE when `local_shm` does not describe a System V FIFO. When `creator` is
// set it receives the pid of the process that created the named FIFOs (0 when the address names
// none); FIFOs of two different creators are INVALID_ARGUMENT.
absl::Status CheckPeerFifoSegments(absl::string_view peer, absl::string_view local_shm,
                                   pid_t* creator = nullptr);

// Exposed for tests: the same check over a given maps text. `is_foreign(shmid)` tells whether
// the System V segment `shmid` was created by another process.
absl::Status CheckForeignSharedWindowIn(absl::string_view maps, uintptr_t local, size_t length,
                                        const std::function<bool(uint64_t shmid)>& is_foreign);
absl::StatusOr<SharedMapping> FindForeignSharedMappingIn(
    absl::string_view maps, uintptr_t local, absl::Span<const uint32_t> named,
    const std::function<bool(uint64_t shmid)>& is_foreign);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_SHM_GUARD_H_
