#include "transport/confined_worker.h"

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "aobj/status.h"
#include "exec/helpers.h"
#include "transport/confined_ipc.h"
#include "transport/peer_rma_guard.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/fast_frame.h"

namespace aobj {
namespace {

using confined::FrameReader;
using confined::FrameWriter;
using confined::Op;

// A shared-memory buffer the server passed this process.
struct Buffer {
  uint8_t* base = nullptr;
  uint64_t size = 0;
};

class Worker {
 public:
  Worker(int fd, std::unique_ptr<UcxContext> context, std::unique_ptr<UcxContext> shm,
         std::unique_ptr<UcxWorker> worker)
      : fd_(fd), context_(std::move(context)), shm_(std::move(shm)), worker_(std::move(worker)) {}

  int Run() {
    FrameWriter hello;
    hello.U32(static_cast<uint32_t>(Op::kHello));
    hello.U64(0);
    hello.U64(static_cast<uint64_t>(getpid()));
    hello.Bytes(worker_->peer_rma_refusal().ok() ? "" : worker_->peer_rma_refusal().message());
    // Fast requests (spec 8.9) are passed to the server as they came, for it to parse.
    auto fast = worker_->StartMessageWorker(kFastRequestAmId, [this](absl::string_view m) {
      if (m.size() > kMaxFastFrame) return;
      FrameWriter w;
      w.U32(static_cast<uint32_t>(Op::kFastRequest));
      w.U64(0);
      w.Bytes(m);
      Send(w.body()).IgnoreError();
    });
    hello.Bytes(fast.ok() ? *fast : "");
    if (!Send(hello.body()).ok()) return 1;
    for (;;) {
      int passed = -1;
      auto frame = confined::ReadFrame(fd_, confined::kMaxFrame, &passed);
      // The server closed the stream (or died): nothing more will be asked. Exiting at once
      // ends every operation this process still has in flight (the server waits for it).
      if (!frame.ok()) _exit(frame.status().code() == absl::StatusCode::kNotFound ? 0 : 3);
      Dispatch(std::move(*frame), passed);
    }
  }

 private:
  absl::Status Send(absl::string_view body) {
    absl::MutexLock l(&send_mu_);
    return confined::WriteFrame(fd_, body);
  }

  void Reply(uint64_t id, const absl::Status& st, const FrameWriter* results = nullptr) {
    FrameWriter w;
    w.U32(static_cast<uint32_t>(Op::kReply));
    w.U64(id);
    w.U32(static_cast<uint32_t>(ErrorCodeOf(st)));
    w.Bytes(st.message().substr(0, confined::kMaxReplyMessage));
    std::string body = w.body();
    if (results != nullptr) body += results->body();
    Send(body).IgnoreError();
  }

  // Reply, from a thread of its own: the thread that reads the server's stream never waits to
  // write (the stream's other direction may be full while the server's reader runs a request,
  // spec 8.9; a reader that waited here could close a cycle of full streams). Inline only when
  // no thread can be had.
  void ReplyAside(uint64_t id, absl::Status st) {
    if (!threads_.Start([this, id, st] { Reply(id, st); })) Reply(id, st);
  }

  // The server is trusted here: a malformed request is its bug, answered INTERNAL.
  void Dispatch(std::string body, int passed) {
    FrameReader r(body);
    uint32_t op = 0;
    uint64_t id = 0;
    if (!r.U32(&op) || !r.U64(&id)) {
      if (passed >= 0) close(passed);
      return;
    }
    switch (static_cast<Op>(op)) {
      case Op::kAddBuffer: {
        uint64_t buffer = 0, size = 0;
        if (!r.U64(&buffer) || !r.U64(&size) || passed < 0 || size == 0) {
          if (passed >= 0) close(passed);
          return ReplyAside(id, MakeError(ErrorCode::kInternal, "malformed buffer"));
        }
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, passed, 0);
        close(passed);
        if (p == MAP_FAILED) {
          return ReplyAside(id, MakeError(ErrorCode::kInternal,
                                          absl::StrCat("mmap of a buffer: ", strerror(errno))));
        }
        {
          absl::MutexLock l(&mu_);
          buffers_[buffer] = {static_cast<uint8_t*>(p), size};
        }
        return ReplyAside(id, absl::OkStatus());
      }
      case Op::kDropBuffer: {
        uint64_t buffer = 0;
        if (!r.U64(&buffer)) return;
        absl::MutexLock l(&mu_);
        auto it = buffers_.find(buffer);
        if (it != buffers_.end()) {
          munmap(it->second.base, it->second.size);
          buffers_.erase(it);
        }
        return;
      }
      case Op::kAbandon: {
        uint64_t target = 0;
        if (!r.U64(&target)) return;
        absl::MutexLock l(&mu_);
        auto it = abandoned_.find(target);
        if (it != abandoned_.end()) it->second->store(true);
        return;
      }
      case Op::kFastReply: {
        uint64_t ep = 0;
        std::string frame;
        if (r.U64(&ep) && r.Bytes(&frame, kMaxFastFrame)) {
          worker_->SendMessage(ep, kFastReplyAmId, std::move(frame)).IgnoreError();
        }
        return;
      }
      case Op::kShutdown: {
        int64_t grace = 0;
        if (r.I64(&grace)) worker_->BeginShutdown(absl::Nanoseconds(grace));
        return;
      }
      default:
        break;
    }
    if (passed >= 0) close(passed);
    std::shared_ptr<std::atomic<bool>> flag;
    if (static_cast<Op>(op) == Op::kExecute) {
      flag = std::make_shared<std::atomic<bool>>(false);
      absl::MutexLock l(&mu_);
      abandoned_[id] = flag;
    }
    // Every other request may wait on the progress thread (or on its peer, for a bound), so
    // each runs on a thread of its own; the server has at most one request per request thread.
    const bool started = threads_.Start([this, body = std::move(body), op, id, flag] {
      FrameReader r(body);
      uint32_t skip32;
      uint64_t skip64;
      r.U32(&skip32);
      r.U64(&skip64);
      Serve(static_cast<Op>(op), id, r, flag);
      if (flag) {
        absl::MutexLock l(&mu_);
        abandoned_.erase(id);
      }
    });
    if (!started) {  // no thread to be had: the request fails, the process goes on
      if (flag) {
        absl::MutexLock l(&mu_);
        abandoned_.erase(id);
      }
      Reply(id, MakeError(ErrorCode::kInternal,  // no thread for ReplyAside either
                          "the data-channel process could not start a thread for the request"));
    }
  }

