// Request handling of the AOBJ/1 server, independent of gRPC: bytes and authentication in,
// response bytes or an error out. The gRPC service (control_service.cc), the fast path
// (fast_path.cc) and the fuzzers all drive it.
//
// Threading: Handle() is called from many request threads at once; all state it touches is
// thread-safe (store, data channel, authenticator, session table, counters).
// Ownership: every dependency is borrowed and must outlive the handler.
#ifndef AOBJ_SERVER_HANDLER_H_
#define AOBJ_SERVER_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "server/authz.h"
#include "server/bucket_scope.h"
#include "server/data_channel.h"
#include "server/handler_util.h"
#include "server/metrics.h"
#include "server/staged_transfer.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "store/multipart.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/descriptor.h"
#include "wire/methods.h"
#include "wire/protocol.h"

namespace aobj {

struct HandlerConfig {
  SessionLimits limits;
  std::vector<uint32_t> capabilities;  // what this server supports
  uint32_t min_version = kProtocolVersion;
  uint32_t max_version = kProtocolVersion;
  uint64_t staging_bytes = 8 << 20;   // chunk size for stores without direct buffers
  uint64_t max_rma_piece = 64 << 20;  // AOBJ-DAT-012
  // RMA is issued in steps of at most this many octets, and the call is checked for
  // cancellation and deadline between steps (AOBJ-DAT-016, AOBJ-DAT-155).
  uint64_t cancel_check_bytes = 16 << 20;
  size_t max_sessions = 4096;                // open sessions at once (Table 1: SLOW_DOWN beyond)
  size_t max_sessions_per_principal = 1024;  // of one access key (AOBJ-SEC-006)
  size_t max_key_bytes = 1024;               // longest object key accepted (AOBJ-OBJ-159)
  uint32_t max_list_page = 1000;             // largest page a listing returns (AOBJ-OBJ-159)
  uint32_t data_wait_ms = 0;     // announced in Limits (AOBJ-OPS-008); 0 = not announced
  uint32_t skew_window_ms = 0;   // announced in Limits (AOBJ-AUTH-019); 0 = not announced
  uint64_t min_part_size = 0;    // announced in Limits (AOBJ-OBJ-235); 0 = not announced
  uint64_t max_part_size = 0;    // announced in Limits (AOBJ-OBJ-256); 0 = not announced
  uint64_t max_object_size = 0;  // announced in Limits (AOBJ-OBJ-256); 0 = not announced
  // OpenSession answers SLOW_DOWN while fewer descriptors than this are free (each session's
  // endpoint holds one; the connections and the store need the rest). 0: not checked.
  long session_reserve_fds = 0;
  // AOBJ-EXT-012: a grease capability ID in every OpenSession response.
  bool grease = true;
  // AOBJ-EXT-019: the percentage of failures that are not retryable answered with a grease code
  // instead (ServerOptions::grease_errors_percent); 0: none.
  double grease_errors_percent = 0;
  std::string server_name;
  std::string list_token_key;  // ServerOptions::list_token_key; empty: random
  std::function<std::vector<std::string>()> gateways;  // ServerOptions::gateways
  // How full the request queues of a principal are, 0 to 1 (RequestScheduler::Pressure); the
  // credits of each data reply follow it (AOBJ-FLO-009). Unset: the whole max_in_flight.
  std::function<double(absl::string_view principal)> pressure;
  std::function<void(const std::string&)> log;
};

// The body fields of a request that uploads bytes (PutObject, UploadPart), borrowed from the
// parsed request, which must outlive it.
struct BodyRequest {
  uint64_t size = 0;
  const Descriptors* source = nullptr;
  const std::string* inline_data = nullptr;
  aobj::v1::ChecksumAlgorithm checksum_algorithm = aobj::v1::CHECKSUM_ALGORITHM_UNSPECIFIED;
  const std::string* checksum = nullptr;

