// The client's buffers and the windows of a request: the Buffer handles the library issues
// (and the check that a Buffer is one of them), the memory descriptors a request carries, and
// the checksum of a body that lies in buffer slices. One BufferRegistry per Client.
#ifndef AOBJ_CLIENT_BUFFERS_H_
#define AOBJ_CLIENT_BUFFERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aobj/client.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "wire/checksum.h"
#include "wire/protocol.h"

namespace aobj::client_internal {

// A Buffer: registered for its whole life, or (ClientOptions::register_per_request, caller
// memory only) just a region that each request registers for itself (RequestRegistrations).
// `issuer` is the BufferRegistry that issued it: a Client uses only its own buffers (Issued()).
class BufferImpl final : public Buffer {
 public:
  BufferImpl(const void* issuer, std::unique_ptr<RegisteredMemory> mem)
      : issuer_(issuer), mem_(std::move(mem)), data_(mem_->data()), size_(mem_->size()) {}
  BufferImpl(const void* issuer, uint8_t* data, size_t size)
      : issuer_(issuer), data_(data), size_(size) {}
  uint8_t* data() const override { return data_; }
  size_t size() const override { return size_; }
  bool allocated_by_library() const override { return mem_ != nullptr && mem_->allocated_by_ucx(); }
  bool registered() const { return mem_ != nullptr; }
  const std::string& rkey() const { return mem_->packed_rkey(); }
  const void* issuer() const { return issuer_; }

 private:
  const void* const issuer_;
  std::unique_ptr<RegisteredMemory> mem_;  // null: registered per request
  uint8_t* data_;
  size_t size_;
};

// What a request registered for itself (unmapped after the reply: AOBJ-MEM-011, or after the
// worker is gone, AOBJ-MEM-014), and whether any of its windows is memory UCX did not
// allocate, which UCX's software RMA reaches through this side's progress (the worker then
// polls for the length of the call: UcxWorker::spin_counter).
struct RequestRegistrations {
  std::vector<std::unique_ptr<RegisteredMemory>> memory;
  bool emulated_windows = false;
};

class BufferRegistry {
 public:
  // `context`: the session's (SessionChannel::context()); it outlives the registry and every
  // buffer the registry issues.
  void Init(UcxContext* context, const ClientOptions& options);

  absl::StatusOr<std::unique_ptr<Buffer>> Allocate(size_t size);
  // Host memory only (AOBJ-MEM-026).
  absl::StatusOr<std::unique_ptr<Buffer>> Register(void* data, size_t size);

  // The library's own view of `buffer`, when this registry issued it; INVALID_ARGUMENT for
  // another Client's buffer (registered in another UCX context, its rkey means nothing to this
  // session's endpoint) or a class the caller derived.
  absl::StatusOr<const BufferImpl*> Issued(const Buffer& buffer) const;
  // The total length of `slices`; INVALID_ARGUMENT for a null or foreign buffer or a window
  // past its buffer.
  absl::StatusOr<uint64_t> CheckSlices(const std::vector<BufferSlice>& slices) const;
  // Descriptors for the non-empty slices (checked by CheckSlices); INVALID_ARGUMENT when they
  // are more than `max_windows`, the session's (AOBJ-MEM-005, AOBJ-MEM-015), before anything is
  // sent. A per-request buffer's window is registered now, exactly, and stays registered while
  // `registrations` lives.
  absl::Status AddWindows(const std::vector<BufferSlice>& slices, uint32_t max_windows,
                          google::protobuf::RepeatedPtrField<aobj::v1::MemoryDescriptor>* out,
                          RequestRegistrations* registrations);

 private:
  absl::Status AddWindow(const BufferSlice& s, aobj::v1::MemoryDescriptor* d,
                         RequestRegistrations* registrations);

  UcxContext* context_ = nullptr;
  bool register_per_request_ = false;
  std::function<MemoryKind(const void*, size_t)> classify_memory_;
};

// Calls fn(pointer, length) over octets [from, from + n) of the slices' concatenation, in order.
template <class Fn>
void ForEachSpanIn(const std::vector<BufferSlice>& slices, uint64_t from, uint64_t n, Fn fn) {
  for (const BufferSlice& s : slices) {
    if (n == 0) break;
    if (from >= s.length) {
      from -= s.length;
      continue;
    }
    const uint64_t take = std::min(n, s.length - from);
    if (take > 0) fn(s.buffer->data() + s.offset + from, static_cast<size_t>(take));
    from = 0;
    n -= take;
  }
}

// The same over the first `n` octets.
template <class Fn>
void ForEachSpan(const std::vector<BufferSlice>& slices, uint64_t n, Fn fn) {
  ForEachSpanIn(slices, 0, n, fn);
}

// The end-to-end checksum of the first `size` octets of `slices` (AOBJ-DAT-004). A large body
// is checksummed in pieces of at least kParallelChecksumPiece on up to four threads, one per
// core, and the pieces combined (Checksummer::Append): after a GET this pass over the body is
// most of the client's time (docs/benchmarks.md), and the server is idle by then.
inline constexpr uint64_t kParallelChecksumPiece = uint64_t{8} << 20;
std::string ChecksumOf(ChecksumAlgorithm algo, const std::vector<BufferSlice>& slices,
                       uint64_t size);

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_BUFFERS_H_
