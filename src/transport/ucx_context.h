// UCX context: the process-wide UCP instance one side of the data channel runs on.
//
// Spec: section "Transport binding 1: UCX". The context is configured for RMA only; UCX
// configuration comes from the environment (UCX_*) with two defaults applied when the
// environment does not set them: UCX_NET_DEVICES=lo (the project's loopback rule) and, when
// TransportOptions::transports is non-empty, UCX_TLS.
//
// Threading: Create() from any thread; the context is immutable afterwards and may be shared by
// any number of workers. It must outlive every worker and memory region made from it.
#ifndef AOBJ_TRANSPORT_UCX_CONTEXT_H_
#define AOBJ_TRANSPORT_UCX_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "aobj/types.h"
#include <ucp/api/ucp.h>

namespace aobj {

using TransportOptions = DataChannelOptions;

class UcxContext {
 public:
  // `alloc_prio`, when given and UCX_ALLOC_PRIO is not set, is UCX's allocator order for
  // RegisteredMemory::Allocate (e.g. "md:posix"; tests and the conformance suite use it to place
  // client memory in a chosen kind of segment).
  static absl::StatusOr<std::unique_ptr<UcxContext>> Create(const TransportOptions& options,
                                                            const char* alloc_prio = nullptr);
  // Server side: as Create(), for workers that serve peers and initiate all RMA themselves
  // (AOBJ-SEC-020): the tcp transport does not offer its own put (UCX_TCP_PUT_ENABLE=n unless the
  // environment sets it), so that a peer's put to this side takes the software path that
  // UcxWorker refuses (transport/peer_rma_guard.h).
  static absl::StatusOr<std::unique_ptr<UcxContext>> CreateForServer(
      const TransportOptions& options);
  // Server side: a second context for the shared-memory lane (AOBJ-TRN-003): System V shared
  // memory only, endpoints in error mode NONE, used for windows UCX maps into this process
  // (operations that are a memcpy and cannot wait on the peer). Null (and OK) when `options` or
  // UCX_TLS leave System V shared memory out. A server context (serves_peers()).
  static absl::StatusOr<std::unique_ptr<UcxContext>> CreateSharedMemoryLane(
      const TransportOptions& options);
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h get() const { return context_; }
  // Whether workers of this context refuse peer-initiated RMA (the server's).
  bool serves_peers() const { return serves_peers_; }

 private:
  UcxContext(ucp_context_h context, bool serves_peers)
      : context_(context), serves_peers_(serves_peers) {}
  static absl::StatusOr<std::unique_ptr<UcxContext>> Make(const TransportOptions& options,
                                                          const char* forced_tls,
                                                          const char* alloc_prio,
                                                          bool serves_peers);
  ucp_context_h context_;
  bool serves_peers_;
};

// "UCS_ERR_..." text of a UCX status, for messages.
std::string UcxStatusString(ucs_status_t status);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_CONTEXT_H_
