#include "server/confined_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/types/optional.h"
#include "aobj/status.h"
#include "server/handler_util.h"
#include "transport/confined_ipc.h"
#include "wire/fast_frame.h"
#include "wire/printable.h"
#include "wire/protocol.h"

extern char** environ;

namespace aobj {
namespace {

using confined::FrameReader;
using confined::FrameWriter;
using confined::Op;

// A reply frame from a process is at most this large (a challenge set or counters).
constexpr size_t kMaxReplyFrame = kMaxFastFrame + 1024;  // a forwarded fast request is the largest
// How long a process may take to start (make its UCX contexts) and say hello.
constexpr absl::Duration kStartBound = absl::Seconds(10);
// Beyond its own bound a batch's process gets this long before it is killed.
constexpr absl::Duration kProcessSlack = absl::Seconds(5);
// Requests other than batches (connect, challenge, bind, counters).
constexpr absl::Duration kRequestBound = absl::Seconds(10);
// Buffers smaller than this are not made; free buffers kept per process.
constexpr uint64_t kMinBuffer = 1 << 20;
// Free buffers a process keeps for reuse, in octets; none once its sessions all closed.
constexpr uint64_t kFreeBytesKept = 64 << 20;
// Processes kept without any session (for a principal that comes back); older ones end.
constexpr size_t kIdleProcessesKept = 4;

// The codes a data-channel process may report; anything else it sends is INTERNAL (it may have
// been taken over, and must not steer what the client is told).
ErrorCode CodeFromProcess(uint32_t raw) {
  switch (static_cast<ErrorCode>(raw)) {
    case ErrorCode::kOk:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kSlowDown:
    case ErrorCode::kInvalidDescriptor:
    case ErrorCode::kDescriptorOutOfBounds:
    case ErrorCode::kDescriptorTooSmall:
    case ErrorCode::kInvalidRkey:
    case ErrorCode::kUnsupportedMemoryType:
    case ErrorCode::kTransferFailed:
    case ErrorCode::kDataChannelUnavailable:
    case ErrorCode::kEndpointUnconfirmed:
      return static_cast<ErrorCode>(raw);
    default:
      return ErrorCode::kInternal;
  }
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return absl::StrCat("killed by signal ", sig, name ? absl::StrCat(" (SIG", name, ")") : "");
  }
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  return "ended";
}

// A shared-memory buffer: mapped here and in the process.
struct Buffer {
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
  absl::StatusOr<std::string> Call(Op op, const FrameWriter& fields, absl::Time deadline,
                                   bool kill_late, int pass_fd = -1,
                                   const std::function<bool()>& abandoned = nullptr);
  void Post(Op op, const FrameWriter& fields);
  // Call() in two halves, so that several requests can be in flight from one thread.
  struct Pending {
    Op op;
    uint64_t id = 0;
    absl::Notification done;
    absl::Status status;
    std::string results;
  };
  absl::StatusOr<std::shared_ptr<Pending>> Send(Op op, const FrameWriter& fields, int pass_fd = -1);
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
  absl::StatusOr<Buffer> TakeBuffer(uint64_t bytes);
  void GiveBuffer(Buffer buffer);
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
                std::function<void(const std::string&)> log)
      : pid_(pid),
        fd_(fd),
        refusal_(std::move(refusal)),
        fast_address_(std::move(fast_address)),
        log_(std::move(log)) {
    pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  }
  void ReadReplies();
  // Ends the process for certain: SIGKILL by pidfd (never a recycled pid), and the stream shut
  // so that the reader sees its end even if something else still holds the other side.
  void Kill() {
    if (pidfd_ >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    } else if (!reaped_.load()) {
      kill(pid_, SIGKILL);
    }
    shutdown(fd_, SHUT_RDWR);
  }

  const pid_t pid_;
  const int fd_;
  const std::string refusal_;
  const std::string fast_address_;
  std::atomic<const DataChannel::FastRequestSink*> fast_sink_{nullptr};
  const std::function<void(const std::string&)> log_;
  std::thread reader_;
  absl::Notification gone_;  // reaped
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
  std::vector<Buffer> free_ ABSL_GUARDED_BY(mu_);
  std::vector<Buffer> all_ ABSL_GUARDED_BY(mu_);  // every mapping, unmapped at destruction
};

