// aobj-hostile-peer: a real client process that misbehaves on the data channel on purpose, for
// the tests of the server's failure model (spec section 13.7, docs/security.md "Data channel").
//
// It opens a session with a UCP worker that it progresses (or not) by hand, registers memory of
// the chosen kind, sends one data request and then behaves as told:
//   healthy      progresses its worker; prints the reply
//   stall        never progresses its worker (emulated RMA needs this side's progress: the
//                server's operations cannot complete); prints the reply
//   exit         progresses for --after-ms, then exits at once (_exit) with the request open
//   stall-exit   never progresses; exits at once after --after-ms
//   crash        progresses, then aborts (SIGABRT) on its progress thread after --after-ms,
//                as a client that crashes inside a UCX callback
// With --second, a stalled peer sends a second data request after the first reply and prints
// that reply too (the session's data channel is failed by then).
// With --window heap, the request's window is a heap buffer this process never registered,
// described with the registered memory's rkey (spec AOBJ-MEM-012: such a window must fail);
// after the reply the peer prints whether the server wrote or read it.
// With --tcp-port PORT, the worker address sent in OpenSession names PORT as every tcp listener.
// With --sysv-fifo ID, it names the System V segment ID (another client's receive FIFO) as its
// own; with --worker-address HEX, another client's whole worker address (the confused deputy of
// spec 5.6.1). The server's challenges then go (in part or all) to the other client, so the peer
// waits 2 s for its challenges, prints "unconfirmed: K of N challenges arrived" and sends its
// request without a proof (AOBJ-SES-024, AOBJ-SES-027).
//
// Output, one line each: "opened session=HEX", "reply N code=NAME ms=ELAPSED",
// "outside=untouched|written" (--window heap, GET).
// Loopback only: UCX_NET_DEVICES=lo unless the environment says otherwise.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "session/signer.h"
#include "transport/address_check.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/signing.h"

namespace aobj {
namespace {

namespace pb = aobj::v1;

constexpr char kUsage[] = R"(usage: aobj-hostile-peer --endpoint HOST:PORT --access-key K --secret S
    [--bucket B] [--key KEY] [--op put|get|range|multipart] [--size BYTES] [--memory ucx|heap]
    [--behaviour healthy|stall|exit|stall-exit|crash] [--after-ms N] [--timeout-ms N] [--second]
    [--window registered|heap] [--tcp-port PORT] [--sysv-fifo SEGMENT_ID]
    [--worker-address HEX]
A test tool: a client that stops progressing, exits or crashes in the middle of a transfer.
range: GET of the object's middle half; multipart: an upload of four parts, then Complete.
UCX_TLS selects the client's transports (for example tcp), UCX_ALLOC_PRIO its allocator.
--tcp-port: the worker address sent in OpenSession names PORT as its tcp listener (UCX_TLS=tcp).
--sysv-fifo: the worker address names another client's System V FIFO as its own.
--worker-address: OpenSession names this (another client's) worker address instead of its own.
)";

struct Options {
  std::string endpoint, access_key, secret, bucket = "test-bucket", key = "hostile";
  std::string op = "put", memory = "heap", behaviour = "stall", window = "registered";
  uint64_t size = 64 << 20;
  int64_t after_ms = 300;
  int64_t timeout_ms = 30000;
  int64_t tcp_port = -1;  // --tcp-port; -1: the worker address as UCX packed it
  int64_t sysv_fifo = -1;  // --sysv-fifo; -1: the worker's own FIFO
  std::string worker_address;  // --worker-address, decoded; empty: the worker's own
  // The address names someone else (--sysv-fifo, --worker-address): the proof cannot be made.
  bool foreign() const { return sysv_fifo >= 0 || !worker_address.empty(); }
  bool second = false;
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto number = [&](auto* out) {
      std::string v;
      return value(&v) && absl::SimpleAtoi(v, out);
    };
    bool ok = true;
    if (a == "--endpoint") ok = value(&o->endpoint);
    else if (a == "--access-key") ok = value(&o->access_key);
    else if (a == "--secret") ok = value(&o->secret);
    else if (a == "--bucket") ok = value(&o->bucket);
    else if (a == "--key") ok = value(&o->key);
    else if (a == "--op") ok = value(&o->op);
    else if (a == "--memory") ok = value(&o->memory);
    else if (a == "--behaviour") ok = value(&o->behaviour);
    else if (a == "--window") ok = value(&o->window);
    else if (a == "--size") ok = number(&o->size);
    else if (a == "--after-ms") ok = number(&o->after_ms);
    else if (a == "--timeout-ms") ok = number(&o->timeout_ms);
    else if (a == "--tcp-port")
      ok = number(&o->tcp_port) && o->tcp_port >= 0 && o->tcp_port <= 65535;
    else if (a == "--sysv-fifo")
      ok = number(&o->sysv_fifo) && o->sysv_fifo >= 0;
    else if (a == "--worker-address") {
      std::string hex;
      ok = value(&hex) && HexDecode(hex, &o->worker_address) && !o->worker_address.empty();
    } else if (a == "--second")
      o->second = true;
    else ok = false;
    if (!ok) return false;
  }
  return !o->endpoint.empty() && !o->access_key.empty() && o->size > 0 &&
         (o->op == "put" || o->op == "get" || o->op == "range" || o->op == "multipart") &&
         (o->op != "multipart" || o->size >= 4) && (o->memory == "ucx" || o->memory == "heap") &&
         (o->window == "registered" || o->window == "heap");
}

class Peer {
 public:
  Peer(const Options& o) : o_(o), channel_(o.endpoint), signer_(o.access_key, o.secret) {}

