#include "server/data_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/fast_frame.h"
#include "wire/printable.h"
#include "wire/protocol.h"

extern char** environ;

namespace aobj {

using confined::FrameReader;
using confined::FrameWriter;
using confined::Op;

namespace {

// A reply frame from a process is at most this large (a challenge set or counters).
constexpr size_t kMaxReplyFrame = kMaxFastFrame + 1024;  // a forwarded fast request is the largest
// How long a process may take to start (make its UCX contexts) and say hello.
constexpr absl::Duration kStartBound = absl::Seconds(10);
// Buffers smaller than this are not made; free buffers kept per process.
constexpr uint64_t kMinBuffer = 1 << 20;
// Free buffers a process keeps for reuse, in octets; none once its sessions all closed.
constexpr uint64_t kFreeBytesKept = 64 << 20;

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

}  // namespace

WorkerProcess::WorkerProcess(pid_t pid, int fd, std::string refusal, std::string fast_address,
                             std::function<void(const std::string&)> log)
    : pid_(pid),
      fd_(fd),
      refusal_(std::move(refusal)),
      fast_address_(std::move(fast_address)),
      log_(std::move(log)) {
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

void WorkerProcess::Kill() {
  if (pidfd_ >= 0) {
    syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
  } else if (!reaped_.load()) {
    kill(pid_, SIGKILL);
  }
  shutdown(fd_, SHUT_RDWR);
}

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
  for (const ProcessBuffer& b : all_) munmap(b.base, b.size);
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
      if (const DataChannel::FastRequestSink* sink = fast_sink_.load()) {
        // More bytes behind this frame: more requests (or replies) wait on this one thread, so
        // the request goes to a request thread rather than hold them up (spec 8.9).
        int waiting = 0;
        const bool more_behind = ioctl(fd_, FIONREAD, &waiting) == 0 && waiting > 0;
        (*sink)(fast, principal(), more_behind);
      }
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

absl::StatusOr<ProcessBuffer> WorkerProcess::TakeBuffer(uint64_t bytes) {
  uint64_t id;
  {
    absl::MutexLock l(&mu_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size >= bytes && (best == free_.end() || it->size < best->size)) best = it;
    }
    if (best != free_.end()) {
      ProcessBuffer b = *best;
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
  ProcessBuffer b{id, static_cast<uint8_t*>(base), size};
  {
    absl::MutexLock l(&mu_);
    all_.push_back(b);
  }
  FrameWriter f;
  f.U64(id);
  f.U64(size);
  auto added = Call(Op::kAddBuffer, f, absl::Now() + kDataProcessRequestBound, true, fd);
  close(fd);
  if (!added.ok()) {
    // Not the process's: unmapped at once, so that refusals cannot pile up mappings here.
    {
      absl::MutexLock l(&mu_);
      all_.erase(std::find_if(all_.begin(), all_.end(),
                              [&](const ProcessBuffer& x) { return x.id == b.id; }));
    }
    munmap(b.base, b.size);
    return added.status();
  }
  return b;
}

void WorkerProcess::GiveBuffer(ProcessBuffer buffer) {
  {
    absl::MutexLock l(&mu_);
    if (ended_) return;  // unmapped at destruction
    free_.push_back(buffer);
  }
  TrimBuffers(kFreeBytesKept);
}

void WorkerProcess::TrimBuffers(uint64_t keep_bytes) {
  std::vector<ProcessBuffer> drop;
  {
    absl::MutexLock l(&mu_);
    if (ended_) return;
    uint64_t kept = 0;
    for (const ProcessBuffer& b : free_) kept += b.size;
    // The oldest go first (free_ is in the order buffers came back).
    while (!free_.empty() && kept > keep_bytes) {
      kept -= free_.front().size;
      drop.push_back(free_.front());
      const uint64_t id = free_.front().id;
      free_.erase(free_.begin());
      all_.erase(std::find_if(all_.begin(), all_.end(),
                              [&](const ProcessBuffer& b) { return b.id == id; }));
    }
  }
  for (const ProcessBuffer& b : drop) {
    FrameWriter f;
    f.U64(b.id);
    Post(Op::kDropBuffer, f);
    munmap(b.base, b.size);
  }
}

}  // namespace aobj