  void Serve(Op op, uint64_t id, FrameReader& r, const std::shared_ptr<std::atomic<bool>>& flag) {
    const absl::Status malformed = MakeError(ErrorCode::kInternal, "malformed request");
    FrameWriter out;
    uint64_t ep = 0;
    switch (op) {
      case Op::kConnect: {
        std::string address;
        if (!r.Bytes(&address, confined::kMaxFrame)) return Reply(id, malformed);
        auto got = worker_->Connect(address);
        if (!got.ok()) return Reply(id, got.status());
        out.U64(*got);
        return Reply(id, absl::OkStatus(), &out);
      }
      case Op::kProtection: {
        if (!r.U64(&ep)) return Reply(id, malformed);
        auto got = worker_->GetProtection(ep);
        if (!got.ok()) return Reply(id, got.status());
        out.U32(*got == Protection::kHardware ? 0 : 1);
        return Reply(id, absl::OkStatus(), &out);
      }
      case Op::kChallenge: {
        std::string session;
        if (!r.U64(&ep) || !r.Bytes(&session, 64)) return Reply(id, malformed);
        auto got = worker_->SendChallenges(ep, session);
        if (!got.ok()) return Reply(id, got.status());
        out.Bytes(*got);
        return Reply(id, absl::OkStatus(), &out);
      }
      case Op::kBind:
        if (!r.U64(&ep)) return Reply(id, malformed);
        return Reply(id, worker_->Bind(ep));
      case Op::kDisconnect:
        if (!r.U64(&ep)) return Reply(id, malformed);
        worker_->Disconnect(ep);
        return Reply(id, absl::OkStatus());
      case Op::kStats: {
        const PeerRmaRefusals refused = PeerRmaRefused();
        out.U64(worker_->endpoint_count());
        out.U64(worker_->rkeys_outstanding());
        out.U64(worker_->endpoints_failed());
        out.U64(refused.puts);
        out.U64(refused.gets);
        out.U64(refused.atomics);
        return Reply(id, absl::OkStatus(), &out);
      }
      case Op::kExecute:
        return Reply(id, Execute(r, flag));
      default:
        return Reply(id, MakeError(ErrorCode::kInternal, absl::StrCat("unknown request ", op)));
    }
  }

  absl::Status Execute(FrameReader& r, const std::shared_ptr<std::atomic<bool>>& flag) {
    const absl::Status malformed = MakeError(ErrorCode::kInternal, "malformed RMA batch");
    uint64_t ep = 0, max_rkey = 0;
    int64_t timeout_ns = 0;
    uint32_t direction = 0, windows = 0, ops = 0;
    if (!r.U64(&ep) || !r.I64(&timeout_ns) || !r.U32(&direction) || !r.U64(&max_rkey) ||
        !r.U32(&windows) || direction > 1) {
      return malformed;
    }
    RmaBatch batch;
    batch.direction = direction == 0 ? RmaDirection::kWrite : RmaDirection::kRead;
    batch.max_rkey_bytes = static_cast<size_t>(max_rkey);
    std::vector<std::string> rkeys(windows);  // the batch's windows borrow these
    for (uint32_t i = 0; i < windows; ++i) {
      RemoteWindow w;
      if (!r.U64(&w.address) || !r.U64(&w.length) || !r.Bytes(&rkeys[i], confined::kMaxFrame)) {
        return malformed;
      }
      w.rkey = rkeys[i];
      batch.windows.push_back(w);
    }
    if (!r.U32(&ops)) return malformed;
    {
      absl::MutexLock l(&mu_);
      for (uint32_t i = 0; i < ops; ++i) {
        uint64_t window = 0, remote = 0, buffer = 0, offset = 0, length = 0;
        if (!r.U64(&window) || !r.U64(&remote) || !r.U64(&buffer) || !r.U64(&offset) ||
            !r.U64(&length)) {
          return malformed;
        }
        auto it = buffers_.find(buffer);
        if (it == buffers_.end() || offset > it->second.size || length > it->second.size - offset) {
          return MakeError(ErrorCode::kInternal, "an operation outside its buffer");
        }
        batch.ops.push_back({static_cast<size_t>(window), remote, it->second.base + offset,
                             static_cast<size_t>(length)});
      }
    }
    if (!r.done()) return malformed;
    return worker_->Execute(ep, batch, absl::Nanoseconds(timeout_ns),
                            [&flag] { return flag->load(); });
  }

