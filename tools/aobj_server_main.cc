// aobj-server: the AOBJ/1 reference server as a process. A thin main over aobj::Server.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/rados_store.h"
#include "aobj/server.h"
#include "aobj/status.h"
#include "config_file.h"
#include "session/credentials.h"
#include "tool_util.h"
#include "wire/names.h"

namespace {

constexpr char kUsage[] =
    R"(aobj-server: the AOBJ/1 reference server (S3 object access over RDMA/UCX)

Usage: aobj-server [flags]

Storage:
  --store fs|memory|rados   object store behind the server (default: fs); rados: a Ceph
                            RADOS pool that several gateways share (docs/deploy-cluster.md)
  --root DIR                directory of the filesystem store (default: ./aobj-data)
  --rados-conf FILE         rados: the cluster's ceph.conf (default: CEPH_CONF, else
                            /etc/ceph/ceph.conf)
  --rados-pool NAME         rados: pool of the store; it must exist (default: aobj)
  --rados-namespace NS      rados: namespace in the pool; gateways of one store name the
                            same pool and namespace (default: none)
  --rados-user NAME         rados: Ceph user, as `ceph --id` (default: admin)
  --rados-gc-grace-ms N     rados: data no key names is deleted after this long, which is
                            also the longest a PUT may run and a reader may read a replaced
                            version; replaced data holds pool space this long (default:
                            900000, 15 minutes; the collector runs every half grace, at most
                            every minute)
  --create-bucket NAME      create bucket NAME at start if missing (repeatable)
  --min-part-size N         multipart: smallest size of every part but the last
                            (default: 5242880, S3's 5 MiB; smaller only for tests). Uploads in
                            progress live in ROOT/.multipart (fs), in memory (memory) or
                            in the cluster (rados)

Gateways (several servers over one store; docs/deploy-cluster.md, spec 5.11):
  --advertise HOST:PORT     the address clients reach this gateway at; with --store rados it
                            is registered in the cluster (again every 10 s) and listed to the
                            clients of every other gateway (port 0: the port bound)
  --gateway HOST:PORT       another gateway to list to clients in OpenSession (repeatable)

Control channel (gRPC):
  --listen HOST:PORT        address to listen on (default: 127.0.0.1:7878; port 0 picks one)
  --port-file FILE          write the bound port to FILE once serving
  --tls-cert FILE           TLS certificate chain (PEM); with --tls-key enables TLS
  --tls-key FILE            TLS private key (PEM)
  --tls-client-ca FILE      require client certificates signed by this CA (mutual TLS)
  --plaintext               serve without TLS (required when no certificate is given;
                            the server logs a warning)

Credentials (every request is signed with HMAC-SHA256; secrets never travel):
  --credentials FILE        lines of "ACCESS_KEY_ID SECRET"; must be chmod 600
                            (default: AOBJ_CREDENTIALS_FILE, else AOBJ_ACCESS_KEY_ID and
                            AOBJ_SECRET_ACCESS_KEY from the environment)

Session limits (spec section "Sessions"):
  --lease-ms N              session lease (default: 30000)
  --data-wait-ms N          longest one RMA step (16 MiB) waits on a client, plus its octets
                            at 50 MB/s; past it the request fails TRANSFER_FAILED and the
                            session's data channel is closed (default: 10000)
  --shutdown-grace-ms N     on SIGTERM, transfers still running after this long are ended
                            (default: 2000)
  --max-in-flight N         data requests in flight per session (default: 16)
  --inline-threshold N      largest body sent inside control messages (default: 16384)
  --max-transfer-bytes N    largest object one request may move (default: 64 GiB)
  --max-sessions N          open sessions at once; SLOW_DOWN beyond (default: 4096)
  --max-sessions-per-principal N  of one access key (default: 1024)
  --max-key-bytes N         longest object key accepted, at most 1024 (default: 1024)
  --max-list-page N         largest listing page, at most 1000 (default: 1000)
  --grease-errors PERCENT   for testing clients only: answer this share (0 to 100) of the
                            failures that are not retryable with a grease error code instead
                            (spec AOBJ-EXT-019; UNSUPPORTED_VERSION and NEGOTIATION_FAILED
                            never); a client must take it as INTERNAL, not retryable,
                            so a greased NO_SUCH_SESSION no longer ends its session
                            (default: 0)

Requests and tenants (spec section 14.6; one tenant cannot starve another):
  --max-connections-per-address N  control connections of one peer address; further ones
                            are closed at once (default: 1024; 0: no limit; local processes
                            all share 127.0.0.1)
  --max-unauthenticated-connections N  control connections, from all addresses, that have
                            not yet carried a signed request; past it the oldest of them is
                            cut for a new one (default: 4096, and at most three quarters of
                            what the descriptor limit leaves room for; 0: only that); under
                            a flood of new connections a client's first request must verify
                            within this bound divided by the flood's rate (about 50 KB of
                            memory each connection held)
  --max-connections-per-principal N  control connections that carried one principal's
                            signed requests; past it the principal's oldest is cut (default:
                            1024, and at most a quarter of what the descriptor limit leaves
                            room for; 0: only that)
  --max-stream-resets N     streams a client may reset before the server ends them (HTTP/2
                            Rapid Reset) before its connection is closed, once they are more
                            than four times those it let end; each such cut halves it for
                            the address's next connections for a minute (default: 64; 2-65536)
  --http2-guard on|off      read every HTTP/2 frame (terminating TLS) before gRPC does, which
                            the limit above needs, and so do the bounds on the calls of
                            connections not yet verified: 8 each, 32 an address, 256 in all
                            (default: on; off only to measure its cost)
  --threads N               request threads (default: 10)
  --max-requests-per-principal N  requests of one access key running at once
                            (default: threads - 2, so two threads stay for the others)
  --max-queued-requests N   requests waiting for a thread; SLOW_DOWN beyond (default: 4096)
  --max-queued-requests-per-principal N  of one access key (default: 1024)
  --max-queued-request-bytes N  bytes of the waiting requests' messages (default: 256 MiB)
  --control-memory N        memory gRPC may use for requests not yet handed over, in bytes
                            (default: 128 MiB; past it gRPC cancels streams)
  --max-reading-requests N  requests of known access keys whose message is still arriving
                            (default: 1024); past it the oldest of the key with the most is
                            ended with SLOW_DOWN; as many again whose message the HTTP/2
                            guard saw still coming may wait for it
  --max-reading-requests-per-principal N  of one claimed access key (default: 128)
  --request-read-ms N       a request message not whole this long after its headers is ended
                            with DEADLINE_EXCEEDED, or SLOW_DOWN if it waited for a read slot
                            until then (default: 20000, at most 30000); a message that arrives
                            whole with its headers, or later once it has come, is read at
                            once (AOBJ-SEC-029)
  --max-uploads-per-principal N  multipart uploads in progress of one access key;
                            TOO_MANY_UPLOADS beyond (default: 1000; the server holds 10000)
  --max-upload-parts-per-principal N  parts held by the uploads in progress of one access
                            key (default: 100000; the server holds 1000000)
  --upload-expiry-ms N      multipart uploads not completed this long after they began are
                            aborted, across restarts (default: 604800000, 7 days, S3's
                            AbortIncompleteMultipartUpload; 0: never)

