// How a batched read or write (Client::GetObjects and PutObjects, spec sections 9.16 and 9.17) is
// cut into requests, and where each item's region lies in a request's scatter list. Pure;
// thread-safe.
#ifndef AOBJ_CLIENT_BATCH_PLAN_H_
#define AOBJ_CLIENT_BATCH_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/client.h"

namespace aobj::client_internal {

// One GetObjects or PutObjects request: its windows (one per distinct Buffer, covering that
// buffer's regions), and for each of its items the caller's index and the region's offset in the
// concatenation of the windows.
struct BatchRequestPlan {
  std::vector<BufferSlice> windows;
  std::vector<size_t> items;
  std::vector<uint64_t> offsets;
};

// Cuts `items` in order into requests of at most `max_items` items (AOBJ-OBJ-237), `max_windows`
// distinct buffers and `max_bytes` octets of regions (AOBJ-OBJ-238). INVALID_ARGUMENT, before
// anything is sent, for a slice without a buffer or outside it, a region larger than
// `max_bytes`, or two regions of one buffer that overlap.
// `overlap_allowed` (PutObjects: the server only reads the regions) skips the overlap check.
absl::StatusOr<std::vector<BatchRequestPlan>> PlanBatch(const std::vector<BufferSlice>& regions,
                                                        size_t max_items, size_t max_windows,
                                                        uint64_t max_bytes, bool overlap_allowed);
// PlanBatch of the items' destinations, which must not overlap.
absl::StatusOr<std::vector<BatchRequestPlan>> PlanBatchGet(const std::vector<BatchGetItem>& items,
                                                           size_t max_items, size_t max_windows,
                                                           uint64_t max_bytes);

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_BATCH_PLAN_H_
