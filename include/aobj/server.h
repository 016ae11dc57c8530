// The AOBJ/1 server stack, embeddable (spec: the whole server side).
//
// Server::Start() listens for the gRPC control channel, creates the UCX data-channel worker and
// serves requests against an ObjectStore until Shutdown(). Requests run on a pool of threads;
// all RMA runs on the data channel's progress thread.
//
// Threading: Start() and Shutdown() from one owning thread; Wait() from any one thread (it returns
// once Shutdown() ran); port(), metrics_port() and stats() from any thread.
// Ownership: the server owns the store; ServerOptions is copied. `log` is called from request
// threads concurrently and must be thread-safe.
// Errors: Start() fails with INVALID_ARGUMENT (no store, no credentials, inconsistent options)
// or with the error of the part that could not start (INTERNAL when it cannot listen; the UCX,
// TLS, authorization and multipart-area setup report their own codes).
// Peer input never fails the process: a bad request fails that request (spec section 11).
// Cancellation (spec sections 3.7, 8.8): a data request whose gRPC call is cancelled, passes its
// deadline, or is named by an `aobj-cancel` entry stops issuing RMA between steps of at most
// 16 MiB (AOBJ-DAT-016, AOBJ-DAT-156) and is answered CANCELLED or DEADLINE_EXCEEDED only after
// every RMA operation it issued has completed (AOBJ-DAT-155).
#ifndef AOBJ_SERVER_H_
#define AOBJ_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/store.h"
#include "aobj/types.h"

