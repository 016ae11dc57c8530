// BufferRegistry (buffers.h): issuing buffers, checking their origin, and the windows of a
// request.
#include "client/buffers.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "aobj/device.h"
#include "exec/helpers.h"
#include "wire/status_macros.h"

namespace aobj::client_internal {

namespace pb = aobj::v1;

void BufferRegistry::Init(UcxContext* context, const ClientOptions& options) {
  context_ = context;
  register_per_request_ = options.register_per_request;
  classify_memory_ = options.classify_memory;
}

absl::StatusOr<std::unique_ptr<Buffer>> BufferRegistry::Allocate(size_t size) {
  auto mem = RegisteredMemory::Allocate(*context_, size);
  if (!mem.ok()) return mem.status();
  return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
}

absl::StatusOr<std::unique_ptr<Buffer>> BufferRegistry::Register(void* data, size_t size) {
  // AOBJ-MEM-026: UCX without CUDA support would take device memory for host memory.
  const MemoryKind kind = classify_memory_ ? classify_memory_(data, size) : ClassifyMemory(data);
  if (kind != MemoryKind::kHost) {
    return MakeError(
        ErrorCode::kUnsupportedMemoryType,
        absl::StrCat("the buffer is CUDA ", kind == MemoryKind::kCudaDevice ? "device" : "managed",
                     " memory, which this client's UCX cannot register; move it "
                     "through host memory with aobj::DeviceStager (aobj/device.h)"));
  }
  if (register_per_request_) {
    if (data == nullptr || size == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "no memory to register");
    }
    return std::unique_ptr<Buffer>(new BufferImpl(this, static_cast<uint8_t*>(data), size));
  }
  auto mem = RegisteredMemory::Register(*context_, data, size);
  if (!mem.ok()) return mem.status();
  return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
}

absl::StatusOr<const BufferImpl*> BufferRegistry::Issued(const Buffer& buffer) const {
  const auto* impl = dynamic_cast<const BufferImpl*>(&buffer);
  if (impl == nullptr || impl->issuer() != this) {
    return MakeError(ErrorCode::kInvalidArgument,
                     impl == nullptr
                         ? "the buffer is not one the library issued; pass a Buffer from this "
                           "Client's AllocateBuffer or RegisterBuffer"
                         : "the buffer was issued by another Client; each Client uses only the "
                           "buffers of its own AllocateBuffer or RegisterBuffer");
  }
  return impl;
}

absl::Status BufferRegistry::AddWindow(const BufferSlice& s, pb::MemoryDescriptor* d,
                                       RequestRegistrations* registrations) {
  absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer);
  if (!issued.ok()) return issued.status();
  const BufferImpl& buf = **issued;
  d->set_address(reinterpret_cast<uint64_t>(buf.data()) + s.offset);
  d->set_length(s.length);
  d->set_memory_type(pb::MEMORY_TYPE_HOST);
  if (!buf.allocated_by_library()) registrations->emulated_windows = true;
  if (buf.registered()) {
    d->set_rkey(buf.rkey());  // AOBJ-MEM-017: the rkey of the registration of the whole buffer
    return absl::OkStatus();
  }
  // AOBJ-MEM-017, AOBJ-TRN-007: registered for this request only; AOBJ-MEM-025 says what
  // unmapping it afterwards does and does not achieve.
  auto mem = RegisteredMemory::Register(*context_, buf.data() + s.offset, s.length);
  if (!mem.ok()) return mem.status();
  d->set_rkey((*mem)->packed_rkey());
  registrations->memory.push_back(std::move(*mem));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> BufferRegistry::CheckSlices(const std::vector<BufferSlice>& slices) const {
  uint64_t total = 0;
  for (const BufferSlice& s : slices) {
    if (s.buffer == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "slice without buffer");
    }
    if (absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer); !issued.ok()) {
      return issued.status();
    }
    if (s.offset > s.buffer->size() || s.length > s.buffer->size() - s.offset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("slice [", s.offset, ", +", s.length,
                                    ") lies outside its buffer of ", s.buffer->size()));
    }
    total += s.length;
  }
  return total;
}

absl::Status BufferRegistry::AddWindows(
    const std::vector<BufferSlice>& slices, uint32_t max_windows,
    google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* out,
    RequestRegistrations* registrations) {
  const size_t windows = std::count_if(slices.begin(), slices.end(),
                                       [](const BufferSlice& s) { return s.length > 0; });
  if (windows > max_windows) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(windows, " windows; the session allows ", max_windows));
  }
  for (const BufferSlice& s : slices) {
    if (s.length > 0) AOBJ_RETURN_IF_ERROR(AddWindow(s, out->Add(), registrations));
  }
  return absl::OkStatus();
}

std::string ChecksumOf(ChecksumAlgorithm algo, const std::vector<BufferSlice>& slices,
                       uint64_t size) {
  static const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t pieces = std::min<uint64_t>({cores, 4, size / kParallelChecksumPiece});
  std::vector<Checksummer> sums(std::max<uint64_t>(pieces, 1), Checksummer(algo));
  auto bound = [&](uint64_t k) { return size / sums.size() * k; };
  auto run = [&](uint64_t k) {
    const uint64_t from = bound(k);
    const uint64_t to = k + 1 == sums.size() ? size : bound(k + 1);
    ForEachSpanIn(slices, from, to - from, [&](uint8_t* p, size_t n) { sums[k].Update(p, n); });
  };
  RunInParallel(sums.size(), run);
  for (uint64_t k = 1; k < sums.size(); ++k) {
    const uint64_t to = k + 1 == sums.size() ? size : bound(k + 1);
    sums[0].Append(sums[k], to - bound(k));
  }
  return sums[0].Finish();
}

}  // namespace aobj::client_internal
