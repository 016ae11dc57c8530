// A scripted AOBJ/1 server for the client half of the conformance suite (conformance/
// CLIENT-DRIVER.md). It listens on 127.0.0.1 (a port the OS picks), receives every request as
// raw octets so that it can verify the signature over exactly what arrived (AOBJ-AUTH-002,
// AOBJ-AUTH-016), records every request for the case's checks and transcript, and answers like a
// small in-memory server (sessions, buckets, objects, RMA on the client's windows) unless the
// case's FakeScript tells it to misbehave.
//
// It links nothing of the reference server or store: only the protocol libraries (wire signing
// and checksums, the UCX transport wrappers, the control layer's method names and error trailer
// key).
//
// Threading: the case thread creates, scripts (before Start), inspects (Requests(), Object())
// and destroys the server; gRPC callback threads receive requests and hand each to a thread of
// its own, which answers it (so that scripted delays block nobody else). All shared state is
// under mu_. The CaseContext must outlive the server.
#ifndef AOBJ_CONFORMANCE_FAKE_SERVER_H_
#define AOBJ_CONFORMANCE_FAKE_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aobj/v1/aobj.pb.h"
#include "conformance/src/suite.h"
#include "control/rpc.h"
#include "wire/signing.h"

namespace grpc {
class Server;
}

namespace aobj {
class UcxContext;
class UcxWorker;
struct RemoteWindow;
enum class RmaDirection;
}  // namespace aobj

namespace aobj::conformance {

namespace pb = aobj::v1;

// One request as the fake server received it.
struct ReceivedRequest {
  int index = 0;                  // order of arrival, from 0
  Method method = Method::kCount;
  std::string method_name;        // "PutObject", or the path when the method is unknown
  std::vector<std::pair<std::string, std::string>> metadata;  // every entry, as received
  std::string body;               // the request message octets, as received
  RequestAuth auth;               // the authentication entries (first of each)
  bool auth_syntax_ok = false;    // AOBJ-AUTH-001 syntax
  std::string auth_syntax_error;
  bool signature_ok = false;      // HMAC over the received octets (AOBJ-AUTH-002/003/016)
  bool has_deadline = false;      // the call carried a gRPC deadline (AOBJ-CTL-010)
  absl::Time received;
  std::string outcome;            // "OK" or the error name answered
  // Data requests: what the fake server saw of the client's windows.
  uint64_t window_bytes = 0;      // sum of the descriptors' lengths
  bool rma_whole_windows_ok = false;  // every window was read (PUT) or written (GET) through
  std::string rma_error;          // the transfer's failure, if any
  // Data requests whose descriptors passed the checks: the session's data-channel endpoint
  // (one per worker address the client sent) and each window as (address, length).
  uint64_t endpoint = 0;
  std::vector<std::pair<uint64_t, uint64_t>> windows;
  absl::Time rma_end = absl::InfinitePast();  // when the server's last RMA for it ended
  bool fault_applied = false;  // a scripted Fault matched this request
};

// A multipart upload as the fake server saw it (Section 9.15).
struct UploadRecord {
  std::string upload_id, bucket, key;
  struct Part {
    std::string content;
    std::string etag;  // quoted hex MD5, as answered
  };
  std::map<uint32_t, Part> parts;
  bool completed = false;
  bool aborted = false;
};

// A fault for one request. `method` kCount matches any method but OpenSession.
enum class FaultKind {
  kError,                // fail with `code` (any 32-bit value), `grpc_code`, the trailer as given
  kErrorNoTrailer,       // fail with `grpc_code` and no aobj-error-bin trailer
  kShortTransfer,        // data reply with bytes_transferred one less than the size (GET: the last
                         // octet is not written either)
  kPartialWrite,         // GET: write only the first half, reply as if everything moved
  kWrongChecksum,        // data reply with the checksum's first octet flipped
  kPathUnspecified,      // data reply with path UNSPECIFIED
  kPathInline,           // GET reply with path INLINE and the body in inline_data, whatever
                         // accept_inline said
  kPadResponse,          // a successful reply padded with an unknown field to `pad_to` octets
  kDelay,                // wait `delay`, then answer normally (a GET's RMA happens after the wait)
  kShiftedContentRange,  // ranged GET reply whose content_range is one octet later than the
                         // resolution of the range asked for (same length)
  kWrongCompleteLength,  // ranged GET reply whose content_range.complete_length is size + 1
  kUndersizedHead,       // HeadObject answers the object's size minus one (as if the object
                         // grew before the GET that follows)
  kStoreThenFail,        // PutObjects: store every item with its first octet flipped, then fail
                         // the whole request with INTERNAL (AOBJ-OBJ-253)
};

struct Fault {
  Method method = Method::kCount;
  int nth = 1;  // the nth matching request (1-based); 0: every one
  FaultKind kind = FaultKind::kError;
  uint32_t code = 1;                      // kError: the wire value of Error.code
  grpc::StatusCode grpc_code = grpc::StatusCode::INTERNAL;
  std::string name;                       // kError: Error.name ("" = registry name)
  bool retryable = false;                 // kError: Error.retryable
  uint64_t pad_to = 0;                    // kPadResponse
  absl::Duration delay = absl::ZeroDuration();  // kDelay
  uint32_t retry_after_ms = 0;                  // kError: Error.retry_after_ms (AOBJ-FLO-006)
};

// What the fake server does; set before Start().
struct FakeScript {
  // OpenSession.
  pb::VersionRange supported_versions;    // default [1, 1]
  bool refuse_version = false;            // fail OpenSession with UNSUPPORTED_VERSION
  std::vector<uint32_t> capabilities = {1, 2, 3, 4};  // the server's own set
  bool list_all_capabilities = false;     // answer `capabilities` whatever the client offered
  // A grease capability ID among those answered (AOBJ-EXT-012), with a capability_params entry
  // and a grease field (AOBJ-EXT-017); the client must ignore all three.
  uint32_t grease_capability = 0;
  // Nonzero: the version the response names, whatever the client offered (AOBJ-SES-037).
  uint32_t answer_version = 0;
  // Nonzero: the data-channel binding the response names, whatever the client offered
  // (AOBJ-SES-041); otherwise 1 (UCX), the only one this server implements.
  uint32_t answer_binding = 0;
  // How the OpenSession response is signed (AOBJ-AUTH-020): properly, not at all, or before an
  // on-path rewrite (memory_protection turned to HARDWARE after signing).
  enum class ResponseSignature { kSigned, kAbsent, kRewrittenAfterSigning };
  ResponseSignature response_signature = ResponseSignature::kSigned;
  pb::Limits limits;                      // defaults filled in by the constructor
  uint64_t lease_ms = 30000;
  std::vector<std::string> gateways;  // listed in OpenSession (spec 5.11)
  // Listing: at most this many entries per page, whatever max_keys says.
  uint32_t list_page = 1000;
  // PUT: read the windows again after this delay and check they still hold the body
  // (AOBJ-MEM-011); zero: read once.
  absl::Duration reread_put_after = absl::ZeroDuration();
  // Every reply waits this long first.
  absl::Duration reply_delay = absl::ZeroDuration();
  // Nonzero: every successful data reply grants this many credits (AOBJ-FLO-008, field 15).
  uint32_t grant_credits = 0;
  std::vector<Fault> faults;
  // TLS on the control channel (Section 3.6) when tls_cert_file is set: the server's PEM
  // certificate chain and key; the client under test is given tls_ca_file as AOBJ_TLS_CA.
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  FakeScript();
};

struct StoredObject {
  std::string content;
  std::string etag;  // quoted hex MD5
  int64_t last_modified_ms = 0;
};

class FakeServer {
 public:
  // Credentials the client under test is given; `ctx` receives the transcript and must outlive
  // the server.
  FakeServer(CaseContext& ctx, FakeScript script, std::string access_key_id, std::string secret);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  // Seeds the in-memory store (before or after Start).
  void AddBucket(const std::string& bucket);
  void AddObject(const std::string& bucket, const std::string& key, const std::string& content);

