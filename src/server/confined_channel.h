// The confined data channel (spec section 14.3, AOBJ-SEC-021; docs/security.md "Data channel
// confinement"): every UCP worker that a peer's octets reach runs in an aobj-data-worker process
// of its own, one per access key, driven over transport/confined_ipc.h. UCX 1.13.1 acts on what
// a connected peer sends without checking it (a tcp put request is a memcpy to the address it
// names; a header length past the receive segment is an assertion that aborts), so a peer that
// writes UCX's wire format itself can write into, or abort, the process that holds its
// endpoint. Confined, that process holds only its tenant's endpoints and the shared buffers of
// that tenant's transfers in progress: never the store, the credentials, the control channel or
// another tenant's bytes. When it dies, its requests in flight fail TRANSFER_FAILED, its
// sessions' later data requests DATA_CHANNEL_UNAVAILABLE (AOBJ-DAT-158), and the tenant's next
// session gets a fresh process.
//
// The bytes of a batch travel through a shared-memory buffer (memfd) of the process: the server
// copies them in before a write (GET) and out after a read (PUT).
//
// Threading: thread-safe.
#ifndef AOBJ_SERVER_CONFINED_CHANNEL_H_
#define AOBJ_SERVER_CONFINED_CHANNEL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aobj/types.h"
#include "server/data_channel.h"

namespace aobj {

struct ConfinedChannelOptions {
  std::string worker_path;                        // aobj-data-worker; FindDataWorker() when empty
  DataChannelOptions transport;                   // passed to each process
  absl::Duration wait_bound = absl::Seconds(10);  // BatchWaitBound
  // Processes at once. At the cap a new access key takes the process of one whose sessions all
  // closed; with none such its OpenSession gets SLOW_DOWN.
  size_t max_processes = 64;
  std::function<void(const std::string&)> log;
};

// The aobj-data-worker to run: `configured` if set, else $AOBJ_DATA_WORKER, else beside this
// process's executable, else the build tree's, else the installed one. NotFound says where it
// looked.
absl::StatusOr<std::string> FindDataWorker(const std::string& configured);

// Starts one process at once (a start error, such as a UCX that cannot make a context, is
// reported here, not at the first session) and keeps it for the first access key.
absl::StatusOr<std::unique_ptr<DataChannel>> NewConfinedDataChannel(
    const ConfinedChannelOptions& options);

}  // namespace aobj

#endif  // AOBJ_SERVER_CONFINED_CHANNEL_H_
