// A UCP worker (two on the server) and the one progress thread that owns it.
//
// Spec: "Transport binding 1: UCX", "Data movement", "Data-channel failure model" (13.7). Every UCX
// call on the workers, their endpoints and their rkeys happens under one lock, which the progress
// thread holds except while it sleeps; other threads hand it commands and wait for their results,
// except that a thread that finds it asleep sends an active message itself, and a client's
// caller may progress the worker itself while it waits for a fast-path reply (DriveTicket). The
// thread spins on ucp_worker_progress only while operations make progress and otherwise sleeps on
// the workers' event fds (ucp_worker_arm + epoll, spec 13.5), with a short timer while operations
// are outstanding, so neither an idle server nor one waiting on a stalled peer burns a core.
//
// Server side: Connect() creates a session's endpoints to a client's worker address: one in error
// mode PEER on the main worker (network lanes, keepalive, force-closable) and, where the server
// has a shared-memory lane, one in mode NONE on the System V-only worker, used only for windows
// UCX maps into this process, and, on first need, one in mode NONE on a System V worker of the
// session's own for windows UCX emulates over shared-memory active messages (AOBJ-TRN-003,
// AOBJ-TRN-010). Execute() runs one request's RMA batch (validate +
// unpack rkeys, issue puts or gets, wait, flush) and reports one status. Every batch ends by its
// deadline: past it the session's PEER endpoint is force-closed and its own worker destroyed,
// which ends every operation still outstanding, and the endpoint is failed for good
// (AOBJ-DAT-157, AOBJ-DAT-158). Client
// side: the worker only needs progress (emulated RMA over active messages is served by the
// target's progress, AOBJ-TRN-005), which the thread provides.
//
// Threading: all public methods are thread-safe. Destruction stops the thread after failing
// pending commands; the UcxContexts must outlive the worker.
//
// Where each part lives: ucx_worker.cc (creation, commands, the progress loop, shutdown),
// ucx_worker_endpoints.cc (connect, bind, fail, close, the emulation workers),
// ucx_worker_rma.cc (Execute's batches), ucx_worker_messages.cc (active messages and
// challenges). UCX's handles are owned by the types of ucx_handles.h, rkeys by RkeyCache.
#ifndef AOBJ_TRANSPORT_UCX_WORKER_H_
#define AOBJ_TRANSPORT_UCX_WORKER_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/challenge_inbox.h"
#include "transport/rkey_cache.h"
#include "transport/rma_batch.h"
#include "transport/ucx_context.h"
#include "transport/ucx_handles.h"

namespace aobj {

// Whether a connection's RMA lanes enforce rkeys in hardware (AOBJ-SES-013).
enum class Protection { kHardware, kEmulated };

class UcxWorker {
 public:
  // `shm_lane` (server only, may be null): the context of the shared-memory lane
  // (UcxContext::CreateSharedMemoryLane).
  static absl::StatusOr<std::unique_ptr<UcxWorker>> Create(const UcxContext& context,
                                                           std::string name,
                                                           const UcxContext* shm_lane = nullptr);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  // This worker's address (ucp_worker_get_address), for OpenSession.
  const std::string& address() const { return address_; }
  // The shared-memory lane's worker address (empty without one).
  const std::string& shm_address() const { return shm_address_; }
  // OK when this worker (and its shared-memory and emulation workers) drop put, get and atomic
  // requests that a peer initiates (AOBJ-SEC-020, transport/peer_rma_guard.h); why not otherwise,
  // always so for a client context's worker.
  const absl::Status& peer_rma_refusal() const { return peer_rma_refusal_; }