  // Starts listening on 127.0.0.1:0 and the UCX worker.
  absl::Status Start();
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

  // Snapshots for the case's checks.
  std::vector<ReceivedRequest> Requests();
  std::optional<StoredObject> Object(const std::string& bucket, const std::string& key);
  // Continuation tokens issued, in order, and the (bucket, prefix, delimiter) of each.
  struct IssuedToken {
    std::string token, bucket, prefix, delimiter, next_key;
  };
  std::vector<IssuedToken> Tokens();
  // Every multipart upload created, in order.
  std::vector<UploadRecord> Uploads();
  // Waits until every request received so far has been answered (a scripted delay may still
  // hold one after the client has exited); false after `timeout`.
  bool WaitAnswered(absl::Duration timeout);
  // The session IDs issued (lower-case hex), in order.
  std::vector<std::string> SessionIds();
  // How many data-channel endpoints the server created to the client's workers (one per
  // session opened).
  int endpoints_connected();
  // The most data requests ever in progress together (AOBJ-FLO-001).
  int max_data_in_flight();
  // AOBJ-FLO-010, with FakeScript::grant_credits: the data requests that arrived more than
  // kGrantSlack after the first granting reply was sent and found as many others that arrived
  // after that point still outstanding as the grant allows (a client that follows the grant waits
  // for a reply before it sends another), and the first of them described.
  static constexpr absl::Duration kGrantSlack = absl::Milliseconds(250);
  int data_requests_over_grant(std::string* first = nullptr);

  const std::string& tls_ca_file() const { return script_.tls_ca_file; }
  const std::string& access_key_id() const { return access_key_id_; }
  const std::string& secret() const { return secret_; }