absl::StatusOr<std::shared_ptr<WorkerProcess>> WorkerProcess::Spawn(
    const std::string& path, const DataChannelOptions& transport,
    const std::function<void(const std::string&)>& log) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
    // A process that stops reading cannot hold a server thread in sendmsg: past this a send
    // fails and the process is ended.
    timeval tv{5, 0};
    setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  } else {
    return MakeError(
        ErrorCode::kSlowDown,
        absl::StrCat("cannot start a data-channel process: socketpair: ", strerror(errno)));
  }
  std::vector<std::string> args = {path, "--fd=3",
                                   absl::StrCat("--net-devices=", transport.net_devices),
                                   absl::StrCat("--transports=", transport.transports),
                                   absl::StrCat("--keepalive-ms=", transport.keepalive_ms)};
  // Only what UCX, the sanitizers and the loader read: nothing of the server's own secrets.
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const absl::string_view v(*e);
    if (absl::StartsWith(v, "UCX_") || absl::StartsWith(v, "ASAN_") ||
        absl::StartsWith(v, "UBSAN_") || absl::StartsWith(v, "LSAN_") ||
        absl::StartsWith(v, "PATH=") || absl::StartsWith(v, "LD_LIBRARY_PATH=")) {
      env.emplace_back(v);
    }
  }
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // posix_spawn (vfork-like): no copy of a large server's page tables. The process gets its
  // stream as descriptor 3 and nothing else of the server's (closefrom 4), default signal
  // dispositions and an empty signal mask.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&fa, 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    close(sv[0]);
    close(sv[1]);
    return MakeError(
        ErrorCode::kDataChannelUnavailable,
        absl::StrCat("cannot start the data-channel process ", path, ": ", strerror(spawned)));
  }
  close(sv[1]);
  const int fd = sv[0];
  auto fail = [&](const std::string& why) {
    kill(pid, SIGKILL);
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("cannot start the data-channel process ", path, ": ", why));
  };
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(kStartBound))) != 1) {
    return fail("no answer within 10 s");
  }
  int passed = -1;
  auto hello = confined::ReadFrame(fd, kMaxReplyFrame, &passed);
  if (passed >= 0) close(passed);
  if (!hello.ok()) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      close(fd);
      return MakeError(
          ErrorCode::kDataChannelUnavailable,
          absl::StrCat(
              "cannot start the data-channel process ", path, ": it ", DescribeExit(status),
              WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (not an executable?)" : ""));
    }
    return fail(std::string(hello.status().message()));
  }
  FrameReader r(*hello);
  uint32_t op = 0, code = 0;
  uint64_t id = 0, child_pid = 0;
  std::string text;
  if (!r.U32(&op) || !r.U64(&id)) return fail("a malformed hello");
  if (static_cast<Op>(op) == Op::kReply && r.U32(&code) && r.Bytes(&text, 4096)) {
    return fail(PrintableAscii(text));
  }
  std::string fast_address;
  if (static_cast<Op>(op) != Op::kHello || !r.U64(&child_pid) || !r.Bytes(&text, 4096) ||
      !r.Bytes(&fast_address, kMaxWorkerAddressBytes) || static_cast<pid_t>(child_pid) != pid) {
    return fail("a malformed hello");
  }
  std::shared_ptr<WorkerProcess> proc(
      new WorkerProcess(pid, fd, PrintableAscii(text), std::move(fast_address), log));
  proc->reader_ = std::thread([raw = proc.get()] { raw->ReadReplies(); });
  return proc;
}

WorkerProcess::~WorkerProcess() {
  // The process exits when its stream ends; one that does not within a second is killed.
  closing_.store(true);
  shutdown(fd_, SHUT_WR);
  if (!gone_.WaitForNotificationWithTimeout(absl::Seconds(1))) Kill();
  if (reader_.joinable()) reader_.join();
  close(fd_);
  if (pidfd_ >= 0) close(pidfd_);
  absl::MutexLock l(&mu_);
  for (const Buffer& b : all_) munmap(b.base, b.size);
}

