// Private to UcxWorker's .cc files: the commands other threads hand the progress thread, and
// one running batch.
#ifndef AOBJ_TRANSPORT_UCX_WORKER_INTERNAL_H_
#define AOBJ_TRANSPORT_UCX_WORKER_INTERNAL_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "transport/ucx_worker.h"

namespace aobj {

struct UcxWorker::Command {
  enum Kind {
    kConnect,
    kDisconnect,
    kExecute,
    kProtection,
    kChallenge,
    kBind,
    kConnectOut,
    kSetHandler,
    kSend,
    kMessageWorker
  } kind;
  // Inputs.
  absl::string_view peer_address;
  absl::string_view session_id;  // kChallenge
  pid_t fifo_creator = 0;        // kConnect
  uint64_t endpoint = 0;
  const RmaBatch* batch = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
  // Execute: lowered by the calling thread when its call is abandoned (absl::ToUnixNanos).
  std::atomic<int64_t> abandon_deadline_ns{INT64_MAX};
  // Outputs, written by the progress thread before `done` is notified.
  absl::Status status;
  uint64_t new_endpoint = 0;
  Protection protection = Protection::kEmulated;
  std::string challenges;     // kChallenge; kMessageWorker: the new worker's address
  uint16_t am_id = 0;         // kSetHandler, kSend, kMessageWorker
  std::string payload;        // kSend
  MessageHandler handler;     // kSetHandler, kMessageWorker
  FailureHandler on_failure;  // kConnectOut
  absl::Notification done;

  // Writes the result and wakes the caller.
  void Finish(absl::Status s = absl::OkStatus()) {
    status = std::move(s);
    done.Notify();
  }
};

// One Execute() in progress on the progress thread.
struct UcxWorker::Job {
  std::shared_ptr<Command> cmd;
  uint64_t endpoint = 0;
  std::vector<CachedRkey*> rkeys;  // borrowed from the endpoint's cache, one per window
  size_t pending = 0;              // RMA requests not yet completed
  size_t pending_emu = 0;          // those of them issued on the session's emulation worker
  bool issued = false;             // at least one operation reached UCX
  std::vector<ucp_ep_h> used;      // endpoints it issued operations on (flushed for writes)
  struct Flush {
    ucp_ep_h ep;
    UcxRequest request;
  };
  std::vector<Flush> flushes;  // flush requests outstanding
  bool flushing = false;
  bool timed_out = false;
  absl::Status status;  // first error seen
};

// TRANSFER_FAILED naming what failed and UCX's status.
absl::Status TransferError(absl::string_view what, ucs_status_t st);

// A worker of `context`, its packed address and its event fd. A server context's worker refuses
// peer-initiated RMA before its address exists; `refusal` says whether that could be arranged.
absl::Status MakeWorker(const UcxContext& context, WorkerPtr* worker, std::string* address,
                        int* efd, absl::Status* refusal);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_WORKER_INTERNAL_H_