  // Any request message with the fields size, source, inline_data, checksum_algorithm and
  // checksum.
  template <class Req>
  static BodyRequest Of(const Req& req) {
    return {req.size(), &req.source(), &req.inline_data(), req.checksum_algorithm(),
            &req.checksum()};
  }
};

// How a validated body will move (RequestHandler::PlanBody).
struct BodyPlan {
  ChecksumAlgorithm algo = ChecksumAlgorithm::kCrc32c;
  aobj::v1::TransferPath path = aobj::v1::TRANSFER_PATH_UNSPECIFIED;
  std::vector<TransferPiece> pieces;  // RMA path only
  // The ETag the body gets: its MD5 (AOBJ-OBJ-005, AOBJ-OBJ-207), or, with no MD5 pass, an
  // opaque one: a PutObject's (AOBJ-OBJ-016) or a part's (AOBJ-OBJ-254).
  enum class Etag { kMd5, kOpaque, kOpaquePart };
  Etag etag = Etag::kMd5;
};

// What RequestHandler::ReceiveBody received and verified.
struct ReceivedBody {
  std::string checksum;  // in the request's algorithm, wire encoding; equals the request's
  std::string etag;      // quoted lower-case hex MD5 of the body (AOBJ-OBJ-005), or opaque
                         // (AOBJ-OBJ-016, AOBJ-OBJ-254) when the plan said so
  uint32_t crc32c = 0;   // CRC32C of the body, whatever the request's algorithm
};

// What the service knows about one call beyond its bytes (spec section 3.7). Borrowed by
// RequestHandler::Handle for the duration of the call; `cancelled` is called from the request
// thread and must be thread-safe.
struct CallControl {
  // True once the gRPC call was cancelled or its deadline passed (ServerContext::IsCancelled).
  std::function<bool()> cancelled;
  absl::Time deadline = absl::InfiniteFuture();  // the call's gRPC deadline
  // RenewSession only: the nonce (hex) that an `aobj-cancel` metadata entry names
  // (AOBJ-DAT-156); empty when absent.
  std::string cancel_nonce;
  // Set when the request runs on the thread that delivers the data channel's messages (spec 8.9,
  // FastPathServer): it must not wait on RMA, which that thread may be the one to progress. A
  // request that would is refused SLOW_DOWN before its first RMA operation.
  bool must_not_wait = false;
  // Set once the request's signature verified (whatever the request's result then): its
  // connection carries a known principal's requests (ControlListener::MarkAuthenticated).
  mutable bool signature_verified = false;
};

// The data requests of every session that are in progress, by session and nonce, so that a
// cancellation named in a later call reaches the request (AOBJ-DAT-156). A cancellation that
// arrives before its request is remembered (bounded) and fails the request when it arrives.
// Thread-safe.
class InFlightRequests {
 public:
  using Flag = std::shared_ptr<std::atomic<bool>>;
  // A running request's record, ended when it goes (every return of the request ends it).
  class Entry {
   public:
    ~Entry() { owner_->End(id_); }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    // Becomes true when the request is cancelled (already true when a cancellation came first).
    const Flag& flag() const { return flag_; }

   private:
    friend class InFlightRequests;
    Entry(InFlightRequests* owner, std::string id, Flag flag)
        : owner_(owner), id_(std::move(id)), flag_(std::move(flag)) {}
    InFlightRequests* owner_;
    std::string id_;
    Flag flag_;
  };
  // Records a request until the returned entry goes.
  Entry Begin(const std::string& session_hex, const std::string& nonce_hex);
  // Cancels the request; true when it was in progress.
  bool Cancel(const std::string& session_hex, const std::string& nonce_hex);
  size_t size();

  static constexpr size_t kMaxEarlyCancels = 1024;

 private:
  void End(const std::string& id);
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Flag> running_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> early_ ABSL_GUARDED_BY(mu_);  // cancellations seen before requests
};

// One data request's view of its call: whether it must stop moving bytes (AOBJ-DAT-016).
class ActiveCall {
 public:
  // `control` may be null (no cancellation source: fuzzers, tests); it must outlive this.
  ActiveCall(const CallControl* control, InFlightRequests::Flag flag)
      : control_(control), flag_(std::move(flag)) {}
  // OK, or the CANCELLED / DEADLINE_EXCEEDED error the request ends with.
  absl::Status Check() const;
  // CallControl::must_not_wait.
  bool must_not_wait() const { return control_ != nullptr && control_->must_not_wait; }

 private:
  const CallControl* control_;
  InFlightRequests::Flag flag_;
};

struct HandlerCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  MethodMetrics methods;  // per method and error code, for the metrics endpoint
};

class RequestHandler {
 public:
  // `multipart` (optional) serves the multipart operations; without it they fail with INTERNAL.
  RequestHandler(HandlerConfig config, ObjectStore* store, DataChannel* channel,
                 Authenticator* auth, SessionTable* sessions, MultipartManager* multipart = nullptr,
                 BucketAuthorizer* authz = nullptr);

  // Handles one request. On error, `*supported` is set to the server's version range when the
  // error is UNSUPPORTED_VERSION (AOBJ-SES-003). `call` (may be null: never cancelled) must
  // outlive the call; a data request whose call is cancelled stops its RMA between steps and
  // returns only after every RMA operation it issued has completed (AOBJ-DAT-016,
  // AOBJ-DAT-155).
  absl::StatusOr<std::string> Handle(Method method, const RequestAuth& auth, absl::string_view body,
                                     absl::Time now, aobj::v1::VersionRange* supported,
                                     const CallControl* call = nullptr);