void WorkerProcess::ReadReplies() {
  std::string why;
  for (;;) {
    int passed = -1;
    auto frame = confined::ReadFrame(fd_, kMaxReplyFrame, &passed);
    if (passed >= 0) close(passed);  // a process passes nothing
    if (!frame.ok()) break;
    // A fast request a peer sent the process (spec 8.9): passed on as peer input.
    FrameReader r(*frame);
    uint32_t op = 0;
    if (r.U32(&op) && static_cast<Op>(op) == Op::kFastRequest) {
      uint64_t id = 0;
      std::string fast;
      if (!r.U64(&id) || !r.Bytes(&fast, kMaxFastFrame) || !r.done()) {
        why = "it sent a malformed fast request";
        Kill();
        break;
      }
      if (const DataChannel::FastRequestSink* sink = fast_sink_.load()) (*sink)(fast, principal());
      continue;
    }
    auto reply = confined::ParseReply(*frame);
    if (!reply.ok()) {
      // Not what a process of ours sends: it is no longer trusted with anything.
      why = "it sent a malformed reply";
      Kill();
      break;
    }
    const uint64_t id = reply->id;
    std::shared_ptr<Pending> p;
    {
      absl::MutexLock l(&mu_);
      auto it = pending_.find(id);
      if (it != pending_.end()) {
        p = it->second;
        pending_.erase(it);
      }
    }
    if (p == nullptr) continue;  // answered after its caller gave up
    const ErrorCode c = CodeFromProcess(reply->code);
    p->status =
        c == ErrorCode::kOk ? absl::OkStatus() : MakeError(c, PrintableAscii(reply->message));
    p->results = std::move(reply->results);
    p->done.Notify();
  }
  // The stream ended: the process exited or is about to; wait until it is gone, so that no
  // caller is answered while it could still touch a client's memory (AOBJ-DAT-157).
  Kill();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_.store(true);
  const std::string reason = absl::StrCat(DescribeExit(status), why.empty() ? "" : "; ", why);
  // AOBJ-SEC-022: an end the server did not ask for is logged when it happens.
  if (!closing_.load() && log_) {
    log_(absl::StrCat("event=data_channel_process_ended pid=", pid_, " principal=", principal(),
                      " reason=\"", reason, "\""));
  }
  std::vector<std::shared_ptr<Pending>> failed;
  {
    absl::MutexLock l(&mu_);
    ended_ = true;
    end_reason_ = reason;
    for (auto& [id, p] : pending_) failed.push_back(p);
    pending_.clear();
  }
  for (auto& p : failed) {
    // AOBJ-DAT-157: the batch in flight failed; everything else finds no channel (AOBJ-DAT-158).
    p->status = MakeError(
        p->op == Op::kExecute ? ErrorCode::kTransferFailed : ErrorCode::kDataChannelUnavailable,
        absl::StrCat("the session's data-channel process ended (", reason, ")"));
    p->done.Notify();
  }
  gone_.Notify();
}

absl::StatusOr<std::shared_ptr<WorkerProcess::Pending>> WorkerProcess::Send(
    Op op, const FrameWriter& fields, int pass_fd) {
  auto p = std::make_shared<Pending>();
  p->op = op;
  {
    absl::MutexLock l(&mu_);
    if (ended_) {
      return MakeError(
          ErrorCode::kDataChannelUnavailable,
          absl::StrCat("the session's data-channel process ended (", end_reason_, ")"));
    }
    p->id = next_id_++;
    pending_[p->id] = p;
  }
  FrameWriter w;
  w.U32(static_cast<uint32_t>(op));
  w.U64(p->id);
  if (w.body().size() + fields.body().size() > confined::kMaxFrame) {
    absl::MutexLock l(&mu_);
    pending_.erase(p->id);
    return MakeError(ErrorCode::kInvalidArgument,
                     "the request's descriptors and keys exceed what one batch may carry");
  }
  absl::Status sent;
  {
    absl::MutexLock l(&send_mu_);
    sent = confined::WriteFrame(fd_, w.body() + fields.body(), pass_fd);
  }
  // The process is gone or going; the reader fails the call once it is reaped.
  if (!sent.ok()) Kill();
  return p;
}

