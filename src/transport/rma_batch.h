// One request's RMA work as the server issues it: the windows its descriptors grant, and the
// operations between local memory and them (spec "Data movement", 7.4).
//
// Pure data and one pure check; thread-safe.
#ifndef AOBJ_TRANSPORT_RMA_BATCH_H_
#define AOBJ_TRANSPORT_RMA_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace aobj {

// A window of peer memory granted by one descriptor.
struct RemoteWindow {
  uint64_t address = 0;
  uint64_t length = 0;
  absl::string_view rkey;  // packed; borrowed, must outlive the batch that names it
};

// One RMA operation: `length` bytes between local memory and window `window` at `remote`.
struct RmaOp {
  size_t window = 0;
  uint64_t remote = 0;
  uint8_t* local = nullptr;
  size_t length = 0;
};

enum class RmaDirection {
  kWrite /* ucp_put_nbx: GET data to the client */,
  kRead /* ucp_get_nbx: PUT data from the client */
};

struct RmaBatch {
  RmaDirection direction = RmaDirection::kWrite;
  std::vector<RemoteWindow> windows;
  std::vector<RmaOp> ops;
  size_t max_rkey_bytes = 1024;
};

// AOBJ-MEM-009, AOBJ-MEM-021: OK when every operation of `batch` names a window and lies inside
// it (non-empty, no octet before or past it; written so that nothing overflows);
// DESCRIPTOR_OUT_OF_BOUNDS otherwise (INTERNAL for an operation that names no window). Checked
// before anything is issued, whatever the memory protection (AOBJ-SEC-001).
absl::Status CheckBatchBounds(const RmaBatch& batch);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_RMA_BATCH_H_
