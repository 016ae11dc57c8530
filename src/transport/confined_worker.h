// The data-channel process of a confined server (aobj-data-worker; transport/confined_ipc.h).
//
// It makes the server's UCP contexts and one UcxWorker exactly as an unconfined server does, and
// serves the server's requests from the stream `fd`: endpoints, challenges, binding and RMA
// batches whose local side is a shared-memory buffer the server passed it. It exits when the
// stream ends (the server closed it or died).
#ifndef AOBJ_TRANSPORT_CONFINED_WORKER_H_
#define AOBJ_TRANSPORT_CONFINED_WORKER_H_

#include "aobj/types.h"

namespace aobj {

// Runs until the server closes `fd`; returns the process's exit status.
int RunConfinedWorker(int fd, const DataChannelOptions& options);

// What the process does to itself before it reads a peer's octet: no new privileges, no
// capabilities (so that, taken over, it cannot ptrace, signal by privilege or map what its user
// could not). Returns an empty string, or why a step failed.
std::string ConfineThisProcess();

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_CONFINED_WORKER_H_