absl::StatusOr<std::string> WorkerProcess::Wait(const std::shared_ptr<Pending>& p,
                                                absl::Time deadline, bool kill_late,
                                                const std::function<bool()>& abandoned) {
  bool told = false;
  while (!p->done.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
    if (!told && abandoned && abandoned()) {
      FrameWriter a;
      a.U64(p->id);
      Post(Op::kAbandon, a);
      told = true;
    }
    if (absl::Now() >= deadline) {
      if (!kill_late) {
        absl::MutexLock l(&mu_);
        pending_.erase(p->id);
        return MakeError(ErrorCode::kDataChannelUnavailable,
                         "the data-channel process did not answer in time");
      }
      // AOBJ-DAT-157: a process that does not end its batch in time is ended; the reply waits
      // until it is gone.
      if (log_) {
        log_(absl::StrCat("event=data_channel_process_killed pid=", pid_,
                          " principal=", principal(), " reason=\"no answer within the bound\""));
      }
      Kill();
      p->done.WaitForNotification();
      break;
    }
  }
  if (!p->status.ok()) return p->status;
  return std::move(p->results);
}

absl::StatusOr<std::string> WorkerProcess::Call(Op op, const FrameWriter& fields,
                                                absl::Time deadline, bool kill_late, int pass_fd,
                                                const std::function<bool()>& abandoned) {
  auto p = Send(op, fields, pass_fd);
  if (!p.ok()) return p.status();
  return Wait(*p, deadline, kill_late, abandoned);
}

void WorkerProcess::Post(Op op, const FrameWriter& fields) {
  FrameWriter w;
  w.U32(static_cast<uint32_t>(op));
  w.U64(0);
  absl::Status sent;
  {
    absl::MutexLock l(&send_mu_);
    sent = confined::WriteFrame(fd_, w.body() + fields.body());
  }
  if (!sent.ok()) Kill();
}

absl::StatusOr<Buffer> WorkerProcess::TakeBuffer(uint64_t bytes) {
  uint64_t id;
  {
    absl::MutexLock l(&mu_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size >= bytes && (best == free_.end() || it->size < best->size)) best = it;
    }
    if (best != free_.end()) {
      Buffer b = *best;
      free_.erase(best);
      return b;
    }
    id = next_buffer_++;
  }
  const uint64_t size = std::max(kMinBuffer, (bytes + kMinBuffer - 1) / kMinBuffer * kMinBuffer);
  // Sealed at its size: a process taken over by its peer holds the descriptor too, and a buffer
  // it shrank would make the server's own copy fault (SIGBUS).
  const int fd = memfd_create("aobj-transfer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const std::string why = strerror(errno);
    if (fd >= 0) close(fd);
    return MakeError(ErrorCode::kSlowDown, absl::StrCat("no transfer buffer: ", why));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string why = strerror(errno);
    close(fd);
    return MakeError(ErrorCode::kSlowDown, absl::StrCat("no transfer buffer: ", why));
  }
  Buffer b{id, static_cast<uint8_t*>(base), size};
  {
    absl::MutexLock l(&mu_);
    all_.push_back(b);
  }
  FrameWriter f;
  f.U64(id);
  f.U64(size);
  auto added = Call(Op::kAddBuffer, f, absl::Now() + kRequestBound, true, fd);
  close(fd);
  if (!added.ok()) {
    // Not the process's: unmapped at once, so that refusals cannot pile up mappings here.
    {
      absl::MutexLock l(&mu_);
      all_.erase(
          std::find_if(all_.begin(), all_.end(), [&](const Buffer& x) { return x.id == b.id; }));
    }
    munmap(b.base, b.size);
    return added.status();
  }
  return b;
}

void WorkerProcess::GiveBuffer(Buffer buffer) {
  {
    absl::MutexLock l(&mu_);
    if (ended_) return;  // unmapped at destruction
    free_.push_back(buffer);
  }
  TrimBuffers(kFreeBytesKept);
}

