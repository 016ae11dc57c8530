// The aobj.v1.Error that carries a failed request's code to the peer (AOBJ-ERR-003/004/010): one
// conversion for every transport that sends it (the gRPC trailer `aobj-error-bin`, control/rpc.h,
// and the fast path's error replies, section 8.9).
#ifndef AOBJ_WIRE_ERROR_DETAIL_H_
#define AOBJ_WIRE_ERROR_DETAIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aobj/v1/aobj.pb.h"

namespace aobj {

// The Error of a non-OK `status`: code, name, s3_code and retryable from the registry row of its
// code, its message, and `supported` (optional) for UNSUPPORTED_VERSION (AOBJ-SES-003).
aobj::v1::Error ErrorDetail(const absl::Status& status,
                            const aobj::v1::VersionRange* supported = nullptr);

// AOBJ-AUTH-023: `status` (REQUEST_TIME_TOO_SKEWED) carrying the server's clock, which
// ErrorDetail puts in `server_time_ms`.
absl::Status WithServerTime(absl::Status status, int64_t server_time_ms);

// AOBJ-FLO-006, AOBJ-FLO-007: no retry hint above one minute is sent or obeyed.
inline constexpr int64_t kMaxRetryAfterMs = 60000;

// A SLOW_DOWN or TOO_MANY_TRANSFERS `status` that tells the client how long to wait before it
// tries again (Error.retry_after_ms, AOBJ-FLO-006).
absl::Status WithRetryAfter(absl::Status status, absl::Duration wait);

}  // namespace aobj

#endif  // AOBJ_WIRE_ERROR_DETAIL_H_
