// A UCP worker and the one progress thread that owns it.
//
// Spec: "Transport binding (UCX)", "Data movement". Every UCX call on the worker, its endpoints
// and its rkeys happens on the progress thread; other threads hand it commands and wait for their
// results. The thread spins on ucp_worker_progress only while transfers or closes are pending and
// otherwise sleeps on the worker's event fd (ucp_worker_arm + epoll, AOBJ-TRN-004), so an idle
// server or client uses no CPU.
//
// Server side: Connect() creates an endpoint to a client's worker address; Execute() runs one
// request's RMA batch (validate + unpack rkeys, issue puts or gets, wait, flush, release rkeys)
// and reports one status. Client side: the worker only needs progress (emulated RMA over active
// messages is served by the target's progress, AOBJ-TRN-005), which the thread provides.
//
// Threading: all public methods are thread-safe. Destruction stops the thread after failing
// pending commands; the UcxContext must outlive the worker.
#ifndef AOBJ_TRANSPORT_UCX_WORKER_H_
#define AOBJ_TRANSPORT_UCX_WORKER_H_

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/ucx_context.h"

namespace aobj {

// A window of peer memory granted by one descriptor.
struct RemoteWindow {
  uint64_t address = 0;
  uint64_t length = 0;
  absl::string_view rkey;  // packed; borrowed, must outlive Execute()
};

// One RMA operation: `length` bytes between local memory and window `window` at `remote`.
struct RmaOp {
  size_t window = 0;
  uint64_t remote = 0;
  uint8_t* local = nullptr;
  size_t length = 0;
};

enum class RmaDirection { kWrite /* ucp_put_nbx: GET data to the client */,
                          kRead /* ucp_get_nbx: PUT data from the client */ };

struct RmaBatch {
  RmaDirection direction = RmaDirection::kWrite;
  std::vector<RemoteWindow> windows;
  std::vector<RmaOp> ops;
  size_t max_rkey_bytes = 1024;
};

// Whether a connection's RMA lanes enforce rkeys in hardware (AOBJ-SES-013).
enum class Protection { kHardware, kEmulated };

class UcxWorker {
 public:
  static absl::StatusOr<std::unique_ptr<UcxWorker>> Create(const UcxContext& context,
                                                           std::string name);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  // This worker's address (ucp_worker_get_address), for OpenSession.
  const std::string& address() const { return address_; }

  // Creates an endpoint to a peer worker address (untrusted input: bounded by the caller).
  // Returns an id for Execute/Disconnect.
  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address);
  // The protection of an endpoint's lanes, read from UCX's own description of the endpoint.
  absl::StatusOr<Protection> GetProtection(uint64_t endpoint);
  // Closes an endpoint. Waits at most `timeout` for UCX to flush it; afterwards no RMA is ever
  // issued on it again.
  void Disconnect(uint64_t endpoint, absl::Duration timeout = absl::Seconds(2));

  // Runs `batch` on `endpoint` and waits for it. Every op is checked against its window before
  // anything is issued (AOBJ-MEM-009); shared-memory windows must be the peer's (AOBJ-MEM-012).
  // For writes the endpoint is flushed before returning OK (AOBJ-DAT-001). Errors:
  // INVALID_RKEY, DESCRIPTOR_OUT_OF_BOUNDS, TRANSFER_FAILED, DATA_CHANNEL_UNAVAILABLE.
  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch,
                       absl::Duration timeout = absl::Seconds(60));

  // While the counter is above zero the progress thread polls instead of sleeping on its event
  // fd. A passive target (the client) raises it around a request whose windows UCX reaches by
  // emulation over active messages (memory UCX did not allocate: every fragment needs this
  // side's progress), and only then, so an idle worker still costs no CPU (AOBJ-TRN-004).
  // Shared, so that a holder may lower it after the worker is gone; call Wake() after raising it.
  std::shared_ptr<std::atomic<int>> spin_counter() const { return spin_; }
  void Wake();

  // Counters for observability and leak tests.
  size_t endpoint_count();
  uint64_t rkeys_outstanding();  // unpacked and not yet destroyed (cached ones included)

  // Unpacked rkeys kept per endpoint. Unpacking attaches the client's segment and checking a
  // shared-memory window reads /proc/self/maps; both cost more than a 64 MiB copy's worth of
  // page faults, so a client that reuses its buffers (the normal case) pays them once.
  // 64: a client with one buffer per thread and 16 requests in flight (the default
  // max_in_flight) must not evict its own keys; with 8 entries every request of such a client
  // missed and paid the attach and the maps read (docs/benchmarks.md section 5).
  static constexpr size_t kRkeyCacheEntries = 64;
  // How often a cache hit also looks for other entries whose segments the client released.
  static constexpr absl::Duration kRkeySweepInterval = absl::Milliseconds(100);

 private:
  struct Command;
  struct Job;
  // One unpacked rkey of an endpoint, reused while the client keeps the same registration.
  struct CachedRkey {
    std::string blob;                 // the packed rkey exactly as the client sent it
    ucp_rkey_h rkey = nullptr;
    std::vector<uint32_t> shmids;     // System V segments the blob names
    bool maps_local = false;          // UCX maps the window into this process
    uintptr_t lo = 0, hi = 0;         // the client's mapping that holds it (when maps_local)
    uint32_t in_use = 0;              // jobs using it now
    uint64_t last_use = 0;
  };
  struct EndpointState {
    ucp_ep_h ep = nullptr;
    std::vector<std::unique_ptr<CachedRkey>> rkeys;
    absl::Time last_sweep = absl::InfinitePast();
  };
  // Finds or unpacks the rkey of `w` for `state` (AOBJ-MEM-004, AOBJ-MEM-012), and checks that
  // the window lies in the client's mapping.
  absl::StatusOr<CachedRkey*> AcquireRkey(EndpointState& state, const RemoteWindow& w,
                                          size_t max_rkey_bytes);
  void DestroyRkey(std::unique_ptr<CachedRkey>& entry);
  UcxWorker(ucp_worker_h worker, int epoll_fd, int wake_fd, int worker_fd, std::string name,
            std::string address);

  // Queues `cmd` for the progress thread and waits for it.
  void Post(std::shared_ptr<Command> cmd);
  void Loop();
  void StartJob(const std::shared_ptr<Command>& cmd);
  void AdvanceJobs();
  void FinishJob(Job& job, absl::Status status);

  ucp_worker_h worker_;
  int epoll_fd_;
  int wake_fd_;
  int worker_fd_;
  std::string name_;
  std::string address_;

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Command>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Progress-thread state (touched only by thread_).
  absl::flat_hash_map<uint64_t, EndpointState> endpoints_;
  uint64_t use_clock_ = 0;
  uint64_t next_endpoint_ = 1;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<void*> closing_;  // ucp_ep_close_nbx requests in progress

  std::atomic<size_t> endpoint_count_{0};
  const std::shared_ptr<std::atomic<int>> spin_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<uint64_t> rkeys_outstanding_{0};
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_WORKER_H_
