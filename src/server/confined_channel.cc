#include "server/confined_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/optional.h"
#include "aobj/status.h"
#include "server/data_process.h"
#include "server/handler_util.h"
#include "transport/confined_ipc.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

using confined::FrameReader;
using confined::FrameWriter;
using confined::Op;

// Beyond its own bound a batch's process gets this long before it is killed.
constexpr absl::Duration kProcessSlack = absl::Seconds(5);
// Processes kept without any session (for a principal that comes back); older ones end.
constexpr size_t kIdleProcessesKept = 4;

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
    auto reply = (*proc)->Call(Op::kConnect, f, absl::Now() + kDataProcessRequestBound, true);
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

  Placement PlacementFor(absl::string_view principal) override {
    absl::MutexLock l(&mu_);
    auto it = processes_.find(std::string(principal));
    return {it != processes_.end() && it->second->alive(),
            processes_.size() * 2 >= options_.max_processes};
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
  uint64_t data_channels_failed() override { return Sum().failed; }

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
    uint64_t failed = 0;
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
    return proc->Call(op, *f, absl::Now() + kDataProcessRequestBound, true);
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
      t.failed += failed;
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