  // Whether `method` with `body` (not yet verified) can be answered without waiting on RMA or a
  // store's I/O, so that it may run on the thread that delivered it (spec 8.9): on a store that
  // answers from memory, a HeadObject, a PutObject whose body is inline (and whose key holds no
  // larger object, whose release could unmap a large buffer), or a GetObject that the session
  // takes inline, of at most kAnsweredHereBytes. Reads at most the object's size from the
  // store; has no other effect. If it guessed wrong (the object grew), Handle refuses
  // under CallControl::must_not_wait before any RMA.
  bool AnswersWithoutWaiting(Method method, const SessionState& s, absl::string_view body);
  static constexpr uint64_t kAnsweredHereBytes = 64 << 10;

  // Records a request the server answered `error` without handling it (its queue was full,
  // AOBJ-SEC-013): counted and logged as a failed request. Returns `error`.
  absl::Status Refuse(Method method, const RequestAuth& auth, absl::Status error);

  // AOBJ-OPS-010: logs how many failures before authentication were left out of the log in the
  // last second, if any (the reaper calls it, so a flood that stopped is still reported).
  void FlushLogSummary();
  // One line of the server's log, for the transport's own events.
  void LogEvent(const std::string& line) { Log(line); }

  InFlightRequests& in_flight() { return in_flight_; }

  HandlerCounters& counters() { return counters_; }
  const HandlerConfig& config() const { return config_; }

