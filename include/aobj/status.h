// Protocol error codes attached to absl::Status (spec section "Error registry").
//
// Every failure the libraries return is an absl::Status whose payload carries the AOBJ error
// code; ErrorCodeOf() reads it back. The numeric values equal aobj.v1.ErrorCode on the wire and
// the rows of the spec's Table 3 (section 11.2). Decide on the AOBJ code, not on
// absl::Status::code(): several AOBJ codes share one canonical code (AOBJ-ERR-003).
// Codes produced by the client library itself, without a server reply: INCOMPLETE_TRANSFER,
// BAD_DIGEST (AOBJ-DAT-004), DESCRIPTOR_TOO_SMALL for an inline GET body longer than the
// windows (AOBJ-DAT-162), DEADLINE_EXCEEDED and CANCELLED (AOBJ-CTL-014); a call that ended
// with no AOBJ code at all (connection lost) is INTERNAL and its outcome unknown (AOBJ-ERR-006).
// Threading: all functions are pure and thread-safe. Ownership: ErrorInfo's string_views point
// at static storage.
#ifndef AOBJ_STATUS_H_
#define AOBJ_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace aobj {

enum class ErrorCode : uint32_t {
  kOk = 0,
  kInternal = 1,
  kInvalidArgument = 2,
  kUnsupportedVersion = 3,
  kMissingAuthentication = 4,
  kSignatureDoesNotMatch = 5,
  kInvalidAccessKeyId = 6,
  kRequestTimeTooSkewed = 7,
  kRequestReplayed = 8,
  kNoSuchSession = 9,
  kSessionExpired = 10,
  kAccessDenied = 11,
  kSlowDown = 12,
  kTooManyTransfers = 13,
  kNegotiationFailed = 14,
  kNoSuchBucket = 20,
  kNoSuchKey = 21,
  kBucketAlreadyExists = 22,
  kBucketNotEmpty = 23,
  kInvalidBucketName = 24,
  kKeyTooLong = 25,
  kEntityTooLarge = 26,
  kInvalidDescriptor = 30,
  kDescriptorOutOfBounds = 31,
  kDescriptorTooSmall = 32,
  kInvalidRkey = 33,
  kUnsupportedMemoryType = 34,
  kBadDigest = 40,
  kTransferFailed = 41,
  kDataChannelUnavailable = 42,
  kIncompleteTransfer = 43,
  kDeadlineExceeded = 44,     // the call's deadline passed (spec section 3.7)
  kCancelled = 45,            // the call was cancelled (AOBJ-DAT-016)
  kEndpointUnconfirmed = 46,  // the session's data endpoint is not proven yet (AOBJ-SES-025)
  kStorageError = 50,
  kInvalidRange = 60,
  kPreconditionFailed = 61,
  kNotModified = 62,
  kMetadataTooLarge = 63,
  kInvalidContinuationToken = 64,
  kInvalidRequest = 65,
  kNoSuchUpload = 70,
  kInvalidPart = 71,
  kInvalidPartOrder = 72,
  kEntityTooSmall = 73,
  kTooManyParts = 74,
  kTooManyUploads = 75,
};

// Static facts about one code (the registry row).
struct ErrorInfo {
  ErrorCode code;
  std::string_view name;     // "DESCRIPTOR_OUT_OF_BOUNDS"
  std::string_view s3_code;  // "InvalidArgument"
  bool retryable;
  absl::StatusCode canonical;
};

// The registry row of `code`; unknown codes (grease included) map to the kInternal row with
// `code` preserved.
ErrorInfo GetErrorInfo(ErrorCode code);

// A non-OK status with `code` attached. `message` must not contain secret material.
absl::Status MakeError(ErrorCode code, std::string_view message);

// The code attached to `status`: kOk for OK, kInternal for a status without an AOBJ code.
ErrorCode ErrorCodeOf(const absl::Status& status);

// Why a call failed in the control channel itself, with no reply from an AOBJ server (such a
// status is INTERNAL, AOBJ-ERR-006): "connection refused", "cannot resolve the host name",
// "no answer within the deadline", "TLS handshake failed", "the connection was lost", or the
// transport's own words. Empty for every other status, a server's error replies included.
std::string ControlChannelFailure(const absl::Status& status);

}  // namespace aobj

#endif  // AOBJ_STATUS_H_
