// UcxWorker: Execute()'s batches on the progress thread (spec "Data movement", 13.7).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "transport/ucx_worker.h"
#include "transport/ucx_worker_internal.h"
#include "wire/status_macros.h"

namespace aobj {

void UcxWorker::StartJob(const std::shared_ptr<Command>& cmd) {
  auto it = endpoints_.find(cmd->endpoint);
  if (it == endpoints_.end()) {
    // AOBJ-DAT-009: no usable data channel is DATA_CHANNEL_UNAVAILABLE, never an inline fallback.
    cmd->Finish(MakeError(ErrorCode::kDataChannelUnavailable, "no data-channel endpoint"));
    return;
  }
  EndpointState& state = it->second;
  if (!state.failed.ok()) {
    // AOBJ-DAT-158: a failed data channel stays failed; the client opens a new session.
    cmd->Finish(state.failed);
    return;
  }
  if (!state.bound) {
    // AOBJ-SES-027: no RMA to an address whose process has not proven the session's key.
    cmd->Finish(MakeError(ErrorCode::kEndpointUnconfirmed,
                          "the session's data endpoint is not confirmed: answer the endpoint "
                          "challenges with ConfirmEndpoint first (AOBJ-SES-026)"));
    return;
  }
  auto job = std::make_unique<Job>();
  job->cmd = cmd;
  job->endpoint = cmd->endpoint;
  ++state.jobs;
  if (absl::Status s = PrepareJob(*job, state); !s.ok()) {
    FinishJob(*job, std::move(s));
    return;
  }
  IssueJob(*job, state);
  jobs_.push_back(std::move(job));
}

absl::Status UcxWorker::PrepareJob(Job& job, EndpointState& state) {
  const RmaBatch& batch = *job.cmd->batch;
  // AOBJ-MEM-009, AOBJ-MEM-021, AOBJ-SEC-001: every op inside its window, before anything
  // reaches UCX (checked again here: the handler's check is not this process's to trust).
  AOBJ_RETURN_IF_ERROR(CheckBatchBounds(batch));
  // Unpack rkeys (AOBJ-MEM-004) and check shared-memory windows (AOBJ-MEM-012).
  auto emulation = [&] { return EmulationEp(state); };  // outlives `lanes`, which borrows it
  const RkeyLanes lanes{state.shm_ep.get(), emulation, state.net_ep.get(), state.fifo_creator};
  for (const RemoteWindow& w : batch.windows) {
    auto entry = state.rkeys.Acquire(w, batch.max_rkey_bytes, lanes);
    if (!entry.ok()) return entry.status();
    job.rkeys.push_back(*entry);
  }
  return absl::OkStatus();
}

// RMA requests are counted here and free themselves (ucx_handles.h says why).
void UcxWorker::OnRmaDone(void* request, ucs_status_t status, void* user_data) {
  const auto bits = reinterpret_cast<uintptr_t>(user_data);
  auto* job = reinterpret_cast<Job*>(bits & ~uintptr_t{1});
  if (status != UCS_OK && job->status.ok()) job->status = TransferError("RMA", status);
  --job->pending;
  if ((bits & 1) != 0) --job->pending_emu;
  ucp_request_free(request);
}

void UcxWorker::IssueJob(Job& job, EndpointState& state) {
  const RmaBatch& batch = *job.cmd->batch;
  for (const RmaOp& op : batch.ops) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    const CachedRkey& key = *job.rkeys[op.window];
    // The low bit marks an operation of the emulation worker: destroying that worker ends it
    // without a callback (DestroyEmulationWorker), while the PEER endpoint's operations still
    // complete through theirs after its forced close.
    const bool emu = key.ep == state.emu_ep.get() && key.ep != nullptr;
    static_assert(alignof(Job) >= 2);
    param.user_data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&job) | (emu ? 1u : 0u));
    param.cb.send = &UcxWorker::OnRmaDone;
    if (std::find(job.used.begin(), job.used.end(), key.ep) == job.used.end()) {
      job.used.push_back(key.ep);
    }
    job.issued = true;
    ucs_status_ptr_t req =
        batch.direction == RmaDirection::kWrite
            ? ucp_put_nbx(key.ep, op.local, op.length, op.remote, key.rkey.get(), &param)
            : ucp_get_nbx(key.ep, op.local, op.length, op.remote, key.rkey.get(), &param);
    if (UCS_PTR_IS_ERR(req)) {
      if (job.status.ok()) job.status = TransferError("issue RMA", UCS_PTR_STATUS(req));
      break;
    }
    if (req != nullptr) {
      ++job.pending;
      if (emu) ++job.pending_emu;
    }
  }
}

