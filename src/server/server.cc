// Server: wires the gRPC control channel, the request scheduler, the UCX data channel and the
// lease reaper around RequestHandler.
#include "aobj/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/support/byte_buffer.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <random>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.grpc.pb.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "google/protobuf/descriptor.h"
#include "server/confined_channel.h"
#include "server/control_service.h"
#include "server/data_channel.h"
#include "server/fast_path.h"
#include "server/h2_guard.h"
#include "server/handler.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/metrics_http.h"
#include "server/scheduler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "store/bucket_owners.h"
#include "store/multipart.h"
#include "transport/peer_rma_guard.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/printable.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

// ServerOptions::data_workers: as configured, or one per 4 cores, at least 2 (1 on one core) and
// at most 16. Two on 2 cores: one worker left the second core idle while 8 client processes
// shared the first (docs/benchmarks.md section 12.17).
int DataWorkers(int configured) {
  if (configured > 0) return std::min(configured, 64);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return cores <= 1 ? 1 : std::clamp(cores / 4, 2, 16);
}

class ServerImpl final : public Server {
 public:
  ~ServerImpl() override { Shutdown(); }

  absl::Status Init(ServerOptions options, std::unique_ptr<ObjectStore> store) {
    options_ = std::move(options);
    if (options_.log) {
      // One line per event whatever a peer's text in it holds (tenth hostile probe F4: a
      // client name and a bucket name echoed in an error message put newlines into the log).
      options_.log = [sink = std::move(options_.log)](const std::string& line) {
        sink(PrintableAscii(line));
      };
    }
    store_ = std::move(store);
    // Multipart uploads live beside the store: in memory, or in multipart_root (spec 9.15).
    MultipartLimits mpl;
    if (options_.multipart_min_part_size) mpl.min_part_size = options_.multipart_min_part_size;
    mpl.max_uploads_per_initiator = std::max<size_t>(options_.max_uploads_per_principal, 1);
    mpl.max_parts_per_initiator =
        std::max<uint64_t>(options_.max_upload_parts_per_principal, 1);
    if (options_.upload_expiry_ms > 0) {
      mpl.upload_expiry = absl::Milliseconds(options_.upload_expiry_ms);
    }
    // A store that keeps uploads itself (RadosStore, shared by gateways) provides the manager.
    auto* provider = dynamic_cast<MultipartProvider*>(store_.get());
    auto mp = provider != nullptr
                  ? provider->OpenMultipart(mpl)
                  : MultipartManager::Open(store_.get(), options_.multipart_root, mpl);
    if (!mp.ok()) return mp.status();
    multipart_ = std::move(*mp);
    // Without an explicit choice the server leaves out UCX's posix shared-memory transport:
    // unpacking a posix rkey opens a path the client names and can fail in ways that cannot be
    // checked beforehand, and a failed unpack crashes UCX 1.13.1 (see SysvSegmentPins).
    auto authz =
        BucketAuthorizer::Create(options_.authorization, options_.grants, options_.owners_file,
                                 dynamic_cast<BucketOwnerStore*>(store_.get()));
    if (!authz.ok()) return authz.status();
    authz_ = std::move(*authz);
    // AOBJ-SEC-016: an owner recorded for a bucket that was never created (or whose deletion
    // was not followed by forgetting it) does not outlive a restart.
    authz_->ForgetMissing([this](const std::string& bucket) {
      return ErrorCodeOf(store_->HeadBucket(bucket)) != ErrorCode::kNoSuchBucket;
    }).IgnoreError();
    DataChannelOptions data_channel = options_.data_channel;
    if (data_channel.transports.empty()) data_channel.transports = "^posix";
    const absl::Duration wait_bound =
        absl::Milliseconds(std::max<int64_t>(options_.data_wait_ms, 1));
    const int shards = DataWorkers(options_.data_workers);
    std::vector<std::unique_ptr<DataChannel>> channels;
    if (options_.data_isolation == ServerOptions::DataIsolation::kProcessPerPrincipal) {
      // AOBJ-SEC-021: peers' octets reach only the data-channel processes; none of them may
      // ptrace this one (without CAP_SYS_PTRACE, which they drop, an undumpable process is out
      // of reach of its own user too).
      prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      ConfinedChannelOptions co;
      co.worker_path = options_.data_worker_path;
      co.transport = data_channel;
      co.wait_bound = wait_bound;
      co.log = options_.log;
      // The server's process cap, shared out: a principal's sessions spread over the workers'
      // processes while there is room, and crowd into the workers that have it when there is not.
      co.max_processes = std::max<size_t>(1, co.max_processes / static_cast<size_t>(shards));
      for (int i = 0; i < shards; ++i) {
        auto channel = NewConfinedDataChannel(co);
        if (!channel.ok()) return channel.status();
        channels.push_back(std::move(*channel));
      }
    } else {
      auto ctx = UcxContext::CreateForServer(data_channel);
      if (!ctx.ok()) return ctx.status();
      context_ = std::move(*ctx);
      // AOBJ-TRN-003: the shared-memory lane (mode NONE) beside the network lanes (mode PEER).
      auto shm = UcxContext::CreateSharedMemoryLane(data_channel);
      if (!shm.ok()) return shm.status();
      shm_context_ = std::move(*shm);
      for (int i = 0; i < shards; ++i) {
        auto worker = UcxWorker::Create(*context_, "server", shm_context_.get());
        if (!worker.ok()) return worker.status();
        if (i == 0 && !(*worker)->peer_rma_refusal().ok() && options_.log) {
          options_.log(
              absl::StrCat("event=warning message=\"data-channel peers can read and write "
                           "this process's memory (AOBJ-SEC-020): ",
                           (*worker)->peer_rma_refusal().message(), "\""));
        }
        channels.push_back(NewUcxDataChannel(worker->get(), wait_bound));
        workers_.push_back(std::move(*worker));
      }
    }
    channel_ = NewShardedDataChannel(
        std::move(channels), options_.data_isolation == ServerOptions::DataIsolation::kInProcess);
    if (options_.log) {
      options_.log(absl::StrCat("event=data_channel workers=", shards, " isolation=",
                                options_.data_isolation == ServerOptions::DataIsolation::kInProcess
                                    ? "none"
                                    : "process"));
    }
    // Spec 8.9: the fast request path, offered (FAST_PATH) only when the channel starts it.
    if (options_.fast_path) {
      fast_path_ = std::make_unique<FastPathServer>();
      if (!channel_
               ->StartFastPath([fp = fast_path_.get()](absl::string_view frame,
                                                       absl::string_view principal,
                                                       bool more_behind) {
                 fp->OnFrame(frame, principal, more_behind);
               })
               .ok()) {
        fast_path_.reset();
      }
    }
    auth_ = std::make_unique<Authenticator>(options_.credentials,
                                            absl::Milliseconds(options_.clock_skew_ms));
    // AOBJ-AUTH-017: a new run remembers no nonce of the last one (a restart forgets them all).
    auth_->RememberNothingBefore(absl::Now());
    sessions_ = std::make_unique<SessionTable>(absl::Milliseconds(options_.lease_ms),
                                               absl::Milliseconds(options_.session_tombstone_ms));
    HandlerConfig hc;
    const Limits& l = options_.limits;
    if (l.max_transfer_bytes) hc.limits.max_transfer_bytes = l.max_transfer_bytes;
    if (l.max_in_flight) hc.limits.max_in_flight = l.max_in_flight;
    if (l.inline_threshold) {
      hc.limits.inline_threshold = std::min<uint64_t>(l.inline_threshold, kMaxInlineThreshold);
    }
    if (l.max_descriptors) hc.limits.max_descriptors = l.max_descriptors;
    if (l.max_rkey_bytes) hc.limits.max_rkey_bytes = l.max_rkey_bytes;
    // AOBJ-DAT-022: CRC32C is always supported.
    hc.capabilities = {kCapInline, kCapCrc32c,   kCapCrc64Nvme, kCapMultiDescriptor, kCapOpaqueEtag,
                       kCapCancel, kCapBatchGet, kCapBatchPut,  kCapOpaquePartEtag};
    if (fast_path_ != nullptr) hc.capabilities.push_back(kCapFastPath);
    hc.server_name = options_.server_name;
    hc.list_token_key = options_.list_token_key;
    hc.gateways = options_.gateways;
    hc.max_sessions = options_.max_sessions;
    hc.max_sessions_per_principal = options_.max_sessions_per_principal;
    // Fifth hostile probe of issue 16, C: each session's endpoint holds a descriptor, so under a
    // low descriptor limit one principal's sessions, within its own quota, took every descriptor
    // and new connections of everyone were refused. The session limits are cut to what the
    // limit leaves beside the connections' reserve, and one principal to half of that.
    if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      const long room =
          std::max<long>(2, static_cast<long>(rl.rlim_cur) - 3 * kReservedDescriptors);
      if (static_cast<long>(hc.max_sessions) > room) {
        hc.max_sessions = static_cast<size_t>(room);
        hc.max_sessions_per_principal =
            std::min(hc.max_sessions_per_principal, std::max<size_t>(1, hc.max_sessions / 2));
        if (options_.log) {
          options_.log(absl::StrCat(
              "event=warning message=\"the descriptor limit (", rl.rlim_cur, ") leaves room for ",
              hc.max_sessions, " sessions (", hc.max_sessions_per_principal,
              " per access key), fewer than --max-sessions ", options_.max_sessions,
              "; raise the limit (ulimit -n) for more\""));
        }
      }
    }
    hc.max_key_bytes = std::min<size_t>(options_.max_key_bytes, kMaxKeyBytes);
    hc.max_list_page = std::min<uint32_t>(options_.max_list_page, 1000);
    hc.data_wait_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(options_.data_wait_ms, 1, std::numeric_limits<uint32_t>::max()));
    hc.session_reserve_fds = kReservedDescriptors / 2;  // a backstop to the session limits above
    hc.skew_window_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(options_.clock_skew_ms, 0, std::numeric_limits<uint32_t>::max()));
    hc.min_part_size = mpl.min_part_size;  // what multipart_ enforces, announced
    hc.max_part_size = multipart_->limits().max_part_size;
    hc.max_object_size = multipart_->limits().max_object_size;
    SchedulerLimits sl;
    sl.threads = std::max(1, options_.request_threads);
    sl.max_running_per_principal = options_.max_requests_per_principal;
    sl.max_queued = options_.max_queued_requests;
    sl.max_queued_per_principal = options_.max_queued_requests_per_principal;
    sl.max_queued_bytes = options_.max_queued_request_bytes;
    scheduler_ = std::make_unique<RequestScheduler>(sl);
    // AOBJ-FLO-009: the grant of credits follows the queues a principal's requests wait in.
    hc.pressure = [sched = scheduler_.get()](absl::string_view principal) {
      return sched->Pressure(principal);
    };
    hc.grease_errors_percent = std::clamp(options_.grease_errors_percent, 0.0, 100.0);
    hc.log = options_.log;
    handler_ =
        std::make_unique<RequestHandler>(std::move(hc), store_.get(), channel_.get(), auth_.get(),
                                         sessions_.get(), multipart_.get(), authz_.get());
    ControlService::ReadBounds read_bounds;
    read_bounds.max_total = std::max<size_t>(options_.max_reading_requests, 1);
    read_bounds.max_per_key = std::max<size_t>(options_.max_reading_requests_per_principal, 1);
    // AOBJ-SEC-029: calls marked late wait apart, in a bound that unverified connections cannot
    // fill (one first call each, and the guard's bound on their other calls), beside the others.
    // (With no configured bound on unverified connections, the listener's share of the
    // descriptors bounds them: at most three quarters of what the reserve leaves.)
    size_t unverified = options_.max_unauthenticated_connections;
    if (rlimit rl{}; unverified == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      unverified = rl.rlim_cur == RLIM_INFINITY
                       ? size_t{1} << 20
                       : static_cast<size_t>(std::max<long>(
                             static_cast<long>(rl.rlim_cur) - kReservedDescriptors, 0)) *
                             3 / 4;
    }
    read_bounds.max_late =
        unverified + static_cast<size_t>(H2AdmissionPolicy().total) + read_bounds.max_total;
    read_bounds.deadline =
        absl::Milliseconds(std::clamp<int64_t>(options_.request_read_ms, 1, 30000));
    // Half the quota for messages being read, at 8 MiB each (AOBJ-CTL-005's largest), so that
    // reading never puts gRPC under the memory pressure that makes it close other connections.
    read_bounds.slots = std::max<size_t>(
        4, std::max<uint64_t>(options_.control_memory_bytes, 16 << 20) / (16 << 20));
    // AOBJ-SEC-029: a secret of this run, shared by the guard and the service alone.
    if (options_.http2_guard) {
      std::random_device rd;
      for (int i = 0; i < 4; ++i) read_bounds.whole_mark += absl::StrFormat("%08x", rd());
    }
    service_ = ControlService::Create(handler_.get(), auth_.get(), scheduler_.get(), read_bounds);
    if (fast_path_ != nullptr) {
      fast_path_->Attach(
          handler_.get(), auth_.get(),
          [sched = scheduler_.get()](absl::string_view principal, uint64_t bytes,
                                     std::function<void()> task) {
            return sched->Submit(principal, bytes, std::move(task));
          },
          sessions_.get(), channel_.get(), nullptr,
          options_.fast_path_run_here
              ? FastPathServer::RunHereFn(
                    [sched = scheduler_.get()](absl::string_view principal,
                                               const std::function<void()>& task) {
                      return sched->TryRunHere(principal, task);
                    })
              : nullptr);
    }

    auto creds = MakeServerCredentials(options_.tls, options_.allow_plaintext);
    if (!creds.ok()) return creds.status();
    // AOBJ-SEC-019, AOBJ-SEC-023: the HTTP/2 guard reads every frame before gRPC, terminating
    // TLS itself; gRPC then speaks plaintext HTTP/2 over the guard's socket pairs.
    if (options_.http2_guard) {
      H2GuardPolicy policy;
      policy.whole_mark = read_bounds.whole_mark;
      // The guard stops (Stop, the destructor) before the service goes.
      policy.on_message_whole = [service = service_.get()](uint64_t token) {
        service->MessageArrived(token);
      };
      policy.on_message_large = [service = service_.get()](uint64_t token) {
        service->MessageLarge(token);
      };
      policy.resets_to_cut = std::clamp(options_.max_stream_resets, 2, 65536);
      policy.min_resets_to_cut = std::min(policy.min_resets_to_cut, policy.resets_to_cut);
      // The limit it advertises, and some slack for streams a client opened before its SETTINGS.
      policy.max_open_streams = kMaxStreamsPerConnection + 64;
      policy.handshake_timeout = absl::Milliseconds(kHandshakeTimeoutMs);
      auto guard = H2Guard::Create(options_.tls, policy,
                                   [this](const std::string& line) { handler_->LogEvent(line); });
      if (!guard.ok()) return guard.status();
      h2_guard_ = std::move(*guard);
      creds = grpc::InsecureServerCredentials();
    }
    // Issue 16: our own listener in front of gRPC, which survives descriptor exhaustion.
    auto listener = ControlListener::Bind(
        options_.listen_address, kReservedDescriptors, options_.max_connections_per_address,
        options_.max_unauthenticated_connections, options_.max_connections_per_principal);
    if (!listener.ok()) return listener.status();
    listener_ = std::move(*listener);
    port_ = listener_->port();
    service_->set_listener(listener_.get());
    grpc::ServerBuilder builder;
    auto acceptor = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *creds);
    // Connections that never finish their handshake, or stay idle, give their descriptor back.
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, kConnectionIdleMs);
    builder.RegisterService(service_.get());
    // AOBJ-SEC-012: what gRPC itself buffers of requests not yet handed over (their messages,
    // before anyone knows who sent them) is bounded by a memory quota; under it gRPC shrinks
    // its flow-control windows, and past it cancels streams.
    grpc::ResourceQuota quota("aobj-control");
    quota.Resize(static_cast<size_t>(std::max<uint64_t>(options_.control_memory_bytes, 16 << 20)));
    builder.SetResourceQuota(quota);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
    // Flow-control windows stay at their initial size (no bandwidth-delay probing, which grows
    // them to megabytes): what a stream can push before the server reads it stays small, so
    // calls waiting for a read slot (AOBJ-SEC-018) hold little of the quota.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    // AOBJ-CTL-005: requests are small except inline bodies.
    builder.SetMaxReceiveMessageSize(8 << 20);
    builder.SetMaxSendMessageSize(8 << 20);
    grpc_ = builder.BuildAndStart();
    if (grpc_ == nullptr || port_ == 0) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("cannot listen on ", options_.listen_address));
    }
    listener_->Start(std::move(acceptor), h2_guard_.get());
    reaper_ = std::thread([this] { Reap(); });
    if (!options_.metrics_listen.empty()) {
      auto http = MetricsHttpServer::Start(options_.metrics_listen, options_.metrics_allow_remote,
                                           [this](const std::string& path) { return Observe(path); });
      if (!http.ok()) return http.status();
      metrics_http_ = std::move(*http);
    }
    return absl::OkStatus();
  }

  int port() const override { return port_; }
  int metrics_port() const override { return metrics_http_ ? metrics_http_->port() : 0; }

  void Shutdown() override {
    {
      absl::MutexLock l(&mu_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    metrics_http_.reset();  // its handler reads everything below
    if (listener_) listener_->Stop();  // no new connections from here on
    // AOBJ-OPS-009: transfers end within the grace whatever their peers do; gRPC then cancels
    // what is left of the calls a little later, and the request threads drain.
    const int64_t grace_ms = std::max<int64_t>(options_.shutdown_grace_ms, 0);
    if (channel_) channel_->BeginShutdown(absl::Milliseconds(grace_ms));
    if (grpc_) {
      grpc_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(grace_ms + 1000));
    }
    if (h2_guard_) h2_guard_->Stop();  // gRPC has closed its ends; the clients' go too
    if (scheduler_) scheduler_->Stop();
    if (fast_path_) fast_path_->Stop();  // no fast request reaches the channel from here on
    if (reaper_.joinable()) reaper_.join();
    // Endpoints still open at shutdown (sessions that never closed) are counted, then closed with
    // the worker; stats() after Shutdown() reports this final picture.
    final_stats_ = stats();
    stopped_ = true;
    channel_.reset();  // closes every endpoint (a confined channel's processes end)
    workers_.clear();
    done_.Notify();
  }

  void Wait() override { done_.WaitForNotification(); }

  ServerStats stats() override {
    // Also the destructor's Shutdown() after an Init() that failed half-way (a bad --grant or
    // owners file): nothing below may exist yet (issue 16: that used to crash at start).
    if (stopped_ || sessions_ == nullptr || channel_ == nullptr || handler_ == nullptr) {
      return final_stats_;
    }
    ServerStats s;
    s.open_sessions = sessions_->open_sessions();
    s.endpoints = channel_->endpoint_count();
    s.rkeys_outstanding = channel_->rkeys_outstanding();
    s.requests = handler_->counters().requests.load();
    s.errors = handler_->counters().errors.load();
    s.bytes_in = handler_->counters().bytes_in.load();
    s.bytes_out = handler_->counters().bytes_out.load();
    const PeerRmaRefusals refused = channel_->peer_rma_refused();
    s.peer_rma_refused = refused.puts + refused.gets + refused.atomics;
    s.data_channels_failed = channel_->data_channels_failed();
    if (fast_path_ != nullptr) {
      const FastPathStats f = fast_path_->stats();
      s.fast_requests = f.received;
      s.fast_dropped = f.malformed + f.unroutable + channel_->fast_messages_dropped();
      s.fast_served_here = f.served_here;
    }
    return s;
  }

 private:
  // Answers the metrics endpoint (on its thread).
  HttpResponse Observe(const std::string& path) {
    HttpResponse r;
    if (path == "/metrics") {
      MetricsView view;
      view.server_name = options_.server_name;
      view.stats = stats();
      view.transfers_in_flight = sessions_->transfers_in_flight();
      view.scheduler = scheduler_->stats();
      if (h2_guard_ != nullptr) view.guard = h2_guard_->stats();
      view.methods = &handler_->counters().methods;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = RenderPrometheus(view);
    } else if (path == "/sessions") {
      r.content_type = "application/json";
      r.body = RenderSessionsJson(sessions_->List(), absl::Now());
    } else {
      r.status = 404;
      r.body = "not found: /metrics or /sessions\n";
    }
    return r;
  }

  // Releases the endpoints of expired and closed sessions (AOBJ-SES-009, AOBJ-SES-010), and
  // aborts expired multipart uploads (AOBJ-OBJ-234) a few times per expiry period.
  void Reap() {
    const absl::Duration expiry = multipart_->limits().upload_expiry;
    const absl::Duration sweep_every =
        std::clamp(expiry / 4, absl::Milliseconds(200), absl::Seconds(60));
    absl::Time next_sweep = absl::Now() + sweep_every;
    for (;;) {
      {
        absl::MutexLock l(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&shut_down_), absl::Milliseconds(200))) return;
      }
      if (expiry != absl::InfiniteDuration() && absl::Now() >= next_sweep) {
        const size_t n = multipart_->ExpireUploads(absl::Now());
        if (n > 0 && options_.log) {
          options_.log(absl::StrCat("event=uploads_expired count=", n));
        }
        next_sweep = absl::Now() + sweep_every;
      }
      handler_->FlushLogSummary();  // AOBJ-OPS-010
      service_->CutSlowReads(absl::Now());  // AOBJ-SEC-018
      for (uint64_t ep : sessions_->Reap(absl::Now())) {
        channel_->Disconnect(ep);
        if (options_.log) options_.log(absl::StrCat("event=endpoint_released endpoint=", ep));
      }
    }
  }

  ServerOptions options_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<MultipartManager> multipart_;  // borrows store_
  std::unique_ptr<BucketAuthorizer> authz_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxContext> shm_context_;  // null without a shared-memory lane
  std::vector<std::unique_ptr<UcxWorker>> workers_;  // in process only; channel_ uses them
  std::unique_ptr<DataChannel> channel_;
  std::unique_ptr<FastPathServer> fast_path_;  // null: not offered
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<SessionTable> sessions_;
  std::unique_ptr<RequestHandler> handler_;
  std::unique_ptr<RequestScheduler> scheduler_;
  std::unique_ptr<ControlService> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;  // borrows everything above
  int port_ = 0;
  // Descriptors kept for the server's own work when connections pile up (issue 16), and the
  // timeouts that give a connection's descriptor back.
  static constexpr int kReservedDescriptors = 64;
  static constexpr int kHandshakeTimeoutMs = 10000;
  static constexpr int kConnectionIdleMs = 120000;
  static constexpr int kMaxStreamsPerConnection = 256;
  std::unique_ptr<ControlListener> listener_;
  std::unique_ptr<H2Guard> h2_guard_;
  std::thread reaper_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification done_;
  std::atomic<bool> stopped_{false};
  ServerStats final_stats_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options,
                                                      std::unique_ptr<ObjectStore> store) {
  if (store == nullptr) return MakeError(ErrorCode::kInvalidArgument, "no object store");
  if (!options.list_token_key.empty() && options.list_token_key.size() < 16) {
    return MakeError(ErrorCode::kInvalidArgument, "list_token_key must be at least 16 octets");
  }
  if (options.credentials.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "no credentials configured");
  }
  auto server = std::make_unique<ServerImpl>();
  if (absl::Status s = server->Init(std::move(options), std::move(store)); !s.ok()) return s;
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace aobj
