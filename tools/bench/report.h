// aobj-bench: results and their three forms: a table on stdout, JSON, and a hand-written SVG
// (throughput and p50 latency against object size, one line per system and direction).
//
// Units: GB/s is 10^9 bytes per second; latencies in microseconds; CPU in seconds per GB moved.
// Threading: plain data and pure functions.
#ifndef AOBJ_TOOLS_BENCH_REPORT_H_
#define AOBJ_TOOLS_BENCH_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/load.h"

namespace aobj::bench {

struct Cell {
  std::string section;                // "sweep" (throughput by size) or "small" (4 KiB latency)
  std::string system;                 // "aobj-memory", "ucx", "nginx", "nginx-wrk", "moto", ...
  std::string transport = "default";  // "default" or a UCX_TLS restriction such as "tcp"
  Op op = Op::kGet;
  uint64_t size = 0;
  int threads = 1;    // load threads per process
  int processes = 1;  // client processes; in flight = threads * processes
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double gbps = 0;
  double ops_per_s = 0;
  Percentiles latency_us;
  double client_cpu_s_per_gb = -1;  // < 0: not measured
  double server_cpu_s_per_gb = -1;
  std::string note;
  std::string error;  // non-empty: the cell failed (figures are zero)

  int in_flight() const { return threads * processes; }
  // Fills the derived figures from a load result and CPU deltas (< 0: unknown).
  void Fill(LoadResult& r, double client_cpu_s, double server_cpu_s);
};

// Server memory (/proc/<pid>/status). VmRSS counts the clients' shared-memory segments the
// server has attached and touched (RssShmem) besides its own memory (RssAnon).
struct MemoryFigures {
  std::string system;
  int64_t before_kib = -1;       // VmRSS after start, with one idle session
  int64_t before_anon_kib = -1;  // RssAnon at the same time
  int64_t peak_kib = -1;         // VmHWM at the end of the run
  int64_t peak_anon_kib = -1;    // largest RssAnon sampled every 20 ms during the run
  int64_t peak_shmem_kib = -1;   // largest RssShmem sampled every 20 ms during the run
  int64_t after_kib = -1;        // VmRSS at the end (every object deleted, sessions closed)
  int64_t after_anon_kib = -1;   // RssAnon at the same time
};

struct IdleFigures {
  std::string system;
  double seconds = 0;
  double server_cpu_s = -1;  // over `seconds`, one session open and idle
  double client_cpu_s = -1;  // the bench process (holding that session) over the same time
};

struct Report {
  std::vector<std::pair<std::string, std::string>> machine;
  std::string command;
  std::vector<Cell> cells;
  std::vector<IdleFigures> idle;
  std::vector<MemoryFigures> memory;
  std::vector<std::string> notes;
};

// A ratio between two cells of the same run.
struct Ratio {
  std::string section, system, versus, metric;  // metric: "gbps", "p50", "ops_per_s"
  Op op = Op::kGet;
  uint64_t size = 0;
  int in_flight = 1;
  double value = 0;  // system / versus (for p50, below 1 means the system is faster)
};
// Every aobj line against ucx (same transport), nginx and moto, at the same op, size and
// concurrency; in the small section p50 and ops/s against nginx (curl and wrk) and moto.
std::vector<Ratio> ComputeRatios(const Report& report);

std::string FormatTable(const Report& report);
std::string FormatJson(const Report& report);
std::string FormatSvg(const Report& report);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_REPORT_H_
