// Registered memory: a window of local memory UCX can expose to the peer's RMA.
//
// Spec: "Memory descriptors". The client owns RegisteredMemory objects and sends their packed
// rkey in descriptors; the server never creates one for a peer (AOBJ-TRN-002).
// Allocate() asks UCX to allocate (shared memory on this host: the fast RMA path, see
// shared/FACTS.md); Register() pins caller memory (works everywhere, but on UCX 1.13.1 without
// an RDMA NIC RMA into it is emulated and slow).
//
// Threading: any thread. The UcxContext must outlive the RegisteredMemory. Move-only.
#ifndef AOBJ_TRANSPORT_UCX_MEMORY_H_
#define AOBJ_TRANSPORT_UCX_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "transport/ucx_context.h"

namespace aobj {

class RegisteredMemory {
 public:
  // Allocates `size` (> 0) bytes through UCX, pre-faulted (every page touched once). With
  // `guard` > 0, `guard` more octets on either side belong to the same registration (and its
  // rkey) but not to data()/size(): a test harness fills them and checks that no peer wrote
  // outside the windows it described.
  static absl::StatusOr<std::unique_ptr<RegisteredMemory>> Allocate(const UcxContext& context,
                                                                    size_t size, size_t guard = 0);
  // Registers caller memory [data, data+size); the caller keeps ownership and must keep it
  // alive until this object is destroyed.
  static absl::StatusOr<std::unique_ptr<RegisteredMemory>> Register(const UcxContext& context,
                                                                    void* data, size_t size);
  ~RegisteredMemory();
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool allocated_by_ucx() const { return allocated_; }
  size_t guard() const { return guard_; }  // octets registered before data() and after the end
  // The packed rkey of the whole region (ucp_rkey_pack), for descriptors.
  const std::string& packed_rkey() const { return rkey_; }

 private:
  RegisteredMemory(ucp_context_h context, ucp_mem_h memh, uint8_t* data, size_t size,
                   bool allocated, std::string rkey)
      : context_(context), memh_(memh), data_(data), size_(size), allocated_(allocated),
        rkey_(std::move(rkey)) {}
  static absl::StatusOr<std::unique_ptr<RegisteredMemory>> Map(const UcxContext& context,
                                                               void* data, size_t size,
                                                               bool allocate, size_t guard = 0);
  ucp_context_h context_;
  ucp_mem_h memh_;
  uint8_t* data_;
  size_t size_;
  bool allocated_;
  std::string rkey_;
  size_t guard_ = 0;
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_MEMORY_H_