  int Run() {
    setenv("UCX_NET_DEVICES", "lo", 0);
    auto ctx = UcxContext::Create(DataChannelOptions{});
    if (!ctx.ok()) return Fail(ctx.status());
    context_ = std::move(*ctx);
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_MULTI;  // the progress thread and the main thread
    if (ucp_worker_create(context_->get(), &wp, &worker_) != UCS_OK) return Fail("worker");
    ucp_address_t* addr = nullptr;
    size_t len = 0;
    if (ucp_worker_get_address(worker_, &addr, &len) != UCS_OK) return Fail("address");
    std::string address(reinterpret_cast<const char*>(addr), len);
    ucp_worker_release_address(worker_, addr);
    if (o_.tcp_port >= 0) {
      auto n = RewriteTcpPorts(&address, static_cast<uint16_t>(o_.tcp_port));
      if (!n.ok()) return Fail(n.status());
      if (*n == 0) {
        fprintf(stderr,
                "aobj-hostile-peer: no tcp entry in the worker address; run with "
                "UCX_TLS=tcp\n");
        return 2;
      }
      fprintf(stderr, "aobj-hostile-peer: %zu tcp entries now name port %lld\n", *n,
              static_cast<long long>(o_.tcp_port));
    }
    if (o_.sysv_fifo >= 0) {
      auto n = RewriteSysvFifo(&address, static_cast<uint64_t>(o_.sysv_fifo));
      if (!n.ok()) return Fail(n.status());
      if (*n == 0) {
        fprintf(stderr, "aobj-hostile-peer: no System V entry in the worker address\n");
        return 2;
      }
    }
    if (!o_.worker_address.empty()) address = o_.worker_address;
    // AOBJ-SES-025: the server's endpoint challenges arrive as active messages.
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = kEndpointChallengeAmId;
    am.arg = this;
    am.cb = [](void* arg, const void*, size_t, void* data, size_t length,
               const ucp_am_recv_param_t*) -> ucs_status_t {
      auto* self = static_cast<Peer*>(arg);
      EndpointChallenge c;
      if (ParseEndpointChallenge(data, length, &c)) {
        absl::MutexLock l(&self->challenges_mu_);
        self->challenges_[c.index] = std::string(c.challenge);
      }
      return UCS_OK;
    };
    if (ucp_worker_set_am_recv_handler(worker_, &am) != UCS_OK) return Fail("am handler");

    if (o_.memory == "heap") {
      heap_.reset(static_cast<uint8_t*>(aligned_alloc(4096, (o_.size + 4095) / 4096 * 4096)));
      memset(heap_.get(), 0x5a, o_.size);
      auto m = RegisteredMemory::Register(*context_, heap_.get(), o_.size);
      if (!m.ok()) return Fail(m.status());
      mem_ = std::move(*m);
    } else {
      auto m = RegisteredMemory::Allocate(*context_, o_.size);
      if (!m.ok()) return Fail(m.status());
      mem_ = std::move(*m);
      memset(mem_->data(), 0x5a, o_.size);
    }

    if (o_.window == "heap") {
      // Never registered: a window here is outside anything the rkey covers.
      outside_.reset(static_cast<uint8_t*>(aligned_alloc(4096, (o_.size + 4095) / 4096 * 4096)));
      memset(outside_.get(), 0x5a, o_.size);
    }

    const bool progress = o_.behaviour == "healthy" || o_.behaviour == "exit" ||
                          o_.behaviour == "crash";
    if (progress) {
      progress_ = std::thread([this] {
        const absl::Time start = absl::Now();
        while (!stop_.load()) {
          // Idle, it yields the core: on a 2-core machine two spinning peers would starve the
          // healthy client the tests measure beside them, which says nothing about the server.
          if (ucp_worker_progress(worker_) == 0) absl::SleepFor(absl::Microseconds(50));
          if (started_.load() && o_.behaviour == "crash" &&
              absl::Now() - start > absl::Milliseconds(o_.after_ms)) {
            abort();  // dies on the thread that runs UCX's callbacks
          }
        }
      });
    }
    if (o_.behaviour == "exit" || o_.behaviour == "stall-exit") {
      std::thread([this] {
        while (!started_.load()) absl::SleepFor(absl::Milliseconds(1));
        absl::SleepFor(absl::Milliseconds(o_.after_ms));
        fprintf(stdout, "exiting\n");
        fflush(stdout);
        _exit(3);
      }).detach();
    }

    pb::OpenSessionRequest open;
    open.mutable_versions()->set_min(1);
    open.mutable_versions()->set_max(1);
    for (uint32_t c : {1u, 2u, 3u, 4u}) open.add_capabilities(c);
    open.set_worker_address(address);
    RawReply r = Call(Method::kOpenSession, open.SerializeAsString(), "");
    if (!r.status.ok()) return Fail(r.status);
    pb::OpenSessionResponse resp;
    resp.ParseFromString(r.body);
    session_hex_ = HexEncode(resp.session_id());
    printf("opened session=%s\n", session_hex_.c_str());
    fflush(stdout);
    if (int rc = ConfirmEndpoint(resp); rc != 0) return rc;

    started_.store(true);
    printf("request 1 sending\n");  // tests measure the server from here on
    fflush(stdout);
    int rc = DataRequest(1);
    if (o_.second) rc = DataRequest(2);
    stop_.store(true);
    if (progress_.joinable()) progress_.join();
    fflush(stdout);
    _exit(rc);  // the worker may hold a failed endpoint; skip UCX teardown
  }

