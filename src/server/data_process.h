// One aobj-data-worker process of the confined data channel (docs/security.md, "Confined data
// channel"), and the stream to it: spawning it with nothing of the server's but its stream,
// requests and their replies (transport/confined_ipc.h's frames), the shared transfer buffers
// mapped in both, and ending it for certain.
//
// A process is peer-facing (its UCX worker talks to clients) and may be taken over by one: what it
// sends is peer input. Replies are parsed with bounds, error codes outside the few a data channel
// may report become INTERNAL, and a malformed frame ends the process.
//
// Threading: thread-safe. One reader thread per process delivers replies; callers block in
// Call()/Wait().
#ifndef AOBJ_SERVER_DATA_PROCESS_H_
#define AOBJ_SERVER_DATA_PROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/data_channel.h"
#include "transport/confined_ipc.h"

namespace aobj {

// Requests to a process other than batches (connect, challenge, bind, counters) are answered
// within this.
inline constexpr absl::Duration kDataProcessRequestBound = absl::Seconds(10);

// A shared-memory buffer: mapped here and in the process.
struct ProcessBuffer {
  uint64_t id = 0;
  uint8_t* base = nullptr;
  uint64_t size = 0;
};

// One aobj-data-worker process and the stream to it.
class WorkerProcess {
 public:
  static absl::StatusOr<std::shared_ptr<WorkerProcess>> Spawn(
      const std::string& path, const DataChannelOptions& transport,
      const std::function<void(const std::string&)>& log);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends a request and waits for its reply. Past `deadline` (when `kill_late`) the process is
  // killed, and this returns only after it is gone. `abandoned` (if set) is polled every 20 ms;
  // once true the process is told (kAbandon) once.
  absl::StatusOr<std::string> Call(confined::Op op, const confined::FrameWriter& fields,
                                   absl::Time deadline, bool kill_late, int pass_fd = -1,
                                   const std::function<bool()>& abandoned = nullptr);
  void Post(confined::Op op, const confined::FrameWriter& fields);
  // Call() in two halves, so that several requests can be in flight from one thread.
  struct Pending {
    confined::Op op;
    uint64_t id = 0;
    absl::Notification done;
    absl::Status status;
    std::string results;
  };
  absl::StatusOr<std::shared_ptr<Pending>> Send(confined::Op op,
                                                const confined::FrameWriter& fields,
                                                int pass_fd = -1);
  absl::StatusOr<std::string> Wait(const std::shared_ptr<Pending>& p, absl::Time deadline,
                                   bool kill_late,
                                   const std::function<bool()>& abandoned = nullptr);
  bool alive() {
    absl::MutexLock l(&mu_);
    return !ended_;
  }
  // Why it ended (while alive: empty).
  std::string end_reason() {
    absl::MutexLock l(&mu_);
    return end_reason_;
  }
  pid_t pid() const { return pid_; }
  const std::string& refusal() const { return refusal_; }
  // The worker address its clients send fast requests to ("": it offers none).
  const std::string& fast_address() const { return fast_address_; }
  // Where the fast requests it forwards go (null: dropped); must outlive the process.
  void set_fast_sink(const DataChannel::FastRequestSink* sink) { fast_sink_.store(sink); }

  // A buffer of at least `bytes`, mapped in the process; back with GiveBuffer.
  absl::StatusOr<ProcessBuffer> TakeBuffer(uint64_t bytes);
  void GiveBuffer(ProcessBuffer buffer);
  // Unmaps free buffers (here and in the process) until at most `keep_bytes` of them remain.
  void TrimBuffers(uint64_t keep_bytes);

  // Endpoints of sessions on it (the channel's lock guards it).
  size_t endpoints = 0;
  // The access key it serves ("" while it is the spare).
  void set_principal(const std::string& p) {
    absl::MutexLock l(&mu_);
    principal_ = p;
  }
  std::string principal() {
    absl::MutexLock l(&mu_);
    return principal_;
  }
  absl::Time idle_since = absl::InfinitePast();  // when `endpoints` last fell to 0

 private:
  WorkerProcess(pid_t pid, int fd, std::string refusal, std::string fast_address,
                std::function<void(const std::string&)> log);
  void ReadReplies();
  // Ends the process for certain: SIGKILL by pidfd (never a recycled pid), and the stream shut
  // so that the reader sees its end even if something else still holds the other side.
  void Kill();

  const pid_t pid_;
  const int fd_;
  const std::string refusal_;
  const std::string fast_address_;
  std::atomic<const DataChannel::FastRequestSink*> fast_sink_{nullptr};
  const std::function<void(const std::string&)> log_;
  std::thread reader_;
  absl::Notification gone_;           // reaped
  std::atomic<bool> closing_{false};  // the destructor ended it
  std::atomic<bool> reaped_{false};
  int pidfd_ = -1;  // pidfd_open(pid_), where the kernel has it
  absl::Mutex send_mu_;
  absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::string end_reason_ ABSL_GUARDED_BY(mu_);
  std::string principal_ ABSL_GUARDED_BY(mu_);
  uint64_t next_buffer_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<ProcessBuffer> free_ ABSL_GUARDED_BY(mu_);
  std::vector<ProcessBuffer> all_ ABSL_GUARDED_BY(mu_);  // every mapping, unmapped at destruction
};

}  // namespace aobj

#endif  // AOBJ_SERVER_DATA_PROCESS_H_