void UcxWorker::FinishJob(Job& job, absl::Status status) {
  auto it = endpoints_.find(job.endpoint);
  // AOBJ-MEM-023: the request no longer uses its rkeys; they stay cached for the session.
  for (CachedRkey* entry : std::exchange(job.rkeys, {})) {
    if (it != endpoints_.end()) it->second.rkeys.Release(entry);
  }
  if (it != endpoints_.end()) --it->second.jobs;
  job.cmd->Finish(std::move(status));
}

void UcxWorker::AdvanceJobs() {
  const absl::Time now = absl::Now();
  const absl::Time drain = absl::FromUnixNanos(drain_deadline_ns_.load());
  for (size_t i = 0; i < jobs_.size();) {
    Job& job = *jobs_[i];
    auto ep_it = endpoints_.find(job.endpoint);
    EndpointState* state = ep_it == endpoints_.end() ? nullptr : &ep_it->second;
    const bool usable = state != nullptr && state->failed.ok();
    std::erase_if(job.flushes, [&job](const Job::Flush& f) {
      const ucs_status_t st = f.request.status();
      if (st == UCS_INPROGRESS) return false;
      if (st != UCS_OK && job.status.ok()) job.status = TransferError("flush", st);
      return true;
    });
    // AOBJ-DAT-157: once an operation of the request failed, what it issued earlier may still
    // land (puts complete locally before they are remotely visible) and what is outstanding may
    // never end: the endpoint is failed, which ends it all, before the request is answered.
    if (!job.status.ok() && job.issued && usable) {
      FailEndpoint(job.endpoint, *state,
                   absl::StrCat("an RMA operation failed (", job.status.message(), ")"));
    }
    if (job.pending > 0 || !job.flushes.empty()) {
      // AOBJ-OPS-008: every wait is bounded; past the bound the endpoint is failed: its PEER
      // endpoint force-closed (the operations complete with an error) and its own worker
      // destroyed (nothing of it runs again), so the job ends only when UCX no longer touches
      // its local memory.
      const absl::Time deadline = std::min(
          {job.cmd->deadline, absl::FromUnixNanos(job.cmd->abandon_deadline_ns.load()), drain});
      if (!job.timed_out && now > deadline) {
        job.timed_out = true;
        const std::string why =
            deadline == drain ? "the server is shutting down"
            : deadline == job.cmd->deadline
                ? "RMA did not complete within the server's bound (the peer stopped "
                  "progressing or is gone)"
                : "the call was abandoned and its RMA did not complete within the grace period";
        if (job.status.ok()) job.status = MakeError(ErrorCode::kTransferFailed, why);
        if (state != nullptr && state->failed.ok()) FailEndpoint(job.endpoint, *state, why);
      }
      ++i;
      continue;
    }
    if (!job.flushing && job.status.ok() && usable &&
        job.cmd->batch->direction == RmaDirection::kWrite) {
      // AOBJ-DAT-001: a completed put is not yet remotely visible; flush before replying.
      job.flushing = true;
      for (ucp_ep_h ep : job.used) {
        ucp_request_param_t param{};
        UcxRequest flush(ucp_ep_flush_nbx(ep, &param));
        const ucs_status_t st = flush.status();
        if (st == UCS_INPROGRESS) {
          job.flushes.push_back({ep, std::move(flush)});
        } else if (st != UCS_OK) {
          job.status = TransferError("flush", st);
        }
      }
      continue;  // the same job again: its flushes, or its failure
    }
    if (job.status.ok() && !usable) {
      job.status = state != nullptr ? state->failed
                                    : MakeError(ErrorCode::kDataChannelUnavailable,
                                                "the data-channel endpoint was closed");
    }
    FinishJob(job, job.status);
    jobs_.erase(jobs_.begin() + static_cast<long>(i));
  }
  ReleaseFailedRkeys();
}

}  // namespace aobj