Authorization (spec section 14.8):
  --authorization open|owner  open: every principal may do everything (default); owner: a
                            bucket belongs to the principal that created it (kept in
                            ROOT/.aobj-owners with the fs store, in the bucket's record in
                            the cluster with rados), others need a grant
  --grant P:BUCKET:ACCESS   give principal P read, write or owner access to BUCKET (repeatable);
                            buckets made with --create-bucket have no owner until granted

Data channel (UCX):
  --net-devices LIST        UCX_NET_DEVICES unless set in the environment (default: lo)
  --transports LIST         UCX_TLS unless set in the environment (default: UCX's choice);
                            System V shared memory, where admitted, is the shared-memory lane
                            (error mode NONE), everything else runs in error mode PEER
  --keepalive-ms N          a client on a network lane that stops answering is found dead
                            within about this long (UCX keepalive; 0: UCX's 20 s; default: 5000)
  --data-isolation MODE     process: each access key's data channel runs in a process of its
                            own (aobj-data-worker), so a client that sends UCX malformed octets
                            can harm only its own (default); none: in this process (one copy
                            fewer per transfer; only for clients whose UCX you trust)
  --data-worker PATH        the aobj-data-worker to run (default: beside aobj-server)
  --data-workers N          UCX workers moving data, each with its own progress thread (and,
                            with --data-isolation process, its own processes: a principal's
                            sessions spread over up to N, within 64 processes in all); default
                            0: one per 4 cores, at least 2 (1 on one core),
                            at most 16
  --fast-path on|queued|off offer FAST_PATH (spec 8.9): clients that agree send requests on one
                            object or bucket as UCX active messages on their data channel
                            instead of gRPC calls (default: on). on: a small GET, PUT or HEAD
                            that waits on nothing (memory store) runs on the thread that
                            received it when a request thread is idle; queued: every fast
                            request goes to a request thread; off: gRPC only

Observability (docs/observability.md):
  --metrics-listen HOST:PORT  serve GET /metrics (Prometheus) and GET /sessions (JSON) over
                            HTTP (default: off; loopback only unless --metrics-allow-remote)
  --metrics-port-file FILE  write the bound metrics port to FILE once serving
  --metrics-allow-remote    allow a non-loopback --metrics-listen (the endpoint has no auth)

Other:
  --config FILE             read flags from FILE: "key = value" lines, keys named like the
                            flags without "--"; flags on the command line win
                            (docs/configuration.md)
  --quiet                   log only errors
  --help                    this text

The server logs one line per event ("event=... session=..."), never secrets. Stop it with
SIGINT or SIGTERM: it finishes requests in progress (ending any transfer still running after
--shutdown-grace-ms) and closes every endpoint.
)";

}  // namespace