  // Creates an endpoint to a peer worker address (untrusted input: bounded by the caller).
  // Returns an id for Execute/Disconnect.
  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address);
  // Endpoint binding (spec 5.6). Server side: sends one fresh 32-octet challenge by active
  // message on each endpoint lane of `endpoint` (AOBJ-SES-025), tagged with `session_id` (16
  // octets), and returns the challenges, concatenated in index order. Until Bind() every batch on
  // the endpoint fails ENDPOINT_UNCONFIRMED before any RMA (AOBJ-SES-027).
  absl::StatusOr<std::string> SendChallenges(uint64_t endpoint, absl::string_view session_id);
  // The caller verified the proof over the challenges (AOBJ-SES-026): RMA is allowed from now on.
  absl::Status Bind(uint64_t endpoint);
  // Client side: waits up to `timeout` until `count` challenges for `session_id` have arrived at
  // this worker and returns them concatenated in index order (and forgets them).
  // DATA_CHANNEL_UNAVAILABLE when they do not all arrive in time.
  absl::StatusOr<std::string> AwaitChallenges(absl::string_view session_id, size_t count,
                                              absl::Duration timeout);

  // Active messages (the fast request path, spec section 8.9). `on_message` receives every
  // active message of ID `am_id` that reaches this worker or its shared-memory lane with its
  // data delivered eagerly (others are dropped), with the octets borrowed for the call. It runs
  // on the progress thread and must not block. Set once per ID, before peers may send.
  using MessageHandler = std::function<void(absl::string_view message)>;
  absl::Status SetMessageHandler(uint16_t am_id, MessageHandler on_message);
  // Server side: starts a worker of its own (from this worker's main context, progressed by the
  // same thread) that receives active messages of ID `am_id` from peers that connect to it with
  // ConnectForMessages, passes them to `on_message` as SetMessageHandler does, and returns its
  // address. A worker of its own because the server creates no endpoint there: a peer's endpoint
  // to a worker that already holds one to that peer in another error-handling mode is refused by
  // UCX ("asymmetric endpoint configuration"). Once.
  absl::StatusOr<std::string> StartMessageWorker(uint16_t am_id, MessageHandler on_message);
  // Client side: an endpoint to a server worker for sending active messages (error mode NONE, so
  // any lane, shared memory included), watched by a second one in mode PEER that carries nothing,
  // so that a server side that goes away (its process died, the server restarted) fails the pair
  // instead of swallowing what is sent; `on_failure` (may be null) is then called once, on the
  // progress thread (it must not block or call back into this worker). The address is checked
  // like Connect's.
  using FailureHandler = std::function<void(const absl::Status& why)>;
  absl::StatusOr<uint64_t> ConnectForMessages(absl::string_view peer_address,
                                              FailureHandler on_failure = nullptr);
  // Sends one active message (eager) on `endpoint`, on its shared-memory lane when it has one,
  // and returns without waiting for it to leave: from the calling thread when the progress
  // thread is asleep and has nothing queued (no wake-up of it), otherwise queued for it.
  // DATA_CHANNEL_UNAVAILABLE when the worker stops; a message for an endpoint that is unknown,
  // failed or (server side) not yet bound by the proof of AOBJ-SES-026 is dropped
  // (AOBJ-DAT-168) and counted in messages_dropped().
  absl::Status SendMessage(uint64_t endpoint, uint16_t am_id, std::string payload);
  uint64_t messages_dropped() const { return messages_dropped_.load(); }

  // Client side: the calling thread progresses the worker itself while it waits for something
  // a message handler will do (a fast-path reply), instead of the progress thread receiving
  // the message and then waking the caller: one wake-up instead of two. A ticket is taken
  // while the caller still knows the worker alive (under the lock that guards its owner's
  // pointer); the worker's destruction waits for every ticket, and ends their Drive calls.
  class DriveTicket {
   public:
    DriveTicket() = default;
    DriveTicket(DriveTicket&& o) noexcept : worker_(std::exchange(o.worker_, nullptr)) {}
    DriveTicket& operator=(DriveTicket&& o) noexcept {
      if (this != &o) {
        Release();
        worker_ = std::exchange(o.worker_, nullptr);
      }
      return *this;
    }
    ~DriveTicket();
    explicit operator bool() const { return worker_ != nullptr; }
    // Progresses the worker until `done()` holds (true) or `until` passes, the worker stops,
    // another thread leads already, the progress thread has work or a peer failed (false, and
    // the ticket is spent: the caller waits as it would have). Sleeps on the worker's event fd,
    // never spins. An empty ticket returns done().
    bool Drive(const std::function<bool()>& done, absl::Time until);

