#include "wire/error_detail.h"

#include <algorithm>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "aobj/status.h"
#include "wire/error_registry.h"

namespace aobj {
namespace {

constexpr char kServerTimePayloadUrl[] = "aobj.dev/server-time-ms";
constexpr char kRetryAfterPayloadUrl[] = "aobj.dev/retry-after-ms";

}  // namespace

absl::Status WithServerTime(absl::Status status, int64_t server_time_ms) {
  status.SetPayload(kServerTimePayloadUrl, absl::Cord(std::to_string(server_time_ms)));
  return status;
}

absl::Status WithRetryAfter(absl::Status status, absl::Duration wait) {
  const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(wait), 1, kMaxRetryAfterMs);
  status.SetPayload(kRetryAfterPayloadUrl, absl::Cord(std::to_string(ms)));
  return status;
}

aobj::v1::Error ErrorDetail(const absl::Status& status, const aobj::v1::VersionRange* supported) {
  const ErrorInfo info = GetErrorInfo(ErrorCodeOf(status));
  aobj::v1::Error error;
  // AOBJ-ERR-010: codes of 0x80000000 and above travel as the int32 of the same bit pattern.
  error.set_code(static_cast<aobj::v1::ErrorCode>(info.code));
  // AOBJ-ERR-004: name, s3_code and retryable come from the registry row of the code.
  error.set_name(std::string(info.name));
  error.set_s3_code(std::string(info.s3_code));
  error.set_message(std::string(status.message()));
  error.set_retryable(info.retryable);
  if (supported != nullptr) *error.mutable_supported_versions() = *supported;
  if (const auto t = status.GetPayload(kServerTimePayloadUrl); t.has_value()) {
    uint64_t ms = 0;
    if (absl::SimpleAtoi(std::string(*t), &ms)) error.set_server_time_ms(ms);
  }
  if (const auto r = status.GetPayload(kRetryAfterPayloadUrl); r.has_value()) {
    uint32_t ms = 0;
    if (absl::SimpleAtoi(std::string(*r), &ms)) error.set_retry_after_ms(ms);
  }
  return error;
}

}  // namespace aobj
