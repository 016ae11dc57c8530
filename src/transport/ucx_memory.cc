#include "transport/ucx_memory.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

absl::StatusOr<std::unique_ptr<RegisteredMemory>> RegisteredMemory::Allocate(
    const UcxContext& context, size_t size, size_t guard) {
  if (size == 0) {
    return MakeError(ErrorCode::kInvalidArgument, "cannot register a zero-length region");
  }
  if (guard > (SIZE_MAX - size) / 2) {
    return MakeError(ErrorCode::kInvalidArgument, "guard too large");
  }
  return Map(context, nullptr, size, /*allocate=*/true, guard);
}

absl::StatusOr<std::unique_ptr<RegisteredMemory>> RegisteredMemory::Register(
    const UcxContext& context, void* data, size_t size) {
  if (data == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "cannot register a null pointer");
  }
  return Map(context, data, size, /*allocate=*/false);
}

absl::StatusOr<std::unique_ptr<RegisteredMemory>> RegisteredMemory::Map(const UcxContext& context,
                                                                        void* data, size_t size,
                                                                        bool allocate,
                                                                        size_t guard) {
  if (size == 0) {
    return MakeError(ErrorCode::kInvalidArgument, "cannot register a zero-length region");
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.address = data;
  params.length = size + 2 * guard;
  params.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
  params.memory_type = UCS_MEMORY_TYPE_HOST;
  ucp_mem_h memh = nullptr;
  // AOBJ-TRN-007: mapped on the worker's context; no PROT field means remote read and write
  // (AOBJ-MEM-017).
  ucs_status_t st = ucp_mem_map(context.get(), &params, &memh);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_mem_map of ", size, " bytes: ", UcxStatusString(st)));
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(memh, &attr);
  if (st != UCS_OK) {
    ucp_mem_unmap(context.get(), memh);
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_mem_query: ", UcxStatusString(st)));
  }
  void* rkey_buffer = nullptr;
  size_t rkey_size = 0;
  st = ucp_rkey_pack(context.get(), memh, &rkey_buffer, &rkey_size);  // AOBJ-TRN-007
  if (st != UCS_OK) {
    ucp_mem_unmap(context.get(), memh);
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_rkey_pack: ", UcxStatusString(st)));
  }
  std::string rkey(static_cast<const char*>(rkey_buffer), rkey_size);
  ucp_rkey_buffer_release(rkey_buffer);

  auto* bytes = static_cast<uint8_t*>(allocate ? attr.address : data);
  if (allocate) {
    // Pre-fault: the first write into fresh pages runs at a fraction of memcpy speed
    // (shared/FACTS.md), which would otherwise land on the first transfer.
    const long page = sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < size + 2 * guard; off += static_cast<size_t>(page)) bytes[off] = 0;
  }
  auto m = std::unique_ptr<RegisteredMemory>(
      new RegisteredMemory(context.get(), memh, bytes + guard, size, allocate, std::move(rkey)));
  m->guard_ = guard;
  return m;
}

RegisteredMemory::~RegisteredMemory() { ucp_mem_unmap(context_, memh_); }

}  // namespace aobj