namespace aobj {

// Bucket authorization (spec section 14.8). kOpen: every principal may do everything. kOwner:
// a bucket belongs to the principal that created it; grants open it to others.
enum class AuthorizationPolicy { kOpen, kOwner };
enum class GrantAccess { kRead, kWrite, kOwner };
struct BucketGrant {
  std::string principal;  // access key id
  std::string bucket;
  GrantAccess access = GrantAccess::kRead;
};

struct ServerOptions {
  // host:port of the control channel. Port 0 picks a free port (see Server::port()).
  std::string listen_address = "127.0.0.1:7878";  // AOBJ-OPS-001: loopback unless configured
  // TLS on the control channel. Without it the server refuses to start unless allow_plaintext
  // is set (AOBJ-CTL-011).
  TlsOptions tls;
  bool allow_plaintext = false;
  // access key id -> secret (only derived signing keys are kept in memory).
  std::map<std::string, std::string> credentials;
  // The server's limits; zero fields take the defaults of the spec's reference values.
  Limits limits;
  int64_t lease_ms = 30000;           // AOBJ-SES-008
  // AOBJ-OPS-008: the longest one step of RMA (at most 16 MiB) may wait on a peer, plus its
  // octets at 50 MB/s; past it the session's data channel fails (DATA_CHANNEL_UNAVAILABLE for its
  // later data requests) and the request fails TRANSFER_FAILED.
  int64_t data_wait_ms = 10000;
  // AOBJ-OPS-009: on Shutdown(), transfers still running after this long are ended (their
  // sessions' data channels fail), so the server stops within a bound whatever its peers do.
  int64_t shutdown_grace_ms = 2000;
  int64_t clock_skew_ms = 300000;     // AOBJ-AUTH-007
  // AOBJ-EXT-019, for testing clients only: this percentage (0 to 100) of failures whose code
  // is not retryable, UNSUPPORTED_VERSION and NEGOTIATION_FAILED aside, is answered with a
  // random grease error code instead. 0 (the default): never.
  double grease_errors_percent = 0;
  int64_t session_tombstone_ms = 600000;
  // Control connections of one peer address at once; further ones are closed at accept
  // (AOBJ-SEC-012). 0 = no limit. Local processes all share 127.0.0.1.
  size_t max_connections_per_address = 1024;
  // Control connections that have not yet carried a request whose signature verified, from all
  // addresses together (AOBJ-SEC-012); past it, one of them is cut for a new connection, or the
  // new one is closed. Also at most three quarters of what the descriptor limit leaves room for.
  // 0 = only that. The bound divided by a flood's rate of new connections is how long a client's
  // connection has to carry its first verified request under that flood (twenty-first hostile
  // probe, L1: at 1024, 750 new connections a second cut every first request slower than a
  // second; each connection held costs about 50 KB).
  size_t max_unauthenticated_connections = 4096;
  // Control connections that carried a verified request of one principal; past it, the
  // principal's oldest connection is cut. Also at most a quarter of what the descriptor limit
  // leaves room for. 0 = only that.
  size_t max_connections_per_principal = 1024;
  // AOBJ-SEC-019, AOBJ-SEC-023: the HTTP/2 guard in front of gRPC (it terminates TLS and reads
  // every frame header first). A connection whose client resets this many streams before the
  // server ended them, more than four times as many as it let end, is closed before gRPC sees
  // the last; each such cut halves the number for the address's next connections, for a minute.
  // The guard also bounds the calls under way of connections that have not carried a verified
  // request (AOBJ-SEC-026: 8 each, 32 an address, 256 in all).
  // Off: gRPC gets the connections itself (for measuring the guard's cost).
  bool http2_guard = true;
  int max_stream_resets = 64;
  int request_threads = 10;  // requests handled at once; each data request holds one throughout
  // Fairness and pre-authentication bounds (spec section 14.6, AOBJ-SEC-012 to AOBJ-SEC-014).
  // Requests of one access key running at once; 0 = request_threads - 2 (at least 1), so two
  // threads always stay for other principals.
  int max_requests_per_principal = 0;
  // Requests waiting for a thread, in all and of one access key, and the bytes of their
  // messages; SLOW_DOWN beyond.
  size_t max_queued_requests = 4096;
  size_t max_queued_requests_per_principal = 1024;
  uint64_t max_queued_request_bytes = uint64_t{256} << 20;
  // Memory gRPC may use for connections and requests not yet handed to the server (a gRPC
  // resource quota; at least 16 MiB).
  uint64_t control_memory_bytes = uint64_t{128} << 20;
  // Calls whose claim names a known access key but whose message has not arrived whole yet
  // (AOBJ-SEC-018): at most this many in all and of one claimed key; past either, the oldest
  // (of that key, or of the key holding the most) is ended with SLOW_DOWN; one whose message is
  // not whole this long after its headers is ended with DEADLINE_EXCEEDED (at most 30 s;
  // SLOW_DOWN if it waited for a read slot until then). With the HTTP/2 guard, a call whose
  // message arrived whole with its headers, or later once it has come, is read at once; a call
  // whose message the guard saw still coming waits for it without a read slot, up to
  // max_reading_requests more such calls in all (AOBJ-SEC-029).
  size_t max_reading_requests = 1024;
  size_t max_reading_requests_per_principal = 128;
  int64_t request_read_ms = 20000;
  size_t max_sessions = 4096;         // open sessions at once; SLOW_DOWN beyond
  size_t max_sessions_per_principal = 1024;  // of one access key; SLOW_DOWN beyond
  size_t max_key_bytes = 1024;   // longest object key (at most S3's 1024); KEY_TOO_LONG beyond
  uint32_t max_list_page = 1000; // largest listing page (at most 1000); INVALID_ARGUMENT beyond
  AuthorizationPolicy authorization = AuthorizationPolicy::kOpen;
  std::vector<BucketGrant> grants;
  // With kOwner: where bucket owners are kept across restarts (empty: in memory only).
  std::string owners_file;
  DataChannelOptions data_channel;
  // Where the data channel runs (spec 14.3, AOBJ-SEC-021). kProcessPerPrincipal (the default):
  // every UCP worker a peer's octets reach runs in an aobj-data-worker process of its own, one
  // per access key, so that a peer that writes UCX's wire format itself can harm only that
  // process and its own tenant (docs/security.md "Data channel confinement"); the server also
  // makes itself undumpable, so that such a process cannot ptrace it. The aobj-data-worker
  // executable must be found (data_worker_path). kInProcess: the workers run in the server's
  // own process (faster by one copy per transfer), which declares every data-channel peer
  // trusted: only for clients whose UCX the operator trusts.
  enum class DataIsolation { kInProcess, kProcessPerPrincipal };
  DataIsolation data_isolation = DataIsolation::kProcessPerPrincipal;
  // UCX workers that move data, each with its own progress thread (and, under
  // kProcessPerPrincipal, its own processes: a principal then has up to this many, within the
  // 64 data-channel processes the server runs in all); a session's endpoint goes to the one with
  // the fewest live endpoints that has room. 0: one per 4 cores, at least 2 (1 on a
  // one-core machine) and at most 16 (docs/architecture.md, "Cores").
  int data_workers = 0;
  // The fast request path (spec section 8.9, capability FAST_PATH): clients that negotiate it
  // send small object requests as UCX active messages on their data endpoint instead of gRPC
  // calls, with the same signatures, checks and errors.
  bool fast_path = true;
  // With it, a fast request that waits on nothing (a small GET, PUT or HEAD on a store that
  // answers from memory) runs on the thread that received it when a request thread would start
  // it at once, under the same bounds (RequestScheduler::TryRunHere); false: every fast request
  // goes through the request queue.
  bool fast_path_run_here = true;
  // The aobj-data-worker executable; empty: $AOBJ_DATA_WORKER, beside the running executable,
  // the build tree's, the installed one.
  std::string data_worker_path;
  // Multipart uploads in progress (spec section 9.15): kept in this directory, where they
  // survive a restart, or in memory when empty. aobj-server uses <root>/.multipart for the
  // filesystem store. One server per directory.
  std::string multipart_root;
  // The smallest size of every part but the last (AOBJ-OBJ-213); 0 = S3's 5 MiB. Smaller values
  // are for tests.
  uint64_t multipart_min_part_size = 0;
  // Uploads in progress of one access key (AOBJ-OBJ-233); TOO_MANY_UPLOADS beyond. The server
  // holds at most 10000 in all.
  size_t max_uploads_per_principal = 1000;
  // Parts held by the uploads in progress of one access key (AOBJ-OBJ-233); TOO_MANY_UPLOADS
  // beyond. The server holds at most one million in all.
  uint64_t max_upload_parts_per_principal = 100000;
  // Uploads not completed this long after they began are aborted, across restarts
  // (AOBJ-OBJ-234; S3's AbortIncompleteMultipartUpload lifecycle rule); 0 = never.
  int64_t upload_expiry_ms = int64_t{7} * 24 * 3600 * 1000;
  std::string server_name = "aobj-server/0.1";
  // The key that authenticates listing continuation tokens (AOBJ-OBJ-107), at least 16 octets.
  // Gateways that serve one store share it, so that a token one issued works on every other and
  // across restarts; empty: random per process (tokens do not outlive it, AOBJ-OBJ-113).
  std::string list_token_key;
  // Other gateways of the same buckets (host:port) that OpenSession lists for clients, a hint
  // (spec 5.11); called for each OpenSession, from any thread; empty function: none.
  std::function<std::vector<std::string>()> gateways;
  // Structured log lines ("event=... session=..."); empty = no logging.
  std::function<void(const std::string&)> log;
  // Local HTTP endpoint for observation (docs/observability.md): GET /metrics (Prometheus text
  // format) and GET /sessions (JSON). "IPV4:PORT" (port 0 picks one, see
  // Server::metrics_port()); empty = off. The endpoint is unauthenticated, so an address
  // outside 127.0.0.0/8 is refused unless metrics_allow_remote.
  std::string metrics_listen;
  bool metrics_allow_remote = false;
};

struct ServerStats {
  uint64_t open_sessions = 0;
  uint64_t endpoints = 0;
  uint64_t rkeys_outstanding = 0;
  uint64_t requests = 0;
  uint64_t errors = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  // Put, get and atomic requests that data-channel peers sent to the server's UCP workers and
  // the server dropped (AOBJ-SEC-020); in this process, since it started.
  uint64_t peer_rma_refused = 0;
  // Session data channels the server failed (spec 13.7, Table 4): an RMA operation failed, the
  // data-wait bound passed, an abandoned request outlived its grace, or UCX reported the peer
  // gone (a closed connection, keepalive). Summed over the live data-channel processes.
  uint64_t data_channels_failed = 0;
  // Fast requests (spec 8.9) received, and those dropped unanswered: not a frame, or naming no
  // session of the key it claims (AOBJ-DAT-168).
  uint64_t fast_requests = 0;
  uint64_t fast_dropped = 0;
  // Of the fast requests, those run on the thread that received them (fast_path_run_here).
  uint64_t fast_served_here = 0;
};

class Server {
 public:
  // Listens, creates the data channel and serves until Shutdown(). `store` must not be null.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options,
                                                       std::unique_ptr<ObjectStore> store);
  // Shuts down (if not done yet). Must not run on a request thread or in a log callback.
  virtual ~Server() = default;
  // The bound control-channel port.
  virtual int port() const = 0;
  // Stops accepting, fails what is queued, waits for requests in progress, closes endpoints.
  virtual void Shutdown() = 0;
  // Blocks until Shutdown() (from another thread or a signal handler thread).
  virtual void Wait() = 0;
  // A consistent-enough snapshot of counters (each read atomically, not all at one instant).
  virtual ServerStats stats() = 0;
  // The bound metrics port; 0 when ServerOptions::metrics_listen is empty.
  virtual int metrics_port() const { return 0; }
};

}  // namespace aobj

#endif  // AOBJ_SERVER_H_
