// UcxWorker: a session's endpoints on the progress thread: connect, bind, describe, fail, close
// (spec 5.6, "Transport binding 1: UCX", 13.7).
#include <sys/epoll.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "transport/address_check.h"
#include "transport/lane_protection.h"
#include "transport/peer_rma_guard.h"
#include "transport/shm_guard.h"
#include "transport/ucx_worker.h"
#include "transport/ucx_worker_internal.h"
#include "wire/crypto.h"
#include "wire/signing.h"

namespace aobj {

void UcxWorker::OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  // Called from ucp_worker_progress on the progress thread; the endpoint is failed right after
  // progress returns (closing it inside UCX's own callback is not allowed).
  auto* self = static_cast<UcxWorker*>(arg);
  self->peer_errors_.push_back({ep, status});
}

void UcxWorker::DoConnect(Command& cmd) {
  EndpointState state(&rkeys_outstanding_);
  std::string why;
  // AOBJ-TRN-003: network lanes in error mode PEER (keepalive; a bound can force-close them).
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
  params.address = reinterpret_cast<const ucp_address_t*>(cmd.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxWorker::OnPeerError;
  params.err_handler.arg = nullptr;
  params.user_data = this;
  ucs_status_t st = UcxEndpoint::Create(worker_.get(), params, &state.net_ep);
  if (st != UCS_OK) why = absl::StrCat("network lane: ", UcxStatusString(st));
  // The shared-memory lane in mode NONE (PEER would exclude shared memory in UCX 1.13.1).
  if (shm_worker_ != nullptr) {
    ucp_ep_params_t shm{};
    shm.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    shm.address = params.address;
    shm.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    st = UcxEndpoint::Create(shm_worker_.get(), shm, &state.shm_ep);
    if (st != UCS_OK) {
      absl::StrAppend(&why, why.empty() ? "" : "; ", "shared-memory lane: ", UcxStatusString(st));
    }
  }
  if (!state.net_ep && !state.shm_ep) {
    cmd.Finish(MakeError(ErrorCode::kDataChannelUnavailable,
                         absl::StrCat("cannot reach the client's UCX worker: ", why)));
    return;
  }
  state.peer_address = std::string(cmd.peer_address);
  state.fifo_creator = cmd.fifo_creator;
  cmd.new_endpoint = next_endpoint_++;
  endpoints_.emplace(cmd.new_endpoint, std::move(state));
  endpoint_count_.fetch_add(1);
  cmd.Finish();
}

void UcxWorker::DoConnectOut(Command& cmd) {
  EndpointState state(&rkeys_outstanding_);
  // Messages go on an endpoint in mode NONE, which may use shared memory (PEER would exclude it
  // in UCX 1.13.1). A second endpoint in mode PEER carries nothing: it is there so that a server
  // side that goes away (its process died, the server restarted) fails the pair (a reset
  // connection, keepalive) instead of leaving requests to their deadlines.
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(cmd.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  if (ucs_status_t st = UcxEndpoint::Create(worker_.get(), params, &state.shm_ep); st != UCS_OK) {
    cmd.Finish(
        MakeError(ErrorCode::kDataChannelUnavailable,
                  absl::StrCat("cannot reach the server's UCX worker: ", UcxStatusString(st))));
    return;
  }
  ucp_ep_params_t watch{};
  watch.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                     UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
  watch.address = params.address;
  watch.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  watch.err_handler.cb = &UcxWorker::OnPeerError;
  watch.err_handler.arg = nullptr;
  watch.user_data = this;
  UcxEndpoint::Create(worker_.get(), watch, &state.net_ep);  // without it: no early failure
  state.outgoing = true;
  state.on_failure = std::move(cmd.on_failure);
  state.peer_address = std::string(cmd.peer_address);
  cmd.new_endpoint = next_endpoint_++;
  endpoints_.emplace(cmd.new_endpoint, std::move(state));
  endpoint_count_.fetch_add(1);
  cmd.Finish();
}

void UcxWorker::DoChallenge(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.Finish(MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint"));
    return;
  }
  // One challenge per lane that can carry RMA: an address may name different processes on
  // different transports, and each must prove itself (AOBJ-SES-025).
  uint8_t index = 0;
  for (const UcxEndpoint* ep : {&it->second.net_ep, &it->second.shm_ep}) {
    if (!*ep) continue;
    std::string challenge = RandomBytes(kEndpointChallengeBytes);
    auto payload = std::make_unique<std::string>(std::string(cmd.session_id));
    payload->push_back(static_cast<char>(index));
    payload->append(challenge);
    ucp_request_param_t param{};
    UcxRequest send(ucp_am_send_nbx(ep->get(), kEndpointChallengeAmId, nullptr, 0, payload->data(),
                                    payload->size(), &param));
    const ucs_status_t st = send.status();
    if (st != UCS_OK && st != UCS_INPROGRESS) {
      cmd.Finish(
          MakeError(ErrorCode::kDataChannelUnavailable,
                    absl::StrCat("cannot send the endpoint challenge: ", UcxStatusString(st))));
      return;
    }
    if (st == UCS_INPROGRESS) challenge_sends_.push_back({std::move(send), std::move(payload)});
    cmd.challenges += challenge;
    ++index;
  }
  cmd.Finish();
}

void UcxWorker::DoBind(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.Finish(MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint"));
    return;
  }
  it->second.bound = true;
  cmd.Finish();
}

void UcxWorker::DoProtection(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.Finish(MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint"));
    return;
  }
  std::string info;
  for (const UcxEndpoint* ep : {&it->second.net_ep, &it->second.shm_ep}) {
    if (!*ep) continue;
    char* text = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    ucp_ep_print_info(ep->get(), f);
    fclose(f);
    info.append(text, size);
    free(text);
  }
  // AOBJ-TRN-015: HARDWARE only when every lane is a verbs transport of the allow-list; tcp,
  // shared memory, self, cuda_ipc and anything unknown are EMULATED (shared/FACTS.md).
  cmd.protection = LanesEnforceRemoteKeys(info) ? Protection::kHardware : Protection::kEmulated;
  cmd.Finish();
}

void UcxWorker::DoDisconnect(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it != endpoints_.end() && it->second.jobs > 0) {
    // A batch still runs (its session was closed under it): fail the endpoint, which ends the
    // batch; the state goes when its last batch has (ReleaseFailedRkeys).
    FailEndpoint(it->first, it->second, "the session was closed");
    it->second.disconnected = true;
  } else if (it != endpoints_.end()) {
    // AOBJ-MEM-023: the session is over: its cached rkeys go before the endpoints (no job of a
    // closed session is in flight; the session table waits for them).
    it->second.rkeys.Clear();
    // Nothing is in flight, so a flushing close of the PEER endpoint has nothing to wait for
    // and finishes in the background (closing_), like the NONE endpoint's. Not forced: UCX
    // 1.13.1's TCP transport aborts the process (tcp_ep.c:478, uct_tcp_ep_destroy_progress)
    // when a forced close meets a client that is tearing down its worker at the same moment,
    // which every session that closes and exits at once risks since the endpoint challenge
    // travels on this lane (seen in CI and by conformance mem/7.4/3 under load: 7 of 40 runs
    // forced, 0 of 100 flushed). Failures still force (FailEndpoint): they must end operations.
    CloseEp(it->second.net_ep, /*force=*/false);
    CloseEp(it->second.shm_ep, /*force=*/false);
    DestroyEmulationWorker(it->first, it->second);
    endpoints_.erase(it);
    endpoint_count_.fetch_sub(1);
  }
  cmd.Finish();
}

void UcxWorker::CloseEp(UcxEndpoint& ep, bool force) {
  if (!ep) return;
  UcxRequest close = ep.Close(force);
  if (close.pending()) closing_.push_back({std::move(close), absl::Now() + absl::Seconds(2)});
}

void UcxWorker::FailEndpoint(uint64_t id, EndpointState& state, absl::string_view why) {
  if (!state.failed.ok()) return;
  state.failed = MakeError(ErrorCode::kDataChannelUnavailable,
                           absl::StrCat("the session's data channel failed: ", why,
                                        "; open a new session (AOBJ-DAT-158)"));
  endpoints_failed_.fetch_add(1);
  if (state.on_failure) std::exchange(state.on_failure, nullptr)(state.failed);
  // Force: UCX completes every operation still outstanding on it with UCS_ERR_CANCELED, now.
  CloseEp(state.net_ep, /*force=*/true);
  // Mode NONE cannot be forced (UCX 1.13.1 refuses), and needs not be: its operations are
  // memcpys into mapped memory that completed when they were issued.
  CloseEp(state.shm_ep, /*force=*/false);
  DestroyEmulationWorker(id, state);
}

ucp_ep_h UcxWorker::EmulationEp(EndpointState& state) {
  if (state.emu_ep) return state.emu_ep.get();
  if (shm_context_ == nullptr || state.emu_fd == -2 || !state.shm_ep ||
      emulation_workers_.size() >= kMaxEmulationWorkers) {
    return nullptr;
  }
  // The FIFO this worker will reach must still be the one the session's proof went through
  // (AOBJ-SES-025): the same creator, never a segment made since by someone else.
  pid_t creator = 0;
  if (!CheckPeerFifoSegments(state.peer_address, shm_address_, &creator).ok() || creator == 0 ||
      creator != state.fifo_creator) {
    state.emu_fd = -2;
    return nullptr;
  }
  state.emu_fd = -2;  // until it works: do not try again for this session
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h raw = nullptr;
  if (ucp_worker_create(shm_context_, &wp, &raw) != UCS_OK) return nullptr;
  WorkerPtr w(raw);
  // Its address reaches the peer through the wireup like any other (AOBJ-SEC-020).
  if (peer_rma_refusal_.ok() && !RefusePeerRma(w.get()).ok()) return nullptr;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(state.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  int fd = -1;
  UcxEndpoint ep;
  if (ucp_worker_get_efd(w.get(), &fd) != UCS_OK ||
      UcxEndpoint::Create(w.get(), params, &ep) != UCS_OK) {
    return nullptr;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  emulation_workers_.push_back(w.get());
  state.emu_worker = std::move(w);
  state.emu_ep = std::move(ep);
  state.emu_fd = fd;
  return state.emu_ep.get();
}

void UcxWorker::DestroyEmulationWorker(uint64_t id, EndpointState& state) {
  if (state.emu_worker == nullptr) return;
  // Rkeys come from the worker's pool: they go first (nothing progresses in between, so the
  // operations that named them never run again).
  state.rkeys.DropLane(state.emu_ep.get());
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, state.emu_fd, nullptr);
  // Ends every operation it had in flight: pending ones complete with UCS_ERR_CANCELED, and
  // nothing of the worker runs afterwards, so no operation touches local memory again. Its
  // endpoint goes with it.
  const ucp_ep_h gone = state.emu_ep.get();
  state.emu_ep.Forget();
  std::erase(emulation_workers_, state.emu_worker.get());
  state.emu_worker.reset();
  state.emu_fd = -2;
  for (auto& job : jobs_) {
    if (job->endpoint != id) continue;
    for (Job::Flush& f : job->flushes) {
      if (f.ep == gone) f.request.Forget();  // it died with the worker
    }
    std::erase_if(job->flushes, [gone](const Job::Flush& f) { return f.ep == gone; });
    // Whatever ran on the destroyed worker is over (its callbacks, if the destruction ran them,
    // already counted themselves out). Operations on the PEER endpoint are not: its forced
    // close completes them through their callbacks, which may come on a later progress call,
    // and the job (their user data) must outlive them.
    job->pending -= job->pending_emu;
    job->pending_emu = 0;
    if (job->status.ok()) {
      job->status = MakeError(ErrorCode::kTransferFailed, "the session's data channel failed");
    }
  }
}

void UcxWorker::ReleaseFailedRkeys() {
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    EndpointState& state = it->second;
    if (state.failed.ok() || state.jobs != 0) {
      ++it;
      continue;
    }
    state.rkeys.Clear();
    if (state.disconnected) {
      endpoints_.erase(it++);
      endpoint_count_.fetch_sub(1);
    } else {
      ++it;
    }
  }
}

}  // namespace aobj