  // Called on a request thread (public for the gRPC glue in fake_server.cc).
  struct Answer {
    grpc::Status status;
    std::string body;
    bool has_trailer = false;
    std::string trailer;  // serialized aobj.v1.Error
    std::string response_signature;  // `aobj-response-signature`, when not empty
    std::string shown;    // transcript text of the reply
  };
  Answer Handle(Method method, const std::string& path,
                std::vector<std::pair<std::string, std::string>> metadata, std::string body,
                bool has_deadline);
  void Spawn(std::function<void()> fn);

 private:
  struct Session {
    std::string principal;
    uint64_t endpoint = 0;
    std::set<uint32_t> capabilities;
    pb::Limits limits;
    std::string endpoint_proof;  // what ConfirmEndpoint must carry (AOBJ-SES-026)
    bool dead = false;
    ErrorCode dead_code = ErrorCode::kNoSuchSession;
  };
  Answer Process(ReceivedRequest& rec);
  Answer OpenSession(ReceivedRequest& rec);
  Answer PutObject(ReceivedRequest& rec, const Session& s, const Fault* fault);
  Answer GetObject(ReceivedRequest& rec, const Session& s, const Fault* fault);
  Answer GetObjects(ReceivedRequest& rec, const Session& s, const Fault* fault);
  Answer PutObjects(ReceivedRequest& rec, const Session& s, const Fault* fault);
  Answer List(ReceivedRequest& rec, const Session& s);
  Answer CreateUpload(ReceivedRequest& rec);
  Answer UploadPart(ReceivedRequest& rec, const Session& s, const Fault* fault);
  Answer CompleteUpload(ReceivedRequest& rec);
  Answer AbortUpload(ReceivedRequest& rec);
  // The upload `id` of bucket/key while in progress (not completed or aborted), or null.
  UploadRecord* FindUpload(const std::string& id, const std::string& bucket,
                           const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Receives a PutObject or UploadPart body, inline or by RMA read of `source`; the error to
  // answer, or nullopt with *body and *path set.
  std::optional<Answer> ReceiveBody(
      ReceivedRequest& rec, const Session& s, uint64_t size,
      const google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>& source,
      const std::string& inline_data, std::string* body, pb::TransferPath* path);
  // Checks a data request's descriptors (Section 7.2) into *windows and records them in `rec`;
  // the error to answer, or nullopt.
  std::optional<Answer> TakeWindows(
      ReceivedRequest& rec, const Session& s,
      const google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>& descriptors, uint64_t size,
      std::vector<RemoteWindow>* windows);
  // Moves the first `n` octets of `local` to (kWrite) or from (kRead) the windows, in ordered
  // fill; records the end and any failure in `rec`; the error to answer, or nullopt.
  std::optional<Answer> Move(ReceivedRequest& rec, const Session& s,
                             const std::vector<RemoteWindow>& windows, RmaDirection direction,
                             char* local, uint64_t n);
  const Fault* MatchFault(Method method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static Answer Error(ErrorCode code, const std::string& message);
  static Answer Ok(const google::protobuf::Message& m);

  CaseContext& ctx_;
  FakeScript script_;
  std::string access_key_id_;
  std::string secret_;
  std::string signing_key_;
  std::unique_ptr<UcxContext> ucx_;
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> grpc_;
  int port_ = 0;

  absl::Mutex mu_;
  std::vector<ReceivedRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> buckets_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, StoredObject> objects_ ABSL_GUARDED_BY(mu_);
  std::vector<IssuedToken> tokens_ ABSL_GUARDED_BY(mu_);
  std::vector<UploadRecord> uploads_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> session_ids_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> fault_hits_ ABSL_GUARDED_BY(mu_);  // fault index -> matching requests
  int endpoints_ ABSL_GUARDED_BY(mu_) = 0;
  int data_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_data_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int late_outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // data requests since the grant + slack
  absl::Time first_grant_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int over_grant_ ABSL_GUARDED_BY(mu_) = 0;
  std::string over_grant_first_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// ---- the client under test ------------------------------------------------------------------

struct ClientRun {
  std::string command;   // the shell command line run
  int exit_code = -1;    // -1 when killed
  bool timed_out = false;
  std::string out, err;  // its standard output and error
  std::string error_name;  // NAME of the first "error: NAME" line, or ""
  double seconds = 0;
  bool ok() const { return exit_code == 0 && !timed_out; }
};

// Runs `<client_exec> <args...>` through /bin/sh -c with the driver contract's environment
// (CLIENT-DRIVER.md), kills its process group after `limit`, and records the run in the
// transcript. Arguments are quoted for the shell.
ClientRun RunClient(CaseContext& ctx, const FakeServer& server,
                    const std::vector<std::string>& args,
                    absl::Duration limit = absl::Seconds(60));

}  // namespace aobj::conformance

#endif  // AOBJ_CONFORMANCE_FAKE_SERVER_H_
