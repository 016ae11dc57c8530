// aobj-bench: AOBJ/1 GET and PUT against raw UCX, nginx and moto, side by side in one run.
// The flags live here; the order of a run in bench_run, the systems in aobj_runner, raw_ucx and
// http_peers, the measurement loop in load, the output in report.
#include <curl/curl.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/aobj_runner.h"
#include "bench/bench_run.h"
#include "bench/load.h"
#include "bench/proc_util.h"
#include "bench/raw_ucx.h"
#include "tool_util.h"

namespace aobj::bench {
namespace {

constexpr char kUsage[] =
    R"(aobj-bench: AOBJ/1 throughput and latency, side by side with raw UCX, nginx and moto

Usage: aobj-bench [flags]

The run (all on 127.0.0.1; UCX_NET_DEVICES=lo unless already set):
  1. starts aobj-server (found next to this binary) for each --store, with a private
     credentials file and bucket "bench", and the peers named by --compare;
  2. measures an idle server's CPU over --idle-seconds (one session open, no requests);
  3. for every size of --sizes and every op of --ops: GET/PUT through the client library
     (aobj-<store>[-caller|-device][-<N>p][-<tls>]), then the same transfer on raw UCX ("ucx"), nginx and
     moto; closed loops, --threads operations in flight per client process;
  4. the small-request mode: 4 KiB GET/PUT with 1 and --small-inflight operations in flight;
  5. prints a table (throughput, ops/s, latency percentiles, CPU per GB, ratios between systems
     of this run, idle CPU, server memory) and writes --json / --svg.

Workload:
  --sizes LIST            object sizes (default 4K,64K,1M,16M,64M,256M,1G; K/M/G are binary)
  --ops LIST              get,put (default both)
  --threads N             operations in flight per client process, one per thread (default 1)
  --processes LIST        client processes per aobj line, results aggregated (default 1;
                          e.g. 1,8 adds an aobj-<store>-8p line)
  --count N               measured operations per cell (over all threads and processes)
  --duration SECONDS      or: measure each cell this long (default 0.4), at least --min-ops
  --min-ops N             with --duration: at least this many operations (default 3; 2 from
                          256M up)
  --warmup N              warm-up operations per thread before each cell (default: 50 up to
                          64K, 10 up to 1M, 2 up to 64M, 1 above)
  --buffers LIST          library (AllocateBuffer: UCX-allocated shared memory, the fast path),
                          caller (malloc'd, pre-faulted, RegisterBuffer) and/or device (CUDA
                          device memory moved through a DeviceStager, aobj/device.h; needs a
                          GPU) (default library); with caller, raw UCX also runs on registered
                          heap memory ("ucx-caller"); device lines get a ratio to the host line
  --device-chunk SIZE     device lines: the stager's chunk (ranged GET and part size; default 16M)
  --device-depth N        device lines: staging buffers, chunks or parts in flight (default 4)
  --checksum ALGO         crc32c | crc64nvme end-to-end checksum (default crc32c; the client
                          library always verifies one)
  --etags LIST            md5 (S3's ETag: the server hashes every PUT body with MD5, about
                          0.7 GB/s per core) and/or opaque (the client offers OPAQUE_ETAG, spec
                          AOBJ-OBJ-016: no MD5 pass; an "aobj-<store>-opaque" line) (default md5)
  --no-inline             aobj lines always use RMA, also for bodies under the inline threshold
                          (16 KiB by default; the small-request mode always runs both)
  --transports LIST       UCX_TLS variants for the client and raw UCX lines: "default" (UCX's
                          choice: shared memory here) and/or e.g. "tcp" (as error-handling mode
                          PEER forces in UCX 1.13.1) (default: default)

Server:
  --store LIST            memory and/or fs (default memory); fs uses a temp dir on /tmp
  --endpoint HOST:PORT[,HOST:PORT...]  bench an already running server instead (needs
                          --credentials and a bucket --bucket; its CPU and memory only with
                          --server-pid); several gateways of one store: client process i uses
                          gateway i % count (scripts/bench-gateways.sh)
  --credentials FILE      "ACCESS_KEY_ID SECRET" for --endpoint
  --server-pid PID        the running server's pid, for CPU and memory figures
  --bucket NAME           bucket to use (default bench)
  --server-binary PATH    aobj-server to spawn (default: next to aobj-bench)
  --server-args "ARGS"    more flags for the spawned aobj-server, split at spaces (e.g.
                          "--data-isolation none" to measure the data channel in process)

Comparisons (same sizes, ops and concurrency):
  --compare LIST          ucx,nginx,moto or none (default: all that are present)
                          ucx:   raw ucp_put_nbx/ucp_get_nbx + ucp_ep_flush_nbx between this
                                 process and a child holding UCX-allocated memory (the
                                 transport's limit on the same transports and memory)
                          nginx: Debian nginx-light, sendfile, 1 worker, GET of files and PUT
                                 through the dav module, libcurl client
                          moto:  moto_server (Python S3), SigV4 via libcurl
  --ucx-rkey-per-op       also run raw UCX with the rkey unpacked and destroyed around every
                          operation, as the server does per request ("ucx-unpack"), and the
                          same with the window pre-populated by madvise ("ucx-unpack-populate")
  --ucx-verified          also run raw UCX with the end-to-end checks every AOBJ transfer has,
                          one after the other ("ucx-verified"; shared-memory lanes only): the
                          client's CRC32C of the octets as aobj's client computes it (after a
                          GET, before a PUT: AOBJ-DAT-004) and a PUT's server-side check
                          (AOBJ-DAT-005): what verifying every transfer costs on this machine
  --moto-max-size SIZE    skip larger sizes for moto (default 64M; it is slow)
  --nginx PATH            (default: nginx on PATH or /usr/sbin/nginx)
  --moto PATH             (default: moto_server on PATH or /root/.pyenv/shims/moto_server)
  --s3-endpoint HOST:PORT compare with this running S3 server instead of starting moto (with
                          --compare moto): SigV4 with access key benchkey, secret benchsecret
                          (scripts/bench-gateways.sh starts radosgw so)
  --s3-name NAME          the name of its rows (default s3)
  --wrk PATH              (default: wrk on PATH; gives nginx's small-request figures)

Small requests, idle, output:
  --small-duration SECS   duration of each small-request cell (default 0.5; 0 skips the mode)
  --small-inflight N      operations in flight for the throughput half (default 16)
  --idle-seconds SECS     idle CPU window (default 5; 0 skips)
  --json FILE             write every figure as JSON
  --svg FILE              write throughput and p50 latency against size as SVG
  --help                  this text

Figures: GB/s = 1e9 bytes/s; latency percentiles are nearest-rank over every measured
operation; client CPU s/GB is getrusage of the client processes (for "ucx": the passive target
process), server CPU s/GB is /proc/<pid>/stat of the server (for "ucx": this process, the RMA
initiator). Buffers are pre-faulted and reused; each cell warms up before the clock starts.
The machine is shared and noisy: repeat runs and compare ratios taken in one run.
)";

int Usage(const std::string& msg) {
  std::cerr << "aobj-bench: " << msg << "\n(run aobj-bench --help for usage)\n";
  return 2;
}

std::vector<std::string> List(const std::string& s) {
  return absl::StrSplit(s, ',', absl::SkipEmpty());
}

absl::Status ParseFlags(int argc, char** argv, Flags* f) {
  tools::ParsedArgs a;
  absl::Status st = tools::ParseArgs(argc, argv, 1, {"sizes",
                                                     "ops",
                                                     "threads",
                                                     "processes",
                                                     "count",
                                                     "duration",
                                                     "min-ops",
                                                     "warmup",
                                                     "buffers",
                                                     "device-chunk",
                                                     "device-depth",
                                                     "checksum",
                                                     "etags",
                                                     "transports",
                                                     "store",
                                                     "endpoint",
                                                     "credentials",
                                                     "server-pid",
                                                     "bucket",
                                                     "server-binary",
                                                     "server-args",
                                                     "compare",
                                                     "moto-max-size",
                                                     "nginx",
                                                     "moto",
                                                     "s3-endpoint",
                                                     "s3-name",
                                                     "wrk",
                                                     "small-duration",
                                                     "small-inflight",
                                                     "idle-seconds",
                                                     "json",
                                                     "svg"},
                                     {"no-inline", "ucx-rkey-per-op", "ucx-verified"}, &a);
  if (!st.ok()) return st;
  f->no_inline = a.Has("no-inline");
  f->ucx_rkey_per_op = a.Has("ucx-rkey-per-op");
  f->ucx_verified = a.Has("ucx-verified");
  if (!a.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", a.positional[0], "'"));
  }
  for (const std::string& s : List(a.Get("sizes", "4K,64K,1M,16M,64M,256M,1G"))) {
    auto v = ParseSize(s);
    if (!v.ok()) return v.status();
    f->sizes.push_back(*v);
  }
  for (const std::string& s : List(a.Get("ops", "get,put"))) {
    if (s == "get") {
      f->ops.push_back(Op::kGet);
    } else if (s == "put") {
      f->ops.push_back(Op::kPut);
    } else {
      return absl::InvalidArgumentError("--ops takes get and/or put");
    }
  }
  int64_t v = 0;
  if (!(st = a.GetInt("threads", 1, &v)).ok()) return st;
  if (v < 1 || v > 256) return absl::InvalidArgumentError("--threads must be 1..256");
  f->threads = static_cast<int>(v);
  for (const std::string& s : List(a.Get("processes", "1"))) {
    int p = 0;
    if (!absl::SimpleAtoi(s, &p) || p < 1 || p > 64) {
      return absl::InvalidArgumentError("--processes takes numbers 1..64");
    }
    f->processes.push_back(p);
  }
  if (!(st = a.GetInt("count", 0, &f->count)).ok()) return st;
  if (a.Has("duration") && !absl::SimpleAtod(a.Get("duration"), &f->duration)) {
    return absl::InvalidArgumentError("--duration takes seconds");
  }
  if (a.Has("count") && a.Has("duration")) {
    return absl::InvalidArgumentError("--count and --duration exclude each other");
  }
  if (!(st = a.GetInt("min-ops", -1, &f->min_ops)).ok()) return st;
  if (!(st = a.GetInt("warmup", -1, &f->warmup)).ok()) return st;
  f->buffers = List(a.Get("buffers", "library"));
  for (const auto& b : f->buffers) {
    if (b != "library" && b != "caller" && b != "device") {
      return absl::InvalidArgumentError("--buffers takes library, caller and/or device");
    }
  }
  if (a.Has("device-chunk")) {
    auto c = ParseSize(a.Get("device-chunk"));
    if (!c.ok()) return c.status();
    f->device_chunk = *c;
  }
  if (!(st = a.GetInt("device-depth", 4, &v)).ok()) return st;
  if (v < 2 || v > 8) return absl::InvalidArgumentError("--device-depth takes 2 to 8");
  f->device_depth = static_cast<int>(v);
  f->checksum = a.Get("checksum", "crc32c");
  if (f->checksum != "crc32c" && f->checksum != "crc64nvme") {
    return absl::InvalidArgumentError("--checksum takes crc32c or crc64nvme");
  }
  f->etags = List(a.Get("etags", "md5"));
  for (const auto& e : f->etags) {
    if (e != "md5" && e != "opaque") {
      return absl::InvalidArgumentError("--etags takes md5 and/or opaque");
    }
  }
  f->transports = List(a.Get("transports", "default"));
  f->stores = List(a.Get("store", "memory"));
  for (const auto& s : f->stores) {
    if (s != "memory" && s != "fs") return absl::InvalidArgumentError("--store takes memory, fs");
  }
  f->endpoint = a.Get("endpoint");
  f->credentials = a.Get("credentials");
  if (!f->endpoint.empty() && f->credentials.empty()) {
    return absl::InvalidArgumentError("--endpoint needs --credentials");
  }
  if (!(st = a.GetInt("server-pid", -1, &v)).ok()) return st;
  f->server_pid = static_cast<pid_t>(v);
  f->bucket = a.Get("bucket", "bench");
  f->server_binary = a.Get("server-binary", SelfDir() + "/aobj-server");
  f->server_args = absl::StrSplit(a.Get("server-args", ""), ' ', absl::SkipEmpty());
  f->compare = List(a.Get("compare", "ucx,nginx,moto"));
  if (f->compare.size() == 1 && f->compare[0] == "none") f->compare.clear();
  for (const auto& c : f->compare) {
    if (c != "ucx" && c != "nginx" && c != "moto") {
      return absl::InvalidArgumentError("--compare takes ucx, nginx, moto or none");
    }
  }
  if (a.Has("moto-max-size")) {
    auto m = ParseSize(a.Get("moto-max-size"));
    if (!m.ok()) return m.status();
    f->moto_max = *m;
  }
  f->nginx = a.Get("nginx", "nginx");
  f->moto = a.Get("moto", "moto_server");
  f->s3_endpoint = a.Get("s3-endpoint");
  f->s3_name = a.Get("s3-name", "s3");
  f->wrk = a.Get("wrk", "wrk");
  if (a.Has("small-duration") && !absl::SimpleAtod(a.Get("small-duration"), &f->small_duration)) {
    return absl::InvalidArgumentError("--small-duration takes seconds");
  }
  if (!(st = a.GetInt("small-inflight", 16, &v)).ok()) return st;
  f->small_inflight = static_cast<int>(std::clamp<int64_t>(v, 1, 256));
  if (a.Has("idle-seconds") && !absl::SimpleAtod(a.Get("idle-seconds"), &f->idle_seconds)) {
    return absl::InvalidArgumentError("--idle-seconds takes seconds");
  }
  f->json = a.Get("json");
  f->svg = a.Get("svg");
  if (f->sizes.empty() || f->ops.empty()) return absl::InvalidArgumentError("nothing to measure");
  return absl::OkStatus();
}

}  // namespace
}  // namespace aobj::bench

int main(int argc, char** argv) {
  // The project's loopback rule, for this process and every child (shared/FACTS.md).
  setenv("UCX_NET_DEVICES", "lo", /*overwrite=*/0);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);  // as aobj-server does
  if (argc >= 2 && std::string(argv[1]) == "--internal-worker") {
    return aobj::bench::WorkerMain(argc, argv);
  }
  if (argc >= 2 && std::string(argv[1]) == "--internal-ucx-target") {
    return aobj::bench::UcxTargetMain(argc, argv);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << aobj::bench::kUsage;
      return 0;
    }
  }
  aobj::bench::Flags flags;
  if (absl::Status st = aobj::bench::ParseFlags(argc, argv, &flags); !st.ok()) {
    return aobj::bench::Usage(std::string(st.message()));
  }
  signal(SIGPIPE, SIG_IGN);
  aobj::bench::InstallChildCleanup();
  curl_global_init(CURL_GLOBAL_DEFAULT);
  std::vector<std::string> args(argv, argv + argc);
  args[0] = "aobj-bench";
  const int rc = aobj::bench::RunBench(flags, absl::StrJoin(args, " "));
  curl_global_cleanup();
  return rc;
}
