// Server metrics in the Prometheus text exposition format (docs/observability.md), and the
// JSON list of sessions served at /sessions.
//
// MethodMetrics is written by request threads (lock-free atomics, relaxed: a scrape sees each
// counter at some recent value, not a consistent cut across counters) and read by the metrics
// HTTP thread. The Render functions are pure.
#ifndef AOBJ_SERVER_METRICS_H_
#define AOBJ_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "aobj/server.h"
#include "aobj/status.h"
#include "server/h2_guard.h"
#include "server/scheduler.h"
#include "session/session_table.h"
#include "wire/methods.h"

namespace aobj {

// Upper bounds (seconds) of the request-latency histogram buckets; +Inf is implicit.
inline constexpr std::array<double, 16> kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,   10.0};

// Per-method operation counts and latencies, and errors by AOBJ error code.
class MethodMetrics {
 public:
  static constexpr int kMethods = static_cast<int>(Method::kCount);
  static constexpr uint32_t kCodes = 128;  // error codes at or past this are counted as INTERNAL

  // One finished request of `method` that took `elapsed` and ended with `code` (kOk: success).
  void Record(Method method, ErrorCode code, absl::Duration elapsed);

  struct Histogram {
    std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets{};  // not cumulative
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
  };
  const Histogram& latency(int method) const { return latency_[method]; }
  uint64_t errors(uint32_t code) const { return errors_[code].load(std::memory_order_relaxed); }

 private:
  std::array<Histogram, kMethods> latency_;
  std::array<std::atomic<uint64_t>, kCodes> errors_{};
};

// Everything one scrape reports.
struct MetricsView {
  std::string server_name;  // aobj_build_info's labels with the library's version
  ServerStats stats;
  uint64_t transfers_in_flight = 0;
  SchedulerStats scheduler;  // the request scheduler's queue (AOBJ-SEC-013)
  std::optional<H2GuardStats> guard;       // the HTTP/2 guard's counts, when it runs
  const MethodMetrics* methods = nullptr;  // borrowed for the call
};

// The Prometheus text format (version 0.0.4) of `view`, with aobj_build_info and the
// process_* metrics of Prometheus's client libraries (CPU, memory, descriptors, threads, start
// time, read from /proc/self).
std::string RenderPrometheus(const MetricsView& view);

// `sessions` as a JSON object {"sessions":[{"access_key_id":..,"age_ms":..,"id":..,
// "in_flight":..,"lease_left_ms":..,"state":..}]}, printed by protobuf's JSON printer
// (google.protobuf.Struct), so that escaping is a maintained library's.
std::string RenderSessionsJson(const std::vector<SessionRow>& sessions, absl::Time now);

}  // namespace aobj

#endif  // AOBJ_SERVER_METRICS_H_