int main(int argc, char** argv) {
  using aobj::tools::ParsedArgs;
  // Debian's Abseil checks every mutex acquisition for lock-order cycles (GraphCycles), a cost
  // on every request (docs/benchmarks.md, appendix A.10.3). The tests keep the check on; the
  // server binary turns it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Every descriptor the operator allows (issue 16): the soft limit (often 1024) up to the hard
  // one; the control listener keeps a reserve below whatever the limit is.
  if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  ParsedArgs args;
  aobj::tools::ConfigKeys config_keys;
  config_keys.value_keys = {"store",
                            "root",
                            "rados-conf",
                            "rados-pool",
                            "rados-namespace",
                            "rados-user",
                            "rados-gc-grace-ms",
                            "advertise",
                            "gateway",
                            "create-bucket",
                            "listen",
                            "port-file",
                            "credentials",
                            "lease-ms",
                            "data-wait-ms",
                            "shutdown-grace-ms",
                            "keepalive-ms",
                            "max-in-flight",
                            "inline-threshold",
                            "max-transfer-bytes",
                            "threads",
                            "max-sessions",
                            "max-sessions-per-principal",
                            "max-requests-per-principal",
                            "max-connections-per-address",
                            "max-unauthenticated-connections",
                            "max-connections-per-principal",
                            "max-stream-resets",
                            "http2-guard",
                            "max-queued-requests",
                            "max-queued-requests-per-principal",
                            "max-queued-request-bytes",
                            "control-memory",
                            "max-reading-requests",
                            "max-reading-requests-per-principal",
                            "request-read-ms",
                            "max-uploads-per-principal",
                            "max-upload-parts-per-principal",
                            "upload-expiry-ms",
                            "max-key-bytes",
                            "max-list-page",
                            "grease-errors",
                            "net-devices",
                            "transports",
                            "data-isolation",
                            "data-workers",
                            "data-worker",
                            "fast-path",
                            "tls-cert",
                            "tls-key",
                            "tls-client-ca",
                            "min-part-size",
                            "metrics-listen",
                            "metrics-port-file",
                            "authorization",
                            "grant"};
  config_keys.bool_keys = {"quiet", "plaintext", "metrics-allow-remote"};
  config_keys.repeatable_keys = {"create-bucket", "grant", "gateway"};
  std::vector<std::string> flag_names = config_keys.value_keys;
  flag_names.push_back("config");
  absl::Status st = aobj::tools::ParseArgs(argc, argv, 1, flag_names, config_keys.bool_keys,
                                           &args);
  if (st.ok() && args.Has("config")) {
    ParsedArgs file;
    st = aobj::tools::LoadConfigFile(args.Get("config"), config_keys, &file);
    if (st.ok()) aobj::tools::MergeConfig(file, &args);
  }
  if (st.ok() && !args.positional.empty()) {
    st = absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args.positional[0], "'"));
  }
  auto fail = [](const std::string& msg) {
    std::cerr << "aobj-server: " << msg << "\n";
    return 2;
  };
  if (!st.ok()) return fail(std::string(st.message()));

  aobj::ServerOptions options;
  options.listen_address = args.Get("listen", "127.0.0.1:7878");
  {
    int64_t min_part = 0;
    if (!(st = args.GetInt("min-part-size", 5 << 20, &min_part)).ok()) {
      return fail(std::string(st.message()));
    }
    // AOBJ-OBJ-215: S3's 5 MiB unless a test asks for less.
    if (min_part < 1) return fail("--min-part-size must be at least 1");
    options.multipart_min_part_size = static_cast<uint64_t>(min_part);
  }
  options.tls.cert_file = args.Get("tls-cert");
  options.tls.key_file = args.Get("tls-key");
  options.tls.ca_file = args.Get("tls-client-ca");
  options.tls.enabled = !options.tls.cert_file.empty() || !options.tls.key_file.empty();
  options.allow_plaintext = args.Has("plaintext");
  if (options.tls.enabled && options.allow_plaintext) {
    return fail("--plaintext and --tls-cert/--tls-key exclude each other");
  }
  if (!options.tls.enabled && !options.allow_plaintext) {
    return fail("choose how the control channel is protected: --tls-cert FILE --tls-key FILE "
                "(TLS), or --plaintext (no encryption; loopback testing only)");
  }
  int64_t v = 0;
  for (auto [flag, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"lease-ms", &options.lease_ms},
           {"data-wait-ms", &options.data_wait_ms},
           {"shutdown-grace-ms", &options.shutdown_grace_ms},
           {"keepalive-ms", &options.data_channel.keepalive_ms}}) {
    if (!(st = args.GetInt(flag, *field, &v)).ok()) return fail(std::string(st.message()));
    if (v < 0 || (v == 0 && std::string(flag) != "keepalive-ms")) {
      return fail(absl::StrCat("--", flag, " must be positive"));
    }
    *field = v;
  }
  if (args.Has("grease-errors")) {
    double pct = 0;
    if (!absl::SimpleAtod(args.Get("grease-errors"), &pct) || !(pct >= 0 && pct <= 100)) {
      return fail("--grease-errors must be a percentage from 0 to 100");
    }
    options.grease_errors_percent = pct;
  }
  if (!(st = args.GetInt("max-in-flight", 0, &v)).ok()) return fail(std::string(st.message()));
  options.limits.max_in_flight = static_cast<uint32_t>(v);
  if (!(st = args.GetInt("inline-threshold", 0, &v)).ok()) return fail(std::string(st.message()));
  options.limits.inline_threshold = static_cast<uint64_t>(v);
  if (!(st = args.GetInt("max-transfer-bytes", 0, &v)).ok()) {
    return fail(std::string(st.message()));
  }
  options.limits.max_transfer_bytes = static_cast<uint64_t>(v);
  if (!(st = args.GetInt("threads", 10, &v)).ok() || v < 1 || v > 1024) {
    return fail("--threads takes 1 to 1024");
  }
  options.request_threads = static_cast<int>(v);
  if (!(st = args.GetInt("max-connections-per-address", 1024, &v)).ok() || v < 0) {
    return fail("--max-connections-per-address takes 0 (no limit) or more");
  }
  options.max_connections_per_address = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-unauthenticated-connections", 4096, &v)).ok() || v < 0) {
    return fail("--max-unauthenticated-connections takes 0 (the descriptor limit's share) or more");
  }
  options.max_unauthenticated_connections = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-connections-per-principal", 1024, &v)).ok() || v < 0) {
    return fail("--max-connections-per-principal takes 0 (the descriptor limit's share) or more");
  }
  options.max_connections_per_principal = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-stream-resets", 64, &v)).ok() || v < 2 || v > 65536) {
    return fail("--max-stream-resets takes 2 to 65536");
  }
  options.max_stream_resets = static_cast<int>(v);
  if (const std::string g = args.Get("http2-guard", "on"); g == "on" || g == "off") {
    options.http2_guard = g == "on";
  } else {
    return fail("--http2-guard must be on or off, not '" + aobj::tools::Printable(g) + "'");
  }
  if (!(st = args.GetInt("max-requests-per-principal", 0, &v)).ok() || v < 0 || v > 1024) {
    return fail("--max-requests-per-principal takes 0 (threads - 2) to 1024");
  }
  options.max_requests_per_principal = static_cast<int>(v);
  if (!(st = args.GetInt("max-queued-requests", 4096, &v)).ok() || v < 1) {
    return fail("--max-queued-requests takes a positive number");
  }
  options.max_queued_requests = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-queued-requests-per-principal", 1024, &v)).ok() || v < 1) {
    return fail("--max-queued-requests-per-principal takes a positive number");
  }
  options.max_queued_requests_per_principal = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-queued-request-bytes", int64_t{256} << 20, &v)).ok() || v < 1) {
    return fail("--max-queued-request-bytes takes a positive number of bytes");
  }
  options.max_queued_request_bytes = static_cast<uint64_t>(v);
  if (!(st = args.GetInt("control-memory", int64_t{128} << 20, &v)).ok() || v < (16 << 20)) {
    return fail("--control-memory takes at least 16777216 bytes (16 MiB)");
  }
  options.control_memory_bytes = static_cast<uint64_t>(v);
  if (!(st = args.GetInt("max-reading-requests", 1024, &v)).ok() || v < 1) {
    return fail("--max-reading-requests takes a positive number");
  }
  options.max_reading_requests = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-reading-requests-per-principal", 128, &v)).ok() || v < 1) {
    return fail("--max-reading-requests-per-principal takes a positive number");
  }
  options.max_reading_requests_per_principal = static_cast<size_t>(v);
  if (!(st = args.GetInt("request-read-ms", 20000, &v)).ok() || v < 1 || v > 30000) {
    return fail("--request-read-ms takes 1 to 30000 (AOBJ-SEC-018: at most 30 s)");
  }
  options.request_read_ms = v;
  if (!(st = args.GetInt("max-uploads-per-principal", 1000, &v)).ok() || v < 1) {
    return fail("--max-uploads-per-principal takes a positive number");
  }
  options.max_uploads_per_principal = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-upload-parts-per-principal", 100000, &v)).ok() || v < 1) {
    return fail("--max-upload-parts-per-principal takes a positive number");
  }
  options.max_upload_parts_per_principal = static_cast<uint64_t>(v);
  if (!(st = args.GetInt("upload-expiry-ms", 604800000, &v)).ok() || v < 0) {
    return fail("--upload-expiry-ms takes 0 (never) or more milliseconds");
  }
  options.upload_expiry_ms = v;
  if (!(st = args.GetInt("max-sessions", 4096, &v)).ok()) return fail(std::string(st.message()));
  options.max_sessions = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-sessions-per-principal", 1024, &v)).ok()) {
    return fail(std::string(st.message()));
  }
  options.max_sessions_per_principal = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-key-bytes", 1024, &v)).ok() || v < 1 || v > 1024) {
    return fail("--max-key-bytes takes 1 to 1024");
  }
  options.max_key_bytes = static_cast<size_t>(v);
  if (!(st = args.GetInt("max-list-page", 1000, &v)).ok() || v < 1 || v > 1000) {
    return fail("--max-list-page takes 1 to 1000");
  }
  options.max_list_page = static_cast<uint32_t>(v);
  options.data_channel.net_devices = args.Get("net-devices", "lo");
  options.data_channel.transports = args.Get("transports", "");
  if (const std::string iso = args.Get("data-isolation", "process"); iso == "process") {
    options.data_isolation = aobj::ServerOptions::DataIsolation::kProcessPerPrincipal;
  } else if (iso == "none") {
    options.data_isolation = aobj::ServerOptions::DataIsolation::kInProcess;
  } else {
    return fail("--data-isolation must be process or none, not '" + aobj::tools::Printable(iso) +
                "'");
  }
  options.data_worker_path = args.Get("data-worker", "");
  if (!(st = args.GetInt("data-workers", 0, &v)).ok() || v < 0 || v > 64) {
    return fail("--data-workers takes 0 (one per 4 cores, at least 2) to 64");
  }
  options.data_workers = static_cast<int>(v);
  if (const std::string fast = args.Get("fast-path", "on");
      fast == "on" || fast == "queued" || fast == "off") {
    options.fast_path = fast != "off";
    options.fast_path_run_here = fast == "on";
  } else {
    return fail("--fast-path must be on, queued or off, not '" + aobj::tools::Printable(fast) +
                "'");
  }
  options.metrics_listen = args.Get("metrics-listen");
  options.metrics_allow_remote = args.Has("metrics-allow-remote");

  // Credentials.
  std::string cred_file = args.Get("credentials", std::getenv("AOBJ_CREDENTIALS_FILE")
                                                      ? std::getenv("AOBJ_CREDENTIALS_FILE")
                                                      : "");
  if (!cred_file.empty()) {
    auto creds = aobj::LoadCredentialsFile(cred_file, /*require_private=*/true);
    if (!creds.ok()) return fail(std::string(creds.status().message()));
    options.credentials = *creds;
  } else if (std::getenv("AOBJ_ACCESS_KEY_ID") && std::getenv("AOBJ_SECRET_ACCESS_KEY")) {
    options.credentials[std::getenv("AOBJ_ACCESS_KEY_ID")] = std::getenv("AOBJ_SECRET_ACCESS_KEY");
  } else {
    return fail("no credentials: pass --credentials FILE (lines of \"ACCESS_KEY_ID SECRET\", "
                "chmod 600) or set AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY");
  }

  const bool quiet = args.Has("quiet");
  options.log = [quiet](const std::string& line) {
    if (quiet && line.find("event=request_failed") == std::string::npos) return;
    std::fprintf(stderr, "%s aobj-server %s\n",
                 absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()).c_str(),
                 line.c_str());
  };

  // Authorization (spec 14.8).
  const std::string policy = args.Get("authorization", "open");
  if (policy == "owner") {
    options.authorization = aobj::AuthorizationPolicy::kOwner;
  } else if (policy != "open") {
    return fail("--authorization must be open or owner");
  }
  if (args.Has("grant")) {
    for (const auto& g : args.flags.at("grant")) {
      std::vector<std::string> f = absl::StrSplit(g, ':');
      aobj::BucketGrant grant;
      if (f.size() != 3) return fail("--grant takes PRINCIPAL:BUCKET:read|write|owner, not '" + g + "'");
      grant.principal = f[0];
      grant.bucket = f[1];
      if (f[2] == "read") {
        grant.access = aobj::GrantAccess::kRead;
      } else if (f[2] == "write") {
        grant.access = aobj::GrantAccess::kWrite;
      } else if (f[2] == "owner") {
        grant.access = aobj::GrantAccess::kOwner;
      } else {
        return fail("--grant access must be read, write or owner, not '" + f[2] + "'");
      }
      options.grants.push_back(grant);
    }
  }

  // Gateways of the same store that OpenSession lists (spec 5.11): the configured ones, and with
  // --store rados those registered in the cluster in the last 30 s, this one left out.
  struct GatewayList {
    absl::Mutex mu;
    std::vector<std::string> configured;
    std::string self;
    aobj::RadosStore* rados = nullptr;  // owned by the server
    std::vector<std::string> live;
    absl::Time read_at = absl::InfinitePast();
  };
  auto gateways = std::make_shared<GatewayList>();
  if (args.Has("gateway")) {
    for (const std::string& g : args.flags.at("gateway")) {
      if (g.empty() || g.size() > 255 || g.find(':') == std::string::npos) {
        return fail("--gateway " + g + ": expected HOST:PORT of at most 255 characters");
      }
      gateways->configured.push_back(g);
    }
  }
  const std::string advertise = args.Get("advertise");
  if (!advertise.empty() && (advertise.size() > 255 || advertise.rfind(':') == std::string::npos)) {
    return fail("--advertise " + advertise + ": expected HOST:PORT of at most 255 characters");
  }
  options.gateways = [gateways]() {
    absl::MutexLock l(&gateways->mu);
    std::vector<std::string> out = gateways->configured;
    if (gateways->rados != nullptr) {
      if (absl::Now() - gateways->read_at > absl::Seconds(2)) {
        absl::StatusOr<std::vector<std::string>> live = gateways->rados->Gateways(30000);
        if (live.ok()) gateways->live = *std::move(live);
        gateways->read_at = absl::Now();
      }
      for (const std::string& g : gateways->live) {
        if (g != gateways->self && std::find(out.begin(), out.end(), g) == out.end()) {
          out.push_back(g);
        }
      }
    }
    return out;
  };

  // Store.
  const std::string kind = args.Get("store", "fs");
  std::unique_ptr<aobj::ObjectStore> store;
  std::string store_desc;
  if (kind == "memory") {
    store = aobj::NewMemoryStore();
    store_desc = "memory";
  } else if (kind == "fs") {
    const std::string root = args.Get("root", "./aobj-data");
    auto fs = aobj::OpenFileStore(root);
    if (!fs.ok()) return fail(aobj::tools::DescribeError(fs.status()));
    store = std::move(*fs);
    store_desc = absl::StrCat("fs:", root);
    options.multipart_root = absl::StrCat(root, "/.multipart");  // survives restarts
    options.owners_file = absl::StrCat(root, "/.aobj-owners");   // bucket owners, ditto
  } else if (kind == "rados") {
    aobj::RadosStoreOptions ro;
    ro.conf_file = args.Get("rados-conf");
    ro.pool = args.Get("rados-pool", "aobj");
    ro.ns = args.Get("rados-namespace");
    ro.user = args.Get("rados-user", "admin");
    if (!(st = args.GetInt("rados-gc-grace-ms", ro.gc_grace_ms, &ro.gc_grace_ms)).ok()) {
      return fail(std::string(st.message()));
    }
    if (ro.gc_grace_ms < 1000) return fail("--rados-gc-grace-ms must be at least 1000");
    // The collector looks twice per grace (at most once a minute), so garbage lives at most
    // about one and a half graces.
    ro.gc_interval_ms = std::clamp<int64_t>(ro.gc_grace_ms / 2, 500, 60000);
    auto rados = aobj::OpenRadosStore(ro);
    if (!rados.ok()) return fail(aobj::tools::DescribeError(rados.status()));
    // One key for every gateway of the store: a listing continues on any of them.
    auto token_key = (*rados)->SharedSecret("list-token-key");
    if (!token_key.ok()) return fail(aobj::tools::DescribeError(token_key.status()));
    options.list_token_key = *std::move(token_key);
    gateways->rados = rados->get();
    store = std::move(*rados);
    store_desc = absl::StrCat("rados:", ro.pool, ro.ns.empty() ? "" : "/", ro.ns);
    options.log(
        "event=notice message=\"multipart uploads are kept in the cluster (any gateway serves "
        "them); --max-uploads-per-principal and --max-upload-parts-per-principal do not apply: "
        "the pool's quota bounds what uploads hold\"");
  } else {
    return fail(absl::StrCat("--store must be fs, memory or rados, not '", kind, "'"));
  }
  if (args.Has("create-bucket")) {
    for (const auto& b : args.flags.at("create-bucket")) {
      // A name no request could ever reach is a mistake to report, not a directory to make.
      if (absl::Status valid = aobj::ValidateBucketName(b); !valid.ok()) {
        return fail(absl::StrCat("--create-bucket ", aobj::tools::Printable(b), ": ",
                                 valid.message()));
      }
      absl::Status s = store->CreateBucket(b);
      if (!s.ok() && aobj::ErrorCodeOf(s) != aobj::ErrorCode::kBucketAlreadyExists) {
        return fail(absl::StrCat("cannot create bucket ", b, ": ", aobj::tools::DescribeError(s)));
      }
    }
  }

  // Signals are taken by sigwait in this thread; block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto server = aobj::Server::Start(options, std::move(store));
  if (!server.ok()) return fail(aobj::tools::DescribeError(server.status()));
  const std::string host = options.listen_address.substr(0, options.listen_address.rfind(':'));
  options.log(absl::StrCat("event=started listen=", host, ":", (*server)->port(),
                           " store=", store_desc, " principals=", options.credentials.size(),
                           " data_channel=ucx net_devices=", options.data_channel.net_devices));
  // AOBJ-OPS-002: say loudly that the control channel is not encrypted.
  if (options.allow_plaintext) {
    const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "[::1]";
    options.log(absl::StrCat("event=warning message=\"PLAINTEXT control channel",
                             loopback ? "" : " on a NON-LOOPBACK address",
                             ": requests are signed but responses are neither encrypted nor "
                             "authenticated; use --tls-cert/--tls-key\""));
  } else {
    options.log(absl::StrCat("event=notice message=\"control channel uses TLS",
                             options.tls.ca_file.empty() ? "" : " with client certificates",
                             "\""));
  }
  if (args.Has("port-file")) {
    const std::string path = args.Get("port-file");
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::rename(tmp.c_str(), path.c_str());
  }
  if ((*server)->metrics_port() != 0) {
    options.log(absl::StrCat("event=metrics_listening port=", (*server)->metrics_port()));
    if (args.Has("metrics-port-file")) {
      const std::string path = args.Get("metrics-port-file");
      const std::string tmp = path + ".tmp";
      std::ofstream(tmp) << (*server)->metrics_port() << "\n";
      std::rename(tmp.c_str(), path.c_str());
    }
  }

  // Registration in the cluster, renewed every 10 s until the server stops.
  std::thread heartbeat;
  absl::Notification stop_heartbeat;
  if (gateways->rados != nullptr && !advertise.empty()) {
    std::string self = advertise;
    if (absl::EndsWith(self, ":0")) {
      self = absl::StrCat(self.substr(0, self.size() - 1), (*server)->port());
    }
    {
      absl::MutexLock l(&gateways->mu);
      gateways->self = self;
    }
    heartbeat = std::thread([&options, &stop_heartbeat, gateways, self] {
      do {
        if (absl::Status r = gateways->rados->RegisterGateway(self); !r.ok()) {
          options.log(
              absl::StrCat("event=warning message=\"gateway registration: ", r.message(), "\""));
        }
      } while (!stop_heartbeat.WaitForNotificationWithTimeout(absl::Seconds(10)));
    });
    options.log(absl::StrCat("event=gateway_registered address=", self));
  }

  int sig = 0;
  sigwait(&sigs, &sig);
  options.log(absl::StrCat("event=stopping signal=", sig));
  if (heartbeat.joinable()) {
    stop_heartbeat.Notify();
    heartbeat.join();
    gateways->rados->DeregisterGateway(gateways->self).IgnoreError();
  }
  (*server)->Shutdown();
  const aobj::ServerStats s = (*server)->stats();
  options.log(absl::StrCat("event=stopped requests=", s.requests, " errors=", s.errors,
                           " bytes_in=", s.bytes_in, " bytes_out=", s.bytes_out,
                           " open_sessions=", s.open_sessions, " endpoints=", s.endpoints,
                           " rkeys_outstanding=", s.rkeys_outstanding));
  return 0;
}