void WorkerProcess::TrimBuffers(uint64_t keep_bytes) {
  std::vector<Buffer> drop;
  {
    absl::MutexLock l(&mu_);
    if (ended_) return;
    uint64_t kept = 0;
    for (const Buffer& b : free_) kept += b.size;
    // The oldest go first (free_ is in the order buffers came back).
    while (!free_.empty() && kept > keep_bytes) {
      kept -= free_.front().size;
      drop.push_back(free_.front());
      const uint64_t id = free_.front().id;
      free_.erase(free_.begin());
      all_.erase(
          std::find_if(all_.begin(), all_.end(), [&](const Buffer& b) { return b.id == id; }));
    }
  }
  for (const Buffer& b : drop) {
    FrameWriter f;
    f.U64(b.id);
    Post(Op::kDropBuffer, f);
    munmap(b.base, b.size);
  }
}

class ConfinedChannel final : public DataChannel {
 public:
  ConfinedChannel(ConfinedChannelOptions options, std::string path)
      : options_(std::move(options)), path_(std::move(path)) {}

  absl::Status Start() {
    auto proc = WorkerProcess::Spawn(path_, options_.transport, options_.log);
    if (!proc.ok()) return proc.status();
    if (!(*proc)->refusal().empty() && options_.log) {
      options_.log(absl::StrCat(
          "event=warning message=\"data-channel peers can read and write the memory of the "
          "data-channel processes (AOBJ-SEC-020): ",
          (*proc)->refusal(), "\""));
    }
    absl::MutexLock l(&mu_);
    spare_ = std::move(*proc);
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address) override {
    return ConnectFor(peer_address, "");
  }

  absl::StatusOr<uint64_t> ConnectFor(absl::string_view peer_address,
                                      absl::string_view principal) override {
    auto proc = ProcessFor(std::string(principal));
    if (!proc.ok()) return proc.status();
    FrameWriter f;
    f.Bytes(peer_address);
    auto reply = (*proc)->Call(Op::kConnect, f, absl::Now() + kRequestBound, true);
    uint64_t child_ep = 0;
    if (reply.ok() && !FrameReader(*reply).U64(&child_ep)) {
      reply = MakeError(ErrorCode::kInternal, "a malformed reply");
    }
    absl::MutexLock l(&mu_);
    if (!reply.ok()) {
      --(*proc)->endpoints;
      return reply.status();
    }
    const uint64_t id = next_endpoint_++;
    endpoints_[id] = {*proc, child_ep};
    return id;
  }

  absl::StatusOr<Protection> GetProtection(uint64_t endpoint) override {
    FrameWriter f;
    auto reply = Simple(endpoint, Op::kProtection, &f);
    if (!reply.ok()) return reply.status();
    uint32_t v = 1;
    FrameReader(*reply).U32(&v);
    // Anything but an explicit "hardware" is reported as emulated (AOBJ-SES-013).
    return v == 0 ? Protection::kHardware : Protection::kEmulated;
  }

  absl::StatusOr<std::string> SendChallenges(uint64_t endpoint,
                                             absl::string_view session_id) override {
    FrameWriter f;
    auto reply = Simple(endpoint, Op::kChallenge, &f, session_id);
    if (!reply.ok()) return reply.status();
    std::string challenges;
    // AOBJ-SES-025: 32 octets per lane; a process sends at most a few.
    if (!FrameReader(*reply).Bytes(&challenges, 32 * 64) || challenges.empty() ||
        challenges.size() % 32 != 0) {
      return MakeError(ErrorCode::kInternal, "a malformed challenge reply");
    }
    return challenges;
  }

  absl::Status Bind(uint64_t endpoint) override {
    FrameWriter f;
    return Simple(endpoint, Op::kBind, &f).status();
  }

