#include "server/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "aobj/status.h"

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

// JSON string body: quotes, backslashes and control bytes escaped; other bytes as they are
// (access key ids are printable ASCII; session ids are hex).
std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u >= 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string RenderPrometheus(const MetricsView& view) {
  std::string out;
  const ServerStats& s = view.stats;
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
  return out;
}

std::string RenderSessionsJson(const std::vector<SessionRow>& sessions, absl::Time now) {
  std::string out = "{\"sessions\":[";
  bool first = true;
  for (const SessionRow& s : sessions) {
    if (!first) out.push_back(',');
    first = false;
    absl::StrAppend(&out, "{\"id\":", JsonString(s.id_hex),
                    ",\"access_key_id\":", JsonString(s.access_key_id),
                    ",\"state\":", JsonString(s.state),
                    ",\"age_ms\":", absl::ToInt64Milliseconds(now - s.created),
                    ",\"lease_left_ms\":",
                    std::max<int64_t>(0, absl::ToInt64Milliseconds(s.expires - now)),
                    ",\"in_flight\":", s.in_flight, "}");
  }
  out += "]}\n";
  return out;
}

}  // namespace aobj
