// aobj-bench: the measurement loop shared by every system under test, and its results.
//
// RunLoad() runs `threads` closed loops (one operation in flight per thread). Each thread first
// builds its operation (connections, buffers) and runs its warm-up operations; when every thread
// is ready the coordinator calls `at_start` (where callers snapshot server CPU, or synchronise
// several processes), then releases all threads at once. The clock and the CPU accounting run
// from that release until the last thread has finished.
//
// Threading: RunLoad blocks its caller; `setup` runs on each load thread.
#ifndef AOBJ_TOOLS_BENCH_LOAD_H_
#define AOBJ_TOOLS_BENCH_LOAD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace aobj::bench {

enum class Op { kGet, kPut };
inline const char* OpName(Op op) { return op == Op::kGet ? "GET" : "PUT"; }

struct LoadSpec {
  int threads = 1;
  int64_t count = 0;        // measured operations in total; 0: run for duration_s
  double duration_s = 0.5;  // with count == 0
  int64_t min_ops = 3;      // with count == 0: at least this many, however long they take
  int64_t warmup_ops = 1;   // per thread, before the clock starts
};

struct LoadResult {
  std::vector<double> latency_us;  // one per measured operation
  uint64_t ops = 0;
  uint64_t bytes = 0;
  int64_t start_ns = 0;  // NowNs() at release
  int64_t end_ns = 0;    // NowNs() when the last thread finished
  double cpu_s = 0;      // this process's CPU over [start, end]
  // Merges another process's result (aggregate over client processes).
  void Merge(const LoadResult& other);
  double seconds() const { return static_cast<double>(end_ns - start_ns) / 1e9; }
  // Text form for the worker pipe protocol: "RESULT ..." and "LAT ..." lines.
  std::string Serialize() const;
  static absl::StatusOr<LoadResult> Parse(const std::string& result_line,
                                          const std::string& lat_line);
};

// One operation of one thread; returns its error, if any.
using OpFn = std::function<absl::Status()>;
// Builds thread `index`'s operation; runs on that thread.
using ThreadSetup = std::function<absl::StatusOr<OpFn>(int index)>;

absl::StatusOr<LoadResult> RunLoad(const LoadSpec& spec, uint64_t bytes_per_op,
                                   const ThreadSetup& setup,
                                   const std::function<absl::Status()>& at_start);

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, mean = 0, min = 0, max = 0;
};
// Nearest-rank percentiles; sorts `v`.
Percentiles ComputePercentiles(std::vector<double>& v);

// Page-aligned heap buffers, pre-faulted once and reused across cells (fresh pages are slow to
// first touch here; shared/FACTS.md). One slot per load thread; grows when a larger size comes.
class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  // Thread-safe for distinct `slot`s once Reserve(slots) has run.
  void Reserve(size_t slots);
  uint8_t* Get(size_t slot, size_t size);

 private:
  struct Slot {
    uint8_t* data = nullptr;
    size_t size = 0;
  };
  std::vector<Slot> slots_;
};

// Parses "4K", "64KiB", "1M", "16MB", "1G", "123" (binary units).
absl::StatusOr<uint64_t> ParseSize(const std::string& text);
// "4K", "64M", "1G" (binary units) for labels.
std::string SizeLabel(uint64_t bytes);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_LOAD_H_
