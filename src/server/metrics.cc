#include "server/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "aobj/status.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "ucp/api/ucp.h"

#ifndef AOBJ_VERSION_STRING
#define AOBJ_VERSION_STRING "unknown"
#endif

namespace aobj {

void MethodMetrics::Record(Method method, ErrorCode code, absl::Duration elapsed) {
  const int m = static_cast<int>(method);
  if (m < 0 || m >= kMethods) return;
  Histogram& h = latency_[m];
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const size_t bucket =
      std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds) -
      kLatencyBuckets.begin();
  h.buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  h.count.fetch_add(1, std::memory_order_relaxed);
  h.sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Nanoseconds(elapsed))),
                     std::memory_order_relaxed);
  if (code != ErrorCode::kOk) {
    uint32_t c = static_cast<uint32_t>(code);
    if (c >= kCodes) c = static_cast<uint32_t>(ErrorCode::kInternal);
    errors_[c].fetch_add(1, std::memory_order_relaxed);
  }
}

namespace {

void Family(std::string* out, const char* name, const char* type, const char* help) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

std::string Le(double bound) { return absl::StrFormat("%g", bound); }

// A Prometheus label value: backslash, double quote and newline escaped.
std::string Label(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// What the process uses, from /proc/self (Linux), as Prometheus's client libraries report it.
void ProcessMetrics(std::string* out) {
  struct rusage ru {};
  if (::getrusage(RUSAGE_SELF, &ru) == 0) {
    const double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                       ru.ru_stime.tv_usec / 1e6;
    Family(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent.");
    absl::StrAppend(out, "process_cpu_seconds_total ", absl::StrFormat("%.6f", cpu), "\n");
  }
  // /proc/self/stat: fields after the command's closing parenthesis; field 20 (num_threads),
  // 22 (starttime, clock ticks after boot), 23 (vsize), 24 (rss, pages).
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::vector<std::string> f = absl::StrSplit(stat.substr(close + 2), ' ');
    // f[0] is field 3 (state): field N is f[N - 3].
    uint64_t threads = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
    if (f.size() > 21 && absl::SimpleAtoi(f[17], &threads) &&
        absl::SimpleAtoi(f[19], &start_ticks) && absl::SimpleAtoi(f[20], &vsize) &&
        absl::SimpleAtoi(f[21], &rss_pages)) {
      Family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
      absl::StrAppend(out, "process_resident_memory_bytes ",
                      rss_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), "\n");
      Family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
      absl::StrAppend(out, "process_virtual_memory_bytes ", vsize, "\n");
      Family(out, "process_threads", "gauge", "Threads of the process.");
      absl::StrAppend(out, "process_threads ", threads, "\n");
      // Boot time (btime of /proc/stat) plus the start in clock ticks.
      std::ifstream proc_stat("/proc/stat");
      for (std::string line; std::getline(proc_stat, line);) {
        uint64_t btime = 0;
        if (line.rfind("btime ", 0) == 0 && absl::SimpleAtoi(line.substr(6), &btime)) {
          const double start = btime + static_cast<double>(start_ticks) /
                                           static_cast<double>(::sysconf(_SC_CLK_TCK));
          Family(out, "process_start_time_seconds", "gauge",
                 "Start time of the process since the Unix epoch in seconds.");
          absl::StrAppend(out, "process_start_time_seconds ", absl::StrFormat("%.2f", start), "\n");
          break;
        }
      }
    }
  }
  uint64_t fds = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++fds;
    }
    ::closedir(d);
    Family(out, "process_open_fds", "gauge", "Open file descriptors.");
    absl::StrAppend(out, "process_open_fds ", fds > 0 ? fds - 1 : 0, "\n");  // less opendir's
  }
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    Family(out, "process_max_fds", "gauge", "Limit on open file descriptors.");
    absl::StrAppend(out, "process_max_fds ", static_cast<uint64_t>(rl.rlim_cur), "\n");
  }
}

}  // namespace