  const int fd_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxContext> shm_;
  std::unique_ptr<UcxWorker> worker_;
  absl::Mutex send_mu_;
  // The threads that serve requests and send replies aside, kept a while for the next: a thread's
  // start under this process's system-call filter cost about as much as a small transfer.
  ReusedThreads threads_{absl::Seconds(2)};
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Buffer> buffers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::shared_ptr<std::atomic<bool>>> abandoned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

namespace {

// The architecture the filter below was written for; elsewhere no filter is installed.
#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

// A seccomp filter: the process may not create processes (only threads), trace or reach other
// processes' memory, take their descriptors, or signal anything but itself. Refused calls fail
// EPERM (clone3 ENOSYS, so that the C library falls back to clone, whose flags can be read).
std::string InstallSyscallFilter() {
  if (kAuditArch == 0) return "no seccomp filter for this architecture; ";
  const uint32_t self = static_cast<uint32_t>(getpid());
  constexpr uint32_t kErrno = SECCOMP_RET_ERRNO | EPERM;
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
  auto deny = [&f](long nr, uint32_t ret) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, ret));
  };
#ifdef __NR_fork
  deny(__NR_fork, kErrno);
#endif
#ifdef __NR_vfork
  deny(__NR_vfork, kErrno);
#endif
  deny(__NR_clone3, SECCOMP_RET_ERRNO | ENOSYS);
  deny(__NR_ptrace, kErrno);
  deny(__NR_process_vm_readv, kErrno);
  deny(__NR_process_vm_writev, kErrno);
  deny(__NR_pidfd_getfd, kErrno);
  deny(__NR_pidfd_send_signal, kErrno);
  deny(__NR_pidfd_open, kErrno);
  deny(__NR_execve, kErrno);
  deny(__NR_execveat, kErrno);
  // clone: only with CLONE_THREAD (a thread of this process).
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4));
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, kErrno));
  // kill and tgkill: only this process, named by its pid (not 0 or a negative group: the
  // process shares the server's process group).
  for (long nr : {static_cast<long>(__NR_kill), static_cast<long>(__NR_tgkill)}) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 4));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, kErrno));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  deny(__NR_tkill, kErrno);  // its argument is a thread id of any process
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog prog{static_cast<unsigned short>(f.size()), f.data()};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
    return absl::StrCat("seccomp: ", strerror(errno), "; ");
  }
  return "";
}

}  // namespace

std::string ConfineThisProcess() {
  std::string why;
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    absl::StrAppend(&why, "no_new_privs: ", strerror(errno), "; ");
  }
  // No capabilities: without CAP_SYS_PTRACE (and with the server not dumpable) this process
  // cannot read or write the server by ptrace or process_vm_writev; without CAP_IPC_OWNER it
  // attaches only the segments its user may.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) {
    absl::StrAppend(&why, "capset: ", strerror(errno), "; ");
  }
  // Last: it refuses what the steps above no longer need.
  absl::StrAppend(&why, InstallSyscallFilter());
  return why;
}

int RunConfinedWorker(int fd, const DataChannelOptions& options) {
  auto fail = [fd](const absl::Status& st) {
    // Told to the server as the hello it waits for, so that its start error says why.
    FrameWriter w;
    w.U32(static_cast<uint32_t>(Op::kReply));
    w.U64(0);
    w.U32(static_cast<uint32_t>(ErrorCode::kInternal));
    w.Bytes(st.message().substr(0, confined::kMaxReplyMessage));
    confined::WriteFrame(fd, w.body()).IgnoreError();
    return 2;
  };
  auto ctx = UcxContext::CreateForServer(options);
  if (!ctx.ok()) return fail(ctx.status());
  auto shm = UcxContext::CreateSharedMemoryLane(options);
  if (!shm.ok()) return fail(shm.status());
  auto worker = UcxWorker::Create(**ctx, "confined", shm->get());
  if (!worker.ok()) return fail(worker.status());
  Worker w(fd, std::move(*ctx), std::move(*shm), std::move(*worker));
  return w.Run();
}

}  // namespace aobj