  void Disconnect(uint64_t endpoint) override {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
    {
      absl::MutexLock l(&mu_);
      auto it = endpoints_.find(endpoint);
      if (it == endpoints_.end()) return;
      proc = it->second.proc;
      child_ep = it->second.child_ep;
      endpoints_.erase(it);
      --proc->endpoints;
    }
    if (proc->alive()) {
      FrameWriter f;
      f.U64(child_ep);
      // The reaper calls this for every lapsed session: a process that does not answer within
      // a second is ended rather than let it hold the reaper.
      proc->Call(Op::kDisconnect, f, absl::Now() + absl::Seconds(1), true).IgnoreError();
    }
    RetireIdle(proc);
  }

  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch) override {
    return ExecuteWatched(endpoint, batch, nullptr);
  }

  absl::Status ExecuteWatched(uint64_t endpoint, const RmaBatch& batch,
                              const std::function<bool()>& abandoned) override {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
    if (!Lookup(endpoint, &proc, &child_ep)) {
      return MakeError(ErrorCode::kDataChannelUnavailable, "no data-channel endpoint");
    }
    uint64_t total = 0;
    for (const RmaOp& op : batch.ops) total += op.length;
    auto buffer = proc->TakeBuffer(total);
    if (!buffer.ok()) return buffer.status();
    const absl::Duration bound = BatchWaitBound(options_.wait_bound, batch);
    FrameWriter f;
    f.U64(child_ep);
    f.I64(absl::ToInt64Nanoseconds(bound));
    f.U32(batch.direction == RmaDirection::kWrite ? 0 : 1);
    f.U64(batch.max_rkey_bytes);
    f.U32(static_cast<uint32_t>(batch.windows.size()));
    for (const RemoteWindow& w : batch.windows) {
      f.U64(w.address);
      f.U64(w.length);
      f.Bytes(w.rkey);
    }
    f.U32(static_cast<uint32_t>(batch.ops.size()));
    uint64_t offset = 0;
    for (const RmaOp& op : batch.ops) {
      if (batch.direction == RmaDirection::kWrite) {
        std::memcpy(buffer->base + offset, op.local, op.length);
      }
      f.U64(op.window);
      f.U64(op.remote);
      f.U64(buffer->id);
      f.U64(offset);
      f.U64(op.length);
      offset += op.length;
    }
    auto reply =
        proc->Call(Op::kExecute, f, absl::Now() + bound + UcxWorker::kAbandonGrace + kProcessSlack,
                   true, -1, abandoned);
    if (reply.ok() && batch.direction == RmaDirection::kRead) {
      offset = 0;
      for (const RmaOp& op : batch.ops) {
        std::memcpy(op.local, buffer->base + offset, op.length);
        offset += op.length;
      }
    }
    proc->GiveBuffer(*buffer);
    return reply.status();
  }

  size_t endpoint_count() override { return Sum().endpoints; }
  uint64_t rkeys_outstanding() override { return Sum().rkeys; }
  PeerRmaRefusals peer_rma_refused() override { return Sum().refused; }

  void BeginShutdown(absl::Duration grace) override {
    FrameWriter f;
    f.I64(absl::ToInt64Nanoseconds(grace));
    for (auto& p : Processes()) p->Post(Op::kShutdown, f);
  }

  absl::Status StartFastPath(FastRequestSink sink) override {
    {
      absl::MutexLock l(&mu_);
      if (fast_sink_ != nullptr) return absl::FailedPreconditionError("started already");
      fast_sink_ = std::make_unique<FastRequestSink>(std::move(sink));
    }
    for (auto& p : Processes()) p->set_fast_sink(fast_sink_.get());
    return absl::OkStatus();
  }

  std::string FastPathAddress(uint64_t endpoint) override {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
    {
      absl::MutexLock l(&mu_);
      if (fast_sink_ == nullptr) return "";
    }
    if (!Lookup(endpoint, &proc, &child_ep)) return "";
    return proc->fast_address();
  }

  void SendFastReply(uint64_t endpoint, std::string frame) override {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
    if (!Lookup(endpoint, &proc, &child_ep) || !proc->alive()) {
      fast_dropped_.fetch_add(1);
      return;
    }
    FrameWriter f;
    f.U64(child_ep);
    f.Bytes(frame);
    proc->Post(Op::kFastReply, f);
  }
  uint64_t fast_messages_dropped() override { return fast_dropped_.load(); }

 private:
  struct Endpoint {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
  };
  struct Totals {
    size_t endpoints = 0;
    uint64_t rkeys = 0;
    PeerRmaRefusals refused;
  };

  // After `proc` lost a session: with none left it keeps no free buffers, and beyond
  // kIdleProcessesKept processes without sessions the one idle longest ends (issue 15: idle
  // principals must not hold the server's memory).
  void RetireIdle(const std::shared_ptr<WorkerProcess>& proc) {
    std::shared_ptr<WorkerProcess> retired;
    {
      absl::MutexLock l(&mu_);
      if (!proc->alive()) {
        // An ended process goes as soon as its principal has nothing on it, buffers and all.
        auto it = processes_.find(proc->principal());
        if (proc->endpoints == 0 && it != processes_.end() && it->second == proc) {
          retired = std::move(it->second);
          processes_.erase(it);
        }
        return;
      }
      if (proc->endpoints != 0) return;
      proc->idle_since = absl::Now();
      size_t idle = 0;
      auto oldest = processes_.end();
      for (auto it = processes_.begin(); it != processes_.end(); ++it) {
        if (it->second->endpoints != 0) continue;
        ++idle;
        if (oldest == processes_.end() || it->second->idle_since < oldest->second->idle_since) {
          oldest = it;
        }
      }
      if (idle > kIdleProcessesKept && oldest != processes_.end()) {
        retired = std::move(oldest->second);
        processes_.erase(oldest);
      }
    }
    proc->TrimBuffers(0);
    // `retired` ends here, outside the lock: its stream closes and it exits.
  }

  bool Lookup(uint64_t endpoint, std::shared_ptr<WorkerProcess>* proc, uint64_t* child_ep) {
    absl::MutexLock l(&mu_);
    auto it = endpoints_.find(endpoint);
    if (it == endpoints_.end()) return false;
    *proc = it->second.proc;
    *child_ep = it->second.child_ep;
    return true;
  }

  // A request on one endpoint with the endpoint (and `text`, when given) as its fields.
  absl::StatusOr<std::string> Simple(uint64_t endpoint, Op op, FrameWriter* f,
                                     absl::optional<absl::string_view> text = absl::nullopt) {
    std::shared_ptr<WorkerProcess> proc;
    uint64_t child_ep = 0;
    if (!Lookup(endpoint, &proc, &child_ep)) {
      return MakeError(ErrorCode::kDataChannelUnavailable, "no data-channel endpoint");
    }
    f->U64(child_ep);
    if (text.has_value()) f->Bytes(*text);
    return proc->Call(op, *f, absl::Now() + kRequestBound, true);
  }

  std::vector<std::shared_ptr<WorkerProcess>> Processes() {
    absl::MutexLock l(&mu_);
    std::vector<std::shared_ptr<WorkerProcess>> out;
    for (auto& [principal, p] : processes_) out.push_back(p);
    if (spare_) out.push_back(spare_);
    return out;
  }

  Totals Sum() {
    Totals t;
    for (auto& p : Processes()) {
      if (!p->alive()) continue;
      // Short: a process that does not answer at once counts nothing (scrapes must not wait).
      auto reply = p->Call(Op::kStats, FrameWriter(), absl::Now() + absl::Milliseconds(500), false);
      if (!reply.ok()) continue;
      FrameReader r(*reply);
      uint64_t endpoints = 0, rkeys = 0, failed = 0;
      PeerRmaRefusals refused;
      if (!r.U64(&endpoints) || !r.U64(&rkeys) || !r.U64(&failed) || !r.U64(&refused.puts) ||
          !r.U64(&refused.gets) || !r.U64(&refused.atomics)) {
        continue;
      }
      t.endpoints += endpoints;
      t.rkeys += rkeys;
      t.refused.puts += refused.puts;
      t.refused.gets += refused.gets;
      t.refused.atomics += refused.atomics;
    }
    return t;
  }

  // The principal's live process (started if needed), its endpoint count already raised.
  absl::StatusOr<std::shared_ptr<WorkerProcess>> ProcessFor(const std::string& principal) {
    {
      absl::MutexLock l(&mu_);
      auto it = processes_.find(principal);
      if (it != processes_.end() && it->second->alive()) {
        ++it->second->endpoints;
        return it->second;
      }
      if (it != processes_.end()) processes_.erase(it);  // it ended (and said so)
      if (spare_ && spare_->alive()) {
        spare_->set_principal(principal);
        ++spare_->endpoints;
        auto proc = std::move(spare_);
        processes_[principal] = proc;
        return proc;
      }
      spare_.reset();
    }
    // Started outside the lock: it takes tens of milliseconds.
    std::shared_ptr<WorkerProcess> retired;
    {
      absl::MutexLock l(&mu_);
      if (processes_.size() >= options_.max_processes) {
        for (auto it = processes_.begin(); it != processes_.end(); ++it) {
          if (it->second->endpoints == 0) {
            retired = std::move(it->second);
            processes_.erase(it);
            break;
          }
        }
        if (retired == nullptr) {
          return MakeError(ErrorCode::kSlowDown,
                           absl::StrCat("the server runs ", processes_.size(),
                                        " data-channel processes, one per access key with "
                                        "open sessions; retry later"));
        }
      }
    }
    retired.reset();  // its stream closes; it exits
    auto proc = WorkerProcess::Spawn(path_, options_.transport, options_.log);
    if (!proc.ok()) return proc.status();
    absl::MutexLock l(&mu_);
    (*proc)->set_fast_sink(fast_sink_.get());
    auto it = processes_.find(principal);
    if (it != processes_.end() && it->second->alive()) {
      // Another session of the principal started one meanwhile; this one goes.
      ++it->second->endpoints;
      return it->second;
    }
    (*proc)->set_principal(principal);
    ++(*proc)->endpoints;
    processes_[principal] = *proc;
    if (options_.log) {
      options_.log(absl::StrCat("event=data_channel_process_started pid=", (*proc)->pid(),
                                " principal=", principal));
    }
    return *proc;
  }

  const ConfinedChannelOptions options_;
  const std::string path_;
  // StartFastPath's sink; declared before the processes, whose readers call it, so that it
  // outlives them.
  std::unique_ptr<FastRequestSink> fast_sink_;  // set once, under mu_
  std::atomic<uint64_t> fast_dropped_{0};
  absl::Mutex mu_;
  std::shared_ptr<WorkerProcess> spare_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<WorkerProcess>> processes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Endpoint> endpoints_ ABSL_GUARDED_BY(mu_);
  uint64_t next_endpoint_ ABSL_GUARDED_BY(mu_) = 1;
};

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

}  // namespace

