// aobj-bench: the system under test. An aobj-server process spawned for the run, and the client
// load: GET/PUT through the client library (aobj::Client) in one or more worker processes.
//
// Worker processes are this executable started with --internal-worker. Each holds one Client
// (one session), one buffer per load thread (allocated through the library, caller-owned and
// registered, or CUDA device memory moved through a DeviceStager) reused for every cell, and talks
// to the coordinator over stdin/stdout lines:
//   coordinator -> worker: "CELL <GET|PUT> <size> <count> <duration_s> <min_ops> <warmup_ops>",
//                          "GO", "QUIT"
//   worker -> coordinator: "HELLO" (session open), "READY" (warmed up), "RESULT ...", "LAT ...",
//                          "ERROR <message>"
// Several processes are released together (after all said READY) and their results merged:
// throughput over [earliest start, latest end], latencies pooled, CPU summed.
//
// Threading: one coordinator thread drives an AobjWorkers.
#ifndef AOBJ_TOOLS_BENCH_AOBJ_RUNNER_H_
#define AOBJ_TOOLS_BENCH_AOBJ_RUNNER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load.h"
#include "bench/proc_util.h"

namespace aobj::bench {

// An aobj-server child on 127.0.0.1 with a private credentials file and bucket `bucket`.
class AobjServer {
 public:
  struct Options {
    std::string binary;            // aobj-server
    std::string store = "memory";  // memory | fs
    std::string dir;               // scratch: port file, log, fs root
    std::string credentials_file;  // chmod 600
    std::string bucket = "bench";
    std::vector<std::string> extra_args;
  };
  static absl::StatusOr<std::unique_ptr<AobjServer>> Start(const Options& options);
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return process_->pid(); }
  const std::string& log_path() const { return log_path_; }

 private:
  AobjServer() = default;
  std::unique_ptr<ChildProcess> process_;
  std::string endpoint_;
  std::string log_path_;
};

// How one aobj line of the report loads the server.
struct AobjVariant {
  std::string name;  // report label, e.g. "aobj-memory"
  std::string endpoint;
  std::string credentials_file;
  std::string bucket = "bench";
  // library (AllocateBuffer), caller (malloc + RegisterBuffer) or device (cudaMalloc, moved
  // through a DeviceStager of the thread's own, aobj/device.h)
  std::string buffers = "library";
  int processes = 1;
  int threads = 1;         // load threads per process
  std::string transports;  // UCX_TLS for the client ("" = UCX's choice)
  bool allow_inline = true;
  bool fast_path = true;  // offer FAST_PATH (spec 8.9); false: every request by gRPC
  std::string checksum = "crc32c";
  bool opaque_etags = false;  // offer OPAQUE_ETAG (AOBJ-OBJ-016)
  uint64_t device_chunk = 16ull << 20;  // buffers "device": the stager's chunk and depth
  int device_depth = 4;
  uint64_t max_size = 0;  // largest object of the run (buffer size)
};

class AobjWorkers {
 public:
  static absl::StatusOr<std::unique_ptr<AobjWorkers>> Start(const AobjVariant& variant);
  ~AobjWorkers();
  AobjWorkers(const AobjWorkers&) = delete;
  AobjWorkers& operator=(const AobjWorkers&) = delete;

  // Runs one cell in every worker. `at_start` runs once all are warmed up, right before release.
  // GET reads key "get-<size>" (which must exist); PUT writes "put-<size>-p<i>-t<j>".
  absl::StatusOr<LoadResult> RunCell(Op op, uint64_t size, const LoadSpec& spec,
                                     const std::function<void()>& at_start);
  const AobjVariant& variant() const { return variant_; }

 private:
  explicit AobjWorkers(AobjVariant v) : variant_(std::move(v)) {}
  AobjVariant variant_;
  std::vector<std::unique_ptr<ChildProcess>> workers_;
};

// The key a GET cell reads and the keys a PUT cell writes.
std::string GetKey(uint64_t size);
std::string PutKey(uint64_t size, int process, int thread);

// Entry point of `aobj-bench --internal-worker ...`.
int WorkerMain(int argc, char** argv);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_AOBJ_RUNNER_H_