   private:
    friend class UcxWorker;
    explicit DriveTicket(UcxWorker* w) : worker_(w) {}
    void Release();
    UcxWorker* worker_ = nullptr;
  };
  // An empty ticket where the worker cannot be driven (a server's, with more than one worker
  // to progress) or is stopping.
  DriveTicket EnterDrive();

  // The protection of an endpoint's lanes, read from UCX's own description of the endpoint.
  absl::StatusOr<Protection> GetProtection(uint64_t endpoint);
  // Closes an endpoint without waiting on the peer: its PEER endpoint by force (nothing is in
  // flight, the session table waits for that), the others in the background; a batch still
  // running on it fails it instead (AOBJ-DAT-157). Afterwards no RMA is issued on it again.
  void Disconnect(uint64_t endpoint);

  // Runs `batch` on `endpoint` and waits for it. Every op is checked against its window before
  // anything is issued (AOBJ-MEM-009); shared-memory windows must be the peer's (AOBJ-MEM-012).
  // For writes the endpoint is flushed before returning OK (AOBJ-DAT-001). Returns only when UCX
  // no longer touches the local memory of the batch, and no later than about `timeout` after the
  // call: when the bound passes, or `abandoned` (polled from the calling thread) turns true and
  // kAbandonGrace more passes, or an operation fails after RMA was issued, the endpoint is failed
  // (force-closed) and the batch fails TRANSFER_FAILED (AOBJ-DAT-157). Errors: INVALID_RKEY,
  // DESCRIPTOR_OUT_OF_BOUNDS, TRANSFER_FAILED, DATA_CHANNEL_UNAVAILABLE (the endpoint is failed or
  // gone: every later batch on it gets this, AOBJ-DAT-158).
  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch,
                       absl::Duration timeout = absl::Seconds(60),
                       const std::function<bool()>& abandoned = nullptr);
  // How long a batch whose call was abandoned (its client cancelled or went away) may still run
  // before its endpoint is failed.
  static constexpr absl::Duration kAbandonGrace = absl::Seconds(1);

  // Shutting down (AOBJ-OPS-009): every batch running now or later ends within `grace` (failing
  // its endpoint if it must), so that the server can stop within a bound whatever its peers do.
  void BeginShutdown(absl::Duration grace);

  // Endpoints failed so far (a bound passed, a peer failed, an operation failed after issue).
  uint64_t endpoints_failed() const { return endpoints_failed_.load(); }

  // While the counter is above zero the progress thread polls instead of sleeping on its event
  // fd. A passive target (the client) raises it around a request whose windows UCX reaches by
  // emulation over active messages (memory UCX did not allocate: every fragment needs this
  // side's progress), and only then, so an idle worker still costs no CPU (spec 13.5,
  // implementation note). Shared, so that a holder may lower it after the worker is gone; call
  // Wake() after raising it.
  std::shared_ptr<std::atomic<int>> spin_counter() const { return spin_; }
  void Wake();

  // Counters for observability and leak tests.
  size_t endpoint_count();
  uint64_t rkeys_outstanding();  // unpacked and not yet destroyed (cached ones included)

  // Unpacked rkeys are kept per endpoint (RkeyCache, at most RkeyCache::kEntries each).
  // Sessions with a worker of their own for emulated windows (about 4 MB and 7 ms each here).
  static constexpr size_t kMaxEmulationWorkers = 32;

 private:
  struct Command;
  struct Job;
  struct EndpointState {
    explicit EndpointState(std::atomic<uint64_t>* rkeys_outstanding) : rkeys(rkeys_outstanding) {}
    UcxEndpoint net_ep;  // mode PEER, main worker: every window UCX does not map here
    UcxEndpoint shm_ep;  // mode NONE, shared-memory worker: only windows mapped here
    // Mode NONE on a worker of this session's own (System V), for windows UCX reaches by
    // active-message emulation (caller memory): shared-memory speed, and still ended for
    // certain, because destroying a worker ends everything it had in flight. Made on first
    // use, at most kMaxEmulationWorkers at once; beyond them such windows take net_ep.
    WorkerPtr emu_worker;
    UcxEndpoint emu_ep;  // declared after emu_worker: released before it
    int emu_fd = -1;
    std::string peer_address;   // for emu_ep
    // The process that created the System V FIFO the address names (0: none); the segments a
    // window names must be its own (AOBJ-MEM-012), and emu_ep must reach the same FIFO.
    pid_t fifo_creator = 0;
    bool bound = false;         // the proof of AOBJ-SES-026 was accepted (Bind)
    bool outgoing = false;      // ConnectForMessages: this side's endpoint to a server
    FailureHandler on_failure;  // ConnectForMessages's, called by FailEndpoint
    absl::Status failed;        // OK while usable; why it failed (AOBJ-DAT-158)
    size_t jobs = 0;            // batches running on it
    bool disconnected = false;  // Disconnect() came while batches ran; erased after them
    RkeyCache rkeys;
  };
  UcxWorker(WorkerPtr worker, WorkerPtr shm_worker, ucp_context_h shm_context, int epoll_fd,
            int wake_fd, std::string name, std::string address, std::string shm_address);
  // Fails `state` for good: its endpoints are closed (the PEER one by force, which completes its
  // outstanding operations with UCS_ERR_CANCELED) and later batches get DATA_CHANNEL_UNAVAILABLE.
  void FailEndpoint(uint64_t id, EndpointState& state, absl::string_view why);
  // Starts closing `ep` (see UcxEndpoint::Close) and keeps its request until it completes.
  void CloseEp(UcxEndpoint& ep, bool force);
  // The session's emulation endpoint, made on first use; null when over the cap or it fails.
  ucp_ep_h EmulationEp(EndpointState& state);
  // Destroys the session's emulation worker (its rkeys first); jobs lose what ran on it.
  void DestroyEmulationWorker(uint64_t id, EndpointState& state);
  // Rkeys of failed endpoints whose batches have all ended.
  void ReleaseFailedRkeys();
  static void OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void DoConnect(Command& cmd);
  void DoProtection(Command& cmd);
  void DoDisconnect(Command& cmd);
  void DoChallenge(Command& cmd);
  void DoBind(Command& cmd);
  // Registers OnChallenge on the main worker (AOBJ-SES-025).
  absl::Status SetChallengeHandler();
  // Active-message handler of endpoint challenges (client side; runs inside progress).
  static ucs_status_t OnChallenge(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param);
  // Active-message handler of SetMessageHandler's IDs (runs inside progress).
  static ucs_status_t OnMessage(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  void DoSetHandler(Command& cmd);
  void DoConnectOut(Command& cmd);
  void DoMessageWorker(Command& cmd);
  void DoSend(Command& cmd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(progress_mu_);
  // Sleeps on the event fds, at most `timeout_ms` (-1: until an event), with progress_mu_
  // released while it blocks.
  void Sleep(int timeout_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(progress_mu_);
  // DriveTicket::Drive's work.
  bool DriveUntil(const std::function<bool()>& done, absl::Time until);

  // Queues `cmd` for the progress thread and waits for it, polling `abandoned` (if set) every
  // 20 ms and lowering the command's deadline to kAbandonGrace from when it turns true.
  void Post(std::shared_ptr<Command> cmd, const std::function<bool()>& abandoned = nullptr);
  void Loop();
  void StartJob(const std::shared_ptr<Command>& cmd);
  // Checks a batch and unpacks its keys (AOBJ-MEM-009, AOBJ-MEM-004); OK when it may issue.
  absl::Status PrepareJob(Job& job, EndpointState& state);
  // Issues `job`'s operations; their completions come through OnRmaDone.
  void IssueJob(Job& job, EndpointState& state);
  static void OnRmaDone(void* request, ucs_status_t status, void* user_data);
  // Frees close and send requests that completed; true when a close is still worth polling for
  // or a message is still being sent.
  bool ReapRequests(absl::Time now);
  // The last steps of the progress thread: closes, flushes and destroys the workers.
  void TearDown();
  void AdvanceJobs();
  void FinishJob(Job& job, absl::Status status);

  WorkerPtr worker_;
  WorkerPtr shm_worker_;                 // null without a shared-memory lane
  WorkerPtr msg_worker_;                 // StartMessageWorker's; progress thread only
  const UcxContext* context_ = nullptr;  // the main worker's (outlives this)
  absl::Status peer_rma_refusal_;
  ucp_context_h shm_context_;  // the shared-memory lane's context (emulation workers)
  std::vector<ucp_worker_h> emulation_workers_;  // every session's (owned there), for progress
  int epoll_fd_;
  int wake_fd_;
  std::string name_;
  std::string address_;
  std::string shm_address_;
  std::atomic<int64_t> drain_deadline_ns_{INT64_MAX};  // BeginShutdown (absl::ToUnixNanos)

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Command>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t drive_tickets_ ABSL_GUARDED_BY(mu_) = 0;

  // The right to call UCX on these workers (they are UCS_THREAD_MODE_SERIALIZED): the progress
  // thread holds it except while it sleeps; another thread takes it only when free (TryLock) for
  // a direct send or to drive. The progress-thread state below is touched only under it.
  absl::Mutex progress_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // A thread drives the worker (DriveUntil): the progress thread neither progresses nor arms
  // worker_ then, and its fd is out of the progress thread's epoll set.
  bool leader_ ABSL_GUARDED_BY(progress_mu_) = false;
  bool led_since_sleep_ ABSL_GUARDED_BY(progress_mu_) = false;  // a driver led since Sleep began
  bool drivable_ = false;  // a client's: worker_ alone, no shared-memory or message worker
  int worker_fd_ = -1;     // worker_'s event fd
  int stop_fd_ = -1;       // written once by the destructor; drivers watch it
  std::atomic<bool> stop_requested_{false};

  // Progress-thread state (touched only by thread_).
  absl::flat_hash_map<uint64_t, EndpointState> endpoints_;
  uint64_t next_endpoint_ = 1;
  std::vector<std::unique_ptr<Job>> jobs_;
  // ucp_ep_close_nbx requests in progress. A close that has not finished by `poll_until` (a NONE
  // endpoint to a peer that never answers) is still checked each round, but no longer shortens
  // the sleep: the endpoint is out of our tables and nothing uses it.
  struct Closing {
    UcxRequest request;
    absl::Time poll_until;
  };
  std::vector<Closing> closing_;
  // Peer failures UCX reported during the last progress call (OnPeerError).
  struct PeerError {
    ucp_ep_h ep;
    ucs_status_t status;
  };
  std::vector<PeerError> peer_errors_;
  // Challenge sends still in progress, with the payload UCX may still read.
  struct ChallengeSend {
    UcxRequest request;
    std::unique_ptr<std::string> payload;
  };
  std::vector<ChallengeSend> challenge_sends_;  // and SendMessage's
  // SetMessageHandler's handlers by active-message ID (progress thread only), each UCX's
  // callback argument.
  struct MessageSlot {
    MessageHandler on_message;
  };
  absl::flat_hash_map<uint16_t, std::unique_ptr<MessageSlot>> message_handlers_;
  std::unique_ptr<MessageSlot> msg_worker_slot_;  // msg_worker_'s handler
  // Client side: challenges received (OnChallenge), until AwaitChallenges collects them.
  ChallengeInbox inbox_;
  int spurious_wakeups_ = 0;         // Sleep(): UCX fd wake-ups in a row that brought no progress
  bool awaiting_progress_ = false;   // the last Sleep() was ended by a UCX fd

  std::atomic<size_t> endpoint_count_{0};
  const std::shared_ptr<std::atomic<int>> spin_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<uint64_t> rkeys_outstanding_{0};
  std::atomic<uint64_t> endpoints_failed_{0};
  std::atomic<uint64_t> messages_dropped_{0};
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_WORKER_H_