 private:
  // AOBJ-EXT-019: `error`, or, for config_.grease_errors_percent of the failures it may replace,
  // a grease code whose message names the code replaced.
  absl::Status GreaseError(absl::Status error) const;
  // Counts and logs a failed request (AOBJ-OPS-003).
  void RecordFailure(Method method, const RequestAuth& auth, const absl::Status& error);
  // Whether one more line about the requests of `access_key_id` fits in this second's budget
  // (kKeyLogLinesPerSecond, shared by its failures, cancellations, refused endpoints, session
  // and multipart events); if not, it is counted for the key's summary line (AOBJ-OPS-010). False
  // when the server does not log.
  bool KeyLogLine(const std::string& access_key_id);
  absl::StatusOr<std::string> Dispatch(Method method, const RequestAuth& auth,
                                       absl::string_view body, absl::Time now,
                                       const CallControl* call);
  // The one way a handler reads its request: parsed once (INVALID_ARGUMENT when the octets are
  // not one), then every bucket the typed request names authorized before anything else is done
  // with it (AOBJ-SEC-008; server/bucket_scope.h).
  template <typename Request>
  absl::Status Admit(const SessionState& s, absl::string_view body, Request* req) {
    if (absl::Status parsed = Parse(body, req); !parsed.ok()) return parsed;
    return Authorize(s, BucketsNamed(*req));
  }
  absl::Status Authorize(const SessionState& s, const BucketNeeds& needs);
  // Runs `batch` in steps of at most cancel_check_bytes, checking `call` before each step
  // (AOBJ-DAT-016). Each step returns only when UCX no longer touches its memory, so on a stop
  // no RMA of the request is outstanding when this returns (AOBJ-DAT-155).
  absl::Status ExecuteRma(const SessionState& s, const RmaBatch& batch, const ActiveCall& call);
  absl::StatusOr<std::string> OpenSession(const RequestAuth& auth, absl::string_view body,
                                          absl::Time now);
  absl::StatusOr<std::string> PutObject(const SessionState& s, absl::string_view body,
                                        const ActiveCall& call);
  // GetObject and its transfer step (handler_get.cc): the selected octets inline into
  // `*inline_data` or by RMA into the request's windows, checksummed into `sum` when not null.
  absl::StatusOr<std::string> GetObject(const SessionState& s, absl::string_view body,
                                        const ActiveCall& call);
  absl::Status SendOctets(const SessionState& s, const aobj::v1::GetObjectRequest& req,
                          ObjectReader& reader, const GetSelection& sel, Checksummer* sum,
                          std::string* inline_data, const ActiveCall& call);
  // Validates the body fields of an upload before anything is admitted or touched: size
  // (AOBJ-DAT-006), checksum fields (AOBJ-DAT-020), path (AOBJ-DAT-007, AOBJ-DAT-011,
  // AOBJ-MEM-022) and descriptors (section 7.2). Defined in body.cc.
  absl::StatusOr<BodyPlan> PlanBody(const SessionState& s, const BodyRequest& body);
  // Moves a planned body into `writer` (inline or by RMA) and verifies its checksum
  // (AOBJ-DAT-002, AOBJ-DAT-005). Never commits: on error the caller drops the writer.
  absl::StatusOr<ReceivedBody> ReceiveBody(const SessionState& s, const BodyRequest& body,
                                           const BodyPlan& plan, ObjectWriter* writer,
                                           const ActiveCall& call);
  // Multipart upload (spec section 9.15); defined in handler_multipart.cc.
  absl::StatusOr<std::string> CreateMultipartUpload(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> UploadPart(const SessionState& s, absl::string_view body,
                                         const ActiveCall& call);
  absl::StatusOr<std::string> CompleteMultipartUpload(const SessionState& s,
                                                      absl::string_view body);
  absl::StatusOr<std::string> AbortMultipartUpload(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> ListParts(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> ListMultipartUploads(const SessionState& s, absl::string_view body);
  absl::StatusOr<MultipartManager*> Multipart();
  // The manager of the upload a request names (bucket, key, upload_id), once the three are well
  // formed: UploadPart, Complete, Abort and ListParts begin with it.
  absl::StatusOr<MultipartManager*> UploadScope(const std::string& bucket, const std::string& key,
                                                const std::string& upload_id);
  // S3 object semantics of issue 4 (spec sections 9.8 to 9.14): HeadObject with conditions,
  // DeleteObjects and PrepareWrite in handler_object.cc; ListBuckets and ListObjectsV2 in
  // handler_list.cc; CopyObject in handler_copy.cc.
  absl::StatusOr<std::string> HeadObject(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> DeleteObjects(const SessionState& s, absl::string_view body);
  // GetObjects (spec section 9.16); defined in handler_batch.cc.
  absl::StatusOr<std::string> GetObjects(const SessionState& s, absl::string_view body,
                                         const ActiveCall& call);
  // PutObjects (spec section 9.17); defined in handler_batch.cc.
  absl::StatusOr<std::string> PutObjects(const SessionState& s, absl::string_view body,
                                         const ActiveCall& call);
  absl::StatusOr<std::string> ListBuckets(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> ListObjectsV2(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> CopyObject(const SessionState& s, absl::string_view body);
  // The WriteOptions of a PutObject or a CopyObject destination: user metadata validated and
  // normalized (AOBJ-OBJ-120..123) and write conditions validated (AOBJ-OBJ-133) and checked
  // once against the current object before any body moves (AOBJ-OBJ-136). The store checks the
  // conditions again at commit (AOBJ-OBJ-134).
  absl::StatusOr<WriteOptions> PrepareWrite(
      const std::string& bucket, const std::string& key, const std::string& content_type,
      const google::protobuf::Map<std::string, std::string>& user_metadata,
      const aobj::v1::Preconditions& preconditions);
  // ValidateObjectKey plus this server's own key-length limit (AOBJ-OBJ-159).
  absl::Status CheckKey(absl::string_view key) const;
  void Log(const std::string& line);

  HandlerConfig config_;
  ObjectStore* store_;
  DataChannel* channel_;
  Authenticator* auth_;
  SessionTable* sessions_;
  MultipartManager* multipart_;  // may be null
  BucketAuthorizer* authz_;      // may be null: every principal may do everything
  StagingPool staging_;
  HandlerCounters counters_;
  // Serializes CreateBucket and DeleteBucket, each with its owner record (AOBJ-SEC-016).
  absl::Mutex buckets_mu_;
  // Rate of log lines for failures before authentication (AOBJ-OPS-010).
  static constexpr int kUnverifiedLogLinesPerSecond = 20;
  absl::Mutex log_mu_;
  absl::Time log_window_start_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
  int log_window_lines_ ABSL_GUARDED_BY(log_mu_) = 0;
  uint64_t log_suppressed_ ABSL_GUARDED_BY(log_mu_) = 0;
  // Failures and cancellations after verification, per access key (fifth hostile probe, L1: one
  // tenant's failing requests wrote 0.5 MB of log a second; seventh probe: RenewSessions of 16
  // cancel entries each wrote 780,800 lines, 119 MB, in 15 s): kKeyLogLinesPerSecond a second for
  // each of up to
  // kLogKeys keys, the keys beyond them sharing one budget; the rest summarized per key.
  static constexpr int kKeyLogLinesPerSecond = 20;
  static constexpr size_t kLogKeys = 256;
  struct KeyLogBudget {
    int lines = 0;
    uint64_t suppressed = 0;
  };
  absl::flat_hash_map<std::string, KeyLogBudget> key_log_ ABSL_GUARDED_BY(log_mu_);
  InFlightRequests in_flight_;
  // Authenticates continuation tokens (AOBJ-OBJ-107): the configured key, else random per
  // process, so that tokens do not survive a restart of the server (AOBJ-OBJ-113).
  const std::string list_token_key_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_HANDLER_H_