 private:
  // Progresses the worker until every challenge has arrived (the stalling behaviours stall
  // only after this), then proves the endpoint (AOBJ-SES-026).
  int ConfirmEndpoint(const pb::OpenSessionResponse& resp) {
    const size_t n = resp.endpoint_challenges();
    if (n == 0 || n > kMaxEndpointChallenges) return Fail("endpoint_challenges out of range");
    std::string all;
    const absl::Time deadline = absl::Now() + (o_.foreign() ? absl::Seconds(2) : absl::Seconds(10));
    size_t have = 0;
    while (all.empty()) {
      if (ucp_worker_progress(worker_) == 0) absl::SleepFor(absl::Microseconds(50));
      {
        absl::MutexLock l(&challenges_mu_);
        have = 0;
        for (size_t i = 0; i < n; ++i) have += challenges_[i].empty() ? 0 : 1;
        if (have == n) {
          for (size_t i = 0; i < n; ++i) all += challenges_[i];
        }
      }
      if (all.empty() && absl::Now() > deadline) {
        if (!o_.foreign()) return Fail("no endpoint challenge arrived");
        printf("unconfirmed: %zu of %zu challenges arrived\n", have, n);
        fflush(stdout);
        return 0;  // the request goes without a proof
      }
    }
    pb::ConfirmEndpointRequest confirm;
    confirm.set_proof(signer_.EndpointProof(resp.session_id(), all));
    RawReply r = Call(Method::kConfirmEndpoint, confirm.SerializeAsString(), session_hex_);
    if (!r.status.ok()) return Fail(r.status);
    return 0;
  }

  int DataRequest(int n) {
    if (o_.op == "multipart") return Multipart(n);
    std::string body;
    Method method;
    if (o_.op == "put") {
      pb::PutObjectRequest req;
      req.set_bucket(o_.bucket);
      req.set_key(o_.key);
      req.set_size(o_.size);
      req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
      Checksummer sum(ChecksumAlgorithm::kCrc32c);
      sum.Update(mem_->data(), o_.size);
      req.set_checksum(sum.Finish());
      Describe(req.add_source());
      body = req.SerializeAsString();
      method = Method::kPutObject;
    } else {
      pb::GetObjectRequest req;
      req.set_bucket(o_.bucket);
      req.set_key(o_.key);
      req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
      Describe(req.add_destination());
      if (o_.op == "range") {
        req.mutable_range()->set_kind(pb::ByteRange::KIND_FIRST_LAST);
        req.mutable_range()->set_first(o_.size / 4);
        req.mutable_range()->set_last(o_.size / 4 + o_.size / 2 - 1);
      }
      body = req.SerializeAsString();
      method = Method::kGetObject;
    }
    const absl::Time start = absl::Now();
    RawReply r = Call(method, body, session_hex_);
    return Report(n, r, start);
  }