std::string RenderPrometheus(const MetricsView& view) {
  std::string out;
  const ServerStats& s = view.stats;
  Family(&out, "aobj_build_info", "gauge",
         "Always 1; the labels name the server, its library version, the AOBJ protocol version "
         "and the UCX it runs on.");
  unsigned ucx_major = 0, ucx_minor = 0, ucx_release = 0;
  ucp_get_version(&ucx_major, &ucx_minor, &ucx_release);
  absl::StrAppend(&out, "aobj_build_info{server=\"", Label(view.server_name), "\",version=\"",
                  Label(AOBJ_VERSION_STRING), "\",protocol=\"1\",ucx=\"", ucx_major, ".", ucx_minor,
                  ".", ucx_release, "\"} 1\n");
  Family(&out, "aobj_requests_total", "counter", "Requests handled, by method.");
  if (view.methods != nullptr) {
    for (int m = 0; m < MethodMetrics::kMethods; ++m) {
      absl::StrAppend(&out, "aobj_requests_total{method=\"", MethodName(static_cast<Method>(m)),
                      "\"} ", view.methods->latency(m).count.load(std::memory_order_relaxed),
                      "\n");
    }
  }
  Family(&out, "aobj_request_errors_total", "counter", "Failed requests, by AOBJ error code.");
  if (view.methods != nullptr) {
    for (uint32_t c = 0; c < MethodMetrics::kCodes; ++c) {
      const uint64_t n = view.methods->errors(c);
      if (n == 0) continue;
      absl::StrAppend(&out, "aobj_request_errors_total{code=\"",
                      absl::string_view(GetErrorInfo(static_cast<ErrorCode>(c)).name.data(),
                                        GetErrorInfo(static_cast<ErrorCode>(c)).name.size()),
                      "\"} ", n, "\n");
    }
  }
  Family(&out, "aobj_bytes_in_total", "counter", "Object bytes received (PUT, UploadPart).");
  absl::StrAppend(&out, "aobj_bytes_in_total ", s.bytes_in, "\n");
  Family(&out, "aobj_bytes_out_total", "counter", "Object bytes sent (GET).");
  absl::StrAppend(&out, "aobj_bytes_out_total ", s.bytes_out, "\n");
  Family(&out, "aobj_request_duration_seconds", "histogram",
         "Time from dispatch to response, by method.");
  if (view.methods != nullptr) {
    for (int m = 0; m < MethodMetrics::kMethods; ++m) {
      const MethodMetrics::Histogram& h = view.methods->latency(m);
      const uint64_t count = h.count.load(std::memory_order_relaxed);
      if (count == 0) continue;  // methods never called: only their request counter (0)
      const char* name = MethodName(static_cast<Method>(m));
      uint64_t cumulative = 0;
      for (size_t b = 0; b < kLatencyBuckets.size(); ++b) {
        cumulative += h.buckets[b].load(std::memory_order_relaxed);
        absl::StrAppend(&out, "aobj_request_duration_seconds_bucket{method=\"", name,
                        "\",le=\"", Le(kLatencyBuckets[b]), "\"} ", cumulative, "\n");
      }
      absl::StrAppend(&out, "aobj_request_duration_seconds_bucket{method=\"", name,
                      "\",le=\"+Inf\"} ", count, "\n");
      absl::StrAppend(&out, "aobj_request_duration_seconds_sum{method=\"", name, "\"} ",
                      absl::StrFormat("%.9f", h.sum_ns.load(std::memory_order_relaxed) / 1e9),
                      "\n");
      absl::StrAppend(&out, "aobj_request_duration_seconds_count{method=\"", name, "\"} ", count,
                      "\n");
    }
  }
  Family(&out, "aobj_sessions_open", "gauge", "Open sessions.");
  absl::StrAppend(&out, "aobj_sessions_open ", s.open_sessions, "\n");
  Family(&out, "aobj_endpoints", "gauge", "UCX data-channel endpoints.");
  absl::StrAppend(&out, "aobj_endpoints ", s.endpoints, "\n");
  Family(&out, "aobj_rkeys_outstanding", "gauge", "Unpacked remote keys not yet released.");
  absl::StrAppend(&out, "aobj_rkeys_outstanding ", s.rkeys_outstanding, "\n");
  Family(&out, "aobj_peer_rma_refused_total", "counter",
         "Put, get and atomic requests that data-channel peers sent to the server's workers, "
         "dropped (AOBJ-SEC-020).");
  absl::StrAppend(&out, "aobj_peer_rma_refused_total ", s.peer_rma_refused, "\n");
  Family(&out, "aobj_data_channels_failed_total", "counter",
         "Session data channels failed: an RMA operation failed, the data-wait bound passed, an "
         "abandoned request outlived its grace, or the peer was reported gone (spec 13.7).");
  absl::StrAppend(&out, "aobj_data_channels_failed_total ", s.data_channels_failed, "\n");
  Family(&out, "aobj_fast_requests_total", "counter",
         "Requests that arrived on the fast path (active messages on the data channel, spec 8.9).");
  absl::StrAppend(&out, "aobj_fast_requests_total ", s.fast_requests, "\n");
  Family(&out, "aobj_fast_dropped_total", "counter",
         "Fast-path messages dropped unanswered: not a frame, naming no session of the key it "
         "claims, or for an endpoint gone or not confirmed (AOBJ-DAT-168, AOBJ-DAT-168).");
  absl::StrAppend(&out, "aobj_fast_dropped_total ", s.fast_dropped, "\n");
  Family(&out, "aobj_fast_served_here_total", "counter",
         "Fast-path requests run on the thread that received them (a small GET, PUT or HEAD "
         "that waits on nothing, while a request thread was idle) instead of a request thread.");
  absl::StrAppend(&out, "aobj_fast_served_here_total ", s.fast_served_here, "\n");
  Family(&out, "aobj_transfers_in_flight", "gauge", "Admitted data requests in progress.");
  absl::StrAppend(&out, "aobj_transfers_in_flight ", view.transfers_in_flight, "\n");
  const SchedulerStats& q = view.scheduler;
  Family(&out, "aobj_requests_queued", "gauge", "Requests waiting for a request thread.");
  absl::StrAppend(&out, "aobj_requests_queued ", q.queued, "\n");
  Family(&out, "aobj_requests_queued_bytes", "gauge",
         "Bytes of the messages of the requests waiting for a request thread.");
  absl::StrAppend(&out, "aobj_requests_queued_bytes ", q.queued_bytes, "\n");
  Family(&out, "aobj_requests_running", "gauge", "Requests on a request thread.");
  absl::StrAppend(&out, "aobj_requests_running ", q.running, "\n");
  Family(&out, "aobj_requests_shed_total", "counter",
         "Requests answered SLOW_DOWN because a queue bound was reached.");
  absl::StrAppend(&out, "aobj_requests_shed_total ", q.rejected, "\n");
  if (view.guard.has_value()) {
    const H2GuardStats& g = *view.guard;
    Family(&out, "aobj_http2_connections_total", "counter",
           "Control connections the HTTP/2 guard relayed.");
    absl::StrAppend(&out, "aobj_http2_connections_total ", g.relayed, "\n");
    Family(&out, "aobj_http2_connections_cut_total", "counter",
           "Control connections the HTTP/2 guard closed: for resetting their streams "
           "(AOBJ-SEC-023), or for open streams, header blocks, unanswered pings or frames "
           "carrying nothing (AOBJ-SEC-024).");
    absl::StrAppend(&out, "aobj_http2_connections_cut_total{reason=\"reset_streams\"} ",
                    g.cut_for_resets, "\n");
    absl::StrAppend(&out, "aobj_http2_connections_cut_total{reason=\"frames\"} ", g.cut_for_streams,
                    "\n");
    Family(&out, "aobj_http2_calls_held_total", "counter",
           "Times a call of a connection without a verified request waited for room "
           "(AOBJ-SEC-026).");
    absl::StrAppend(&out, "aobj_http2_calls_held_total ", g.calls_held, "\n");
    Family(&out, "aobj_http2_calls_whole_total", "counter",
           "Calls whose message the guard held whole with their headers, read at once "
           "(AOBJ-SEC-029).");
    absl::StrAppend(&out, "aobj_http2_calls_whole_total ", g.calls_whole, "\n");
    Family(&out, "aobj_http2_calls_late_total", "counter",
           "Calls the guard passed on while their message was still coming, after its 250 ms "
           "wait (AOBJ-SEC-029).");
    absl::StrAppend(&out, "aobj_http2_calls_late_total ", g.calls_late, "\n");
    Family(&out, "aobj_http2_calls_late_whole_total", "counter",
           "Of those, calls whose message then came, which the server read at once "
           "(AOBJ-SEC-029).");
    absl::StrAppend(&out, "aobj_http2_calls_late_whole_total ", g.calls_late_whole, "\n");
    Family(&out, "aobj_http2_calls_late_large_total", "counter",
           "Of those, calls that sent 16 KiB of their message without its end, which then wait "
           "for a read slot (AOBJ-SEC-029).");
    absl::StrAppend(&out, "aobj_http2_calls_late_large_total ", g.calls_late_large, "\n");
    Family(&out, "aobj_tls_handshakes_failed_total", "counter",
           "TLS handshakes that failed or timed out in the guard (of them, clients that hung up "
           "first: reason=\"abandoned\").");
    absl::StrAppend(&out, "aobj_tls_handshakes_failed_total{reason=\"failed\"} ",
                    g.tls_failed - std::min(g.tls_failed, g.tls_abandoned), "\n");
    absl::StrAppend(&out, "aobj_tls_handshakes_failed_total{reason=\"abandoned\"} ",
                    g.tls_abandoned, "\n");
  }
  ProcessMetrics(&out);
  return out;
}

std::string RenderSessionsJson(const std::vector<SessionRow>& sessions, absl::Time now) {
  google::protobuf::Struct doc;
  google::protobuf::ListValue* list = (*doc.mutable_fields())["sessions"].mutable_list_value();
  for (const SessionRow& s : sessions) {
    auto& f = *list->add_values()->mutable_struct_value()->mutable_fields();
    f["id"].set_string_value(s.id_hex);
    f["access_key_id"].set_string_value(s.access_key_id);
    f["state"].set_string_value(s.state);
    f["age_ms"].set_number_value(static_cast<double>(absl::ToInt64Milliseconds(now - s.created)));
    f["lease_left_ms"].set_number_value(
        static_cast<double>(std::max<int64_t>(0, absl::ToInt64Milliseconds(s.expires - now))));
    f["in_flight"].set_number_value(static_cast<double>(s.in_flight));
  }
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(doc, &out).ok()) return "{\"sessions\":[]}\n";
  return out + "\n";
}

}  // namespace aobj
