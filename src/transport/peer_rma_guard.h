// Refusing memory access that a data-channel peer initiates (AOBJ-SEC-020).
//
// The server is the only side that initiates RMA (AOBJ-TRN-013), but a UCP worker acts on the
// software-emulated RMA requests any connected peer sends it: UCX 1.13.1's handlers for put, get
// and atomic requests (rma_sw.c, amo_sw.c) copy to and from whatever address the request names,
// with no registration or key check. A peer that knows the server's worker address (UCX's wireup
// gives it to every peer the server connects to) can therefore read and write the server's whole
// address space with ucp_put_nbx / ucp_get_nbx and a key for its own memory. Measured here: a
// stock UCX 1.13.1 peer overwrote and read back a static buffer of another process over tcp
// lanes (error modes NONE and PEER) and over shared memory.
//
// RefusePeerRma() marks a worker as one that never serves such requests: the handlers of the
// put, get and atomic request messages are replaced, once per process, by ones that drop the
// request (the peer's operation never completes) and count it when the receiving worker is
// marked (ServerStats::peer_rma_refused counts them), and call UCX's own handler otherwise, so a
// client worker in the same process keeps serving its server. UCX exports no API for this: the
// replacement writes the handler table UCX 1.13 defines (ucp_am_handler_t in ucp_context.h, found
// with dlsym) and is done only when the running libucp is 1.13 and the table holds what that
// release puts there. Elsewhere RefusePeerRma() returns FAILED_PRECONDITION and the caller says the
// server is exposed.
//
// What this does not stop (docs/security.md): a peer that writes UCX's wire format itself can
// still use the tcp transport's own put request (uct tcp_ep.c copies to the address it names;
// UcxContext turns the tcp transport's put off on the server so that a stock UCX peer falls back
// to the software RMA refused here), send malformed tcp headers that UCX asserts on, or forge
// request ids; and a process with ptrace rights over the server reaches it through cma.
//
// Thread-safe. The replaced handlers run on whichever thread progresses the worker.
#ifndef AOBJ_TRANSPORT_PEER_RMA_GUARD_H_
#define AOBJ_TRANSPORT_PEER_RMA_GUARD_H_

#include <ucp/api/ucp.h>

#include <cstdint>

#include "absl/status/status.h"

namespace aobj {

// Marks `worker` so that peer-initiated put, get and atomic requests it receives are dropped.
// Call before the worker's address is given to anyone. FAILED_PRECONDITION when this UCX release
// is not one whose handler table this file knows (nothing is changed then).
absl::Status RefusePeerRma(ucp_worker_h worker);

// Unmarks `worker`; call before ucp_worker_destroy() (a later worker may reuse the address).
void ForgetPeerRmaWorker(ucp_worker_h worker);

// Requests dropped so far in this process, by kind.
struct PeerRmaRefusals {
  uint64_t puts = 0;
  uint64_t gets = 0;
  uint64_t atomics = 0;
};
PeerRmaRefusals PeerRmaRefused();

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_PEER_RMA_GUARD_H_