  // Create, four parts of the buffer (each a window of it), Complete; the reply line is the
  // first failure's, or Complete's.
  int Multipart(int n) {
    const absl::Time start = absl::Now();
    pb::CreateMultipartUploadRequest create;
    create.set_bucket(o_.bucket);
    create.set_key(o_.key);
    RawReply r = Call(Method::kCreateMultipartUpload, create.SerializeAsString(), session_hex_);
    if (!r.status.ok()) return Report(n, r, start);
    pb::CreateMultipartUploadResponse created;
    created.ParseFromString(r.body);
    pb::CompleteMultipartUploadRequest complete;
    complete.set_bucket(o_.bucket);
    complete.set_key(o_.key);
    complete.set_upload_id(created.upload_id());
    const uint64_t part = o_.size / 4;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint64_t offset = i * part, length = i == 3 ? o_.size - offset : part;
      pb::UploadPartRequest up;
      up.set_bucket(o_.bucket);
      up.set_key(o_.key);
      up.set_upload_id(created.upload_id());
      up.set_part_number(i + 1);
      up.set_size(length);
      up.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
      Checksummer sum(ChecksumAlgorithm::kCrc32c);
      sum.Update(mem_->data() + offset, length);
      up.set_checksum(sum.Finish());
      Describe(up.add_source());
      up.mutable_source(0)->set_address(up.source(0).address() + offset);
      up.mutable_source(0)->set_length(length);
      r = Call(Method::kUploadPart, up.SerializeAsString(), session_hex_);
      if (!r.status.ok()) return Report(n, r, start);
      pb::UploadPartResponse uploaded;
      uploaded.ParseFromString(r.body);
      pb::CompletedPart* done = complete.add_parts();
      done->set_part_number(i + 1);
      done->set_etag(uploaded.etag());
    }
    r = Call(Method::kCompleteMultipartUpload, complete.SerializeAsString(), session_hex_);
    return Report(n, r, start);
  }

  int Report(int n, const RawReply& r, absl::Time start) {
    printf("reply %d code=%s ms=%lld message=%s\n", n,
           std::string(GetErrorInfo(ErrorCodeOf(r.status)).name).c_str(),
           static_cast<long long>(absl::ToInt64Milliseconds(absl::Now() - start)),
           std::string(r.status.message()).c_str());
    if (outside_ != nullptr && o_.op == "get") {
      bool untouched = true;
      for (uint64_t i = 0; i < o_.size && untouched; ++i) untouched = outside_.get()[i] == 0x5a;
      printf("outside=%s\n", untouched ? "untouched" : "written");
    }
    fflush(stdout);
    return r.status.ok() ? 0 : 1;
  }

  void Describe(pb::MemoryDescriptor* d) {
    d->set_address(reinterpret_cast<uint64_t>(outside_ != nullptr ? outside_.get() : mem_->data()));
    d->set_length(o_.size);
    d->set_rkey(mem_->packed_rkey());
    d->set_memory_type(pb::MEMORY_TYPE_HOST);
  }

  RawReply Call(Method method, const std::string& body, const std::string& session) {
    const RequestAuth auth = signer_.Sign(MethodPath(method), session, body, absl::Now());
    return channel_.Call(MethodPath(method), body, AuthMetadata(auth),
                         absl::Milliseconds(o_.timeout_ms));
  }

  int Fail(const absl::Status& s) {
    fprintf(stderr, "aobj-hostile-peer: %s\n", s.ToString().c_str());
    return 2;
  }
  int Fail(const char* what) {
    fprintf(stderr, "aobj-hostile-peer: %s failed\n", what);
    return 2;
  }

  const Options& o_;
  RawChannel channel_;
  RequestSigner signer_;
  std::unique_ptr<UcxContext> context_;
  ucp_worker_h worker_ = nullptr;
  struct FreeDeleter {
    void operator()(uint8_t* p) const { free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> heap_;
  std::unique_ptr<uint8_t, FreeDeleter> outside_;  // --window heap
  std::unique_ptr<RegisteredMemory> mem_;
  std::thread progress_;
  std::atomic<bool> stop_{false}, started_{false};
  std::string session_hex_;
  absl::Mutex challenges_mu_;
  std::string challenges_[kMaxEndpointChallenges] ABSL_GUARDED_BY(challenges_mu_);
};

}  // namespace
}  // namespace aobj

int main(int argc, char** argv) {
  aobj::Options o;
  if (!aobj::Parse(argc, argv, &o)) {
    fputs(aobj::kUsage, stderr);
    return 2;
  }
  aobj::Peer peer(o);
  const int rc = peer.Run();
  fflush(nullptr);
  _exit(rc);  // a failure path may leave the progress thread running: skip ~Peer
}
