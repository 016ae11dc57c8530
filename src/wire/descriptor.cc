// AOBJ_PEER_INPUT: decodes descriptors from requests (fuzz target in fuzz/).
#include "wire/descriptor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

absl::Status ValidateDescriptors(const Descriptors& descriptors, const SessionLimits& limits) {
  // AOBJ-MEM-005: bounded count.
  if (descriptors.size() > static_cast<int>(limits.max_descriptors)) {
    return MakeError(ErrorCode::kInvalidDescriptor,
                     absl::StrCat("request carries ", descriptors.size(),
                                  " descriptors; the session allows ", limits.max_descriptors));
  }
  for (int i = 0; i < descriptors.size(); ++i) {
    const auto& d = descriptors[i];
    // AOBJ-MEM-001: a window has bytes.
    if (d.length() == 0) {
      return MakeError(ErrorCode::kInvalidDescriptor,
                       absl::StrCat("descriptor ", i, " has length 0"));
    }
    // AOBJ-MEM-002: address + length must not exceed 2^64, i.e. the last octet
    // (address + length - 1, length > 0 above) must not wrap; ending exactly at 2^64 is allowed.
    if (d.address() > UINT64_MAX - (d.length() - 1)) {
      return MakeError(ErrorCode::kInvalidDescriptor,
                       absl::StrCat("descriptor ", i, " wraps around the address space"));
    }
    // AOBJ-MEM-003: rkey present and bounded.
    if (d.rkey().empty() || d.rkey().size() > limits.max_rkey_bytes) {
      return MakeError(ErrorCode::kInvalidRkey,
                       absl::StrCat("descriptor ", i, " rkey is ", d.rkey().size(),
                                    " bytes; it must be 1 to ", limits.max_rkey_bytes));
    }
    // AOBJ-MEM-006: memory type.
    switch (d.memory_type()) {
      case aobj::v1::MEMORY_TYPE_HOST:
        break;
      case aobj::v1::MEMORY_TYPE_CUDA:
        return MakeError(ErrorCode::kUnsupportedMemoryType,
                         "CUDA device memory is not supported by this server");
      case aobj::v1::MEMORY_TYPE_UNSPECIFIED:
        return MakeError(ErrorCode::kInvalidDescriptor,
                         absl::StrCat("descriptor ", i, " has no memory type"));
      default:
        // AOBJ-MEM-019: a value this server does not know.
        return MakeError(ErrorCode::kUnsupportedMemoryType,
                         absl::StrCat("descriptor ", i, " has unknown memory type ",
                                      static_cast<int>(d.memory_type())));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TransferPiece>> PlanTransfer(const Descriptors& descriptors,
                                                        uint64_t size, uint64_t max_piece) {
  if (max_piece == 0) max_piece = UINT64_MAX;
  std::vector<TransferPiece> pieces;
  uint64_t offset = 0;
  for (int i = 0; i < descriptors.size() && offset < size; ++i) {
    const auto& d = descriptors[i];
    uint64_t in_window = 0;
    while (in_window < d.length() && offset < size) {
      const uint64_t n = std::min({d.length() - in_window, size - offset, max_piece});
      pieces.push_back({static_cast<size_t>(i), d.address() + in_window, offset, n});
      in_window += n;
      offset += n;
    }
  }
  if (offset < size) {
    // AOBJ-MEM-007 / AOBJ-MEM-008: the windows cannot hold the body; nothing is moved.
    return MakeError(ErrorCode::kDescriptorTooSmall,
                     absl::StrCat("descriptor windows hold ", offset, " bytes; the body is ",
                                  size, " bytes"));
  }
  return pieces;
}

}  // namespace aobj