absl::StatusOr<std::string> FindDataWorker(const std::string& configured) {
  if (!configured.empty()) {
    if (Executable(configured)) return configured;
    return absl::NotFoundError(
        absl::StrCat("the data-channel worker ", configured, " is not an executable"));
  }
  std::vector<std::string> tried;
  auto consider = [&](const std::string& path) {
    if (path.empty()) return false;
    tried.push_back(path);
    return Executable(path);
  };
  if (const char* env = std::getenv("AOBJ_DATA_WORKER"); env != nullptr && consider(env)) {
    return std::string(env);
  }
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    if (consider(dir + "/aobj-data-worker")) return dir + "/aobj-data-worker";
  }
#ifdef AOBJ_DATA_WORKER_BUILD_PATH
  if (consider(AOBJ_DATA_WORKER_BUILD_PATH)) return std::string(AOBJ_DATA_WORKER_BUILD_PATH);
#endif
#ifdef AOBJ_DATA_WORKER_INSTALL_PATH
  if (consider(AOBJ_DATA_WORKER_INSTALL_PATH)) return std::string(AOBJ_DATA_WORKER_INSTALL_PATH);
#endif
  return absl::NotFoundError(absl::StrCat(
      "no aobj-data-worker executable (looked at ", absl::StrJoin(tried, ", "),
      "); build it, name it (--data-worker PATH or $AOBJ_DATA_WORKER), or run the data "
      "channel in the server's process (--data-isolation none)"));
}

absl::StatusOr<std::unique_ptr<DataChannel>> NewConfinedDataChannel(
    const ConfinedChannelOptions& options) {
  auto path = FindDataWorker(options.worker_path);
  if (!path.ok()) return path.status();
  auto channel = std::make_unique<ConfinedChannel>(options, *path);
  AOBJ_RETURN_IF_ERROR(channel->Start());
  return channel;
}

}  // namespace aobj
