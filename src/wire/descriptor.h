// Memory descriptors: validation and the layout of a body across descriptor windows
// (spec "Memory descriptors", AOBJ-MEM-001..008).
// Pure functions over the generated proto types; thread-safe.
#ifndef AOBJ_WIRE_DESCRIPTOR_H_
#define AOBJ_WIRE_DESCRIPTOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/v1/aobj.pb.h"
#include "wire/protocol.h"

namespace aobj {

using Descriptors = google::protobuf::RepeatedPtrField<aobj::v1::MemoryDescriptor>;

// Checks every descriptor of a request on its own: count, length, wrap-around, rkey size,
// memory type (AOBJ-MEM-001, -002, -003, -005, -006).
absl::Status ValidateDescriptors(const Descriptors& descriptors, const SessionLimits& limits);

// One contiguous piece of a transfer: `length` bytes of the body at `body_offset` go to/from
// window `window` at remote address `remote`.
struct TransferPiece {
  size_t window;
  uint64_t remote;
  uint64_t body_offset;
  uint64_t length;
};

// Lays `size` body bytes across the windows in order, each filled from its start
// (AOBJ-MEM-008), in pieces of at most `max_piece` bytes (AOBJ-DAT-012). DESCRIPTOR_TOO_SMALL when
// the windows hold fewer than `size` bytes (AOBJ-MEM-007). Call after ValidateDescriptors.
absl::StatusOr<std::vector<TransferPiece>> PlanTransfer(const Descriptors& descriptors,
                                                        uint64_t size, uint64_t max_piece);

}  // namespace aobj

#endif  // AOBJ_WIRE_DESCRIPTOR_H_
