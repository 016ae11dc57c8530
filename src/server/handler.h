// Request handling of the AOBJ/1 server, independent of gRPC: bytes and authentication in,
// response bytes or an error out. The gRPC service (service.cc) and the fuzzers both drive it.
//
// Threading: Handle() is called from many request threads at once; all state it touches is
// thread-safe (store, data channel, authenticator, session table, counters).
// Ownership: every dependency is borrowed and must outlive the handler.
#ifndef AOBJ_SERVER_HANDLER_H_
#define AOBJ_SERVER_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "server/data_channel.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "wire/protocol.h"

namespace aobj {

struct HandlerConfig {
  SessionLimits limits;
  std::vector<uint32_t> capabilities;  // what this server supports
  uint32_t min_version = kProtocolVersion;
  uint32_t max_version = kProtocolVersion;
  uint64_t staging_bytes = 8 << 20;    // chunk size for stores without direct buffers
  uint64_t max_rma_piece = 64 << 20;   // AOBJ-DAT-012
  size_t max_sessions = 4096;          // open sessions at once (Table 1: SLOW_DOWN beyond)
  size_t max_sessions_per_principal = 1024;  // of one access key (AOBJ-SEC-006)
  std::string server_name;
  std::function<void(const std::string&)> log;
};

// Reusable staging buffers (pre-faulted once, reused: fresh pages are slow to first touch).
class StagingPool {
 public:
  explicit StagingPool(size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}
  std::unique_ptr<uint8_t[]> Take();
  void Give(std::unique_ptr<uint8_t[]> buffer);
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  const size_t buffer_bytes_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<uint8_t[]>> free_ ABSL_GUARDED_BY(mu_);
};

struct HandlerCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
};

class RequestHandler {
 public:
  RequestHandler(HandlerConfig config, ObjectStore* store, DataChannel* channel,
                 Authenticator* auth, SessionTable* sessions);

  // Handles one request. On error, `*supported` is set to the server's version range when the
  // error is UNSUPPORTED_VERSION (AOBJ-SES-003).
  absl::StatusOr<std::string> Handle(Method method, const RequestAuth& auth,
                                     absl::string_view body, absl::Time now,
                                     aobj::v1::VersionRange* supported);

  HandlerCounters& counters() { return counters_; }
  const HandlerConfig& config() const { return config_; }

 private:
  absl::StatusOr<std::string> Dispatch(Method method, const RequestAuth& auth,
                                       absl::string_view body, absl::Time now);
  absl::StatusOr<std::string> OpenSession(const RequestAuth& auth, absl::string_view body,
                                          absl::Time now);
  absl::StatusOr<std::string> PutObject(const SessionState& s, absl::string_view body);
  absl::StatusOr<std::string> GetObject(const SessionState& s, absl::string_view body);
  void Log(const std::string& line);

  HandlerConfig config_;
  ObjectStore* store_;
  DataChannel* channel_;
  Authenticator* auth_;
  SessionTable* sessions_;
  StagingPool staging_;
  HandlerCounters counters_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_HANDLER_H_
