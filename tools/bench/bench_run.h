// aobj-bench: the order of a run. Starts the servers and peers, measures idle CPU, runs the
// size sweep and the small-request mode, collects memory figures, and writes the report.
//
// Threading: RunBench blocks its caller (the main thread).
#ifndef AOBJ_TOOLS_BENCH_BENCH_RUN_H_
#define AOBJ_TOOLS_BENCH_BENCH_RUN_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/load.h"

namespace aobj::bench {

// Everything the flags say (see kUsage in bench_main.cc for the meaning of each).
struct Flags {
  std::vector<uint64_t> sizes;
  std::vector<Op> ops;
  int threads = 1;
  std::vector<int> processes;
  int64_t count = 0;
  double duration = 0.4;
  int64_t min_ops = -1;
  int64_t warmup = -1;
  std::vector<std::string> buffers, stores, transports, compare;
  std::vector<std::string> etags = {"md5"};
  uint64_t device_chunk = 16ull << 20;  // --buffers device: DeviceStagingOptions
  int device_depth = 4;
  std::string checksum = "crc32c";
  std::string endpoint, credentials, bucket = "bench", server_binary;
  std::vector<std::string> server_args;  // --server-args
  pid_t server_pid = -1;
  uint64_t moto_max = 64ull << 20;
  std::string nginx, moto, wrk;
  // A running S3 server to compare with in place of moto (radosgw on the same cluster): its
  // HOST:PORT, and the name its rows carry. It must accept moto's keys (benchkey/benchsecret).
  std::string s3_endpoint, s3_name = "s3";
  double small_duration = 0.5;
  int small_inflight = 16;
  double idle_seconds = 5;
  std::string json, svg;
  bool no_inline = false;
  bool ucx_rkey_per_op = false;
  bool ucx_verified = false;
};

// Runs the benchmark; returns the process exit status (0, 1 on a setup failure, 3 when a cell
// failed).
int RunBench(const Flags& flags, const std::string& command);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_BENCH_RUN_H_
