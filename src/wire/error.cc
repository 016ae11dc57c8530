#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "aobj/status.h"
#include "wire/error_registry.h"

namespace aobj {
namespace {

using C = absl::StatusCode;

// One row per aobj.v1.ErrorCode value; the S3 codes and retryability are the ones listed beside
// the enum in proto/aobj/v1/aobj.proto. Kept in ascending code order.
constexpr ErrorInfo kRegistry[] = {
    {ErrorCode::kOk, "OK", "", false, C::kOk},
    {ErrorCode::kInternal, "INTERNAL", "InternalError", true, C::kInternal},
    {ErrorCode::kInvalidArgument, "INVALID_ARGUMENT", "InvalidArgument", false,
     C::kInvalidArgument},
    {ErrorCode::kUnsupportedVersion, "UNSUPPORTED_VERSION", "UnsupportedVersion", false,
     C::kFailedPrecondition},
    {ErrorCode::kMissingAuthentication, "MISSING_AUTHENTICATION", "MissingSecurityHeader", false,
     C::kUnauthenticated},
    {ErrorCode::kSignatureDoesNotMatch, "SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch", false,
     C::kUnauthenticated},
    {ErrorCode::kInvalidAccessKeyId, "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId", false,
     C::kUnauthenticated},
    {ErrorCode::kRequestTimeTooSkewed, "REQUEST_TIME_TOO_SKEWED", "RequestTimeTooSkewed", false,
     C::kUnauthenticated},
    {ErrorCode::kRequestReplayed, "REQUEST_REPLAYED", "AccessDenied", false, C::kPermissionDenied},
    {ErrorCode::kNoSuchSession, "NO_SUCH_SESSION", "NoSuchSession", false, C::kNotFound},
    {ErrorCode::kSessionExpired, "SESSION_EXPIRED", "SessionExpired", false,
     C::kFailedPrecondition},
    {ErrorCode::kAccessDenied, "ACCESS_DENIED", "AccessDenied", false, C::kPermissionDenied},
    {ErrorCode::kSlowDown, "SLOW_DOWN", "SlowDown", true, C::kResourceExhausted},
    {ErrorCode::kTooManyTransfers, "TOO_MANY_TRANSFERS", "SlowDown", true, C::kResourceExhausted},
    {ErrorCode::kNegotiationFailed, "NEGOTIATION_FAILED", "NegotiationFailed", false,
     C::kFailedPrecondition},
    {ErrorCode::kNoSuchBucket, "NO_SUCH_BUCKET", "NoSuchBucket", false, C::kNotFound},
    {ErrorCode::kNoSuchKey, "NO_SUCH_KEY", "NoSuchKey", false, C::kNotFound},
    {ErrorCode::kBucketAlreadyExists, "BUCKET_ALREADY_EXISTS", "BucketAlreadyExists", false,
     C::kAlreadyExists},
    {ErrorCode::kBucketNotEmpty, "BUCKET_NOT_EMPTY", "BucketNotEmpty", false,
     C::kFailedPrecondition},
    {ErrorCode::kInvalidBucketName, "INVALID_BUCKET_NAME", "InvalidBucketName", false,
     C::kInvalidArgument},
    {ErrorCode::kKeyTooLong, "KEY_TOO_LONG", "KeyTooLongError", false, C::kInvalidArgument},
    {ErrorCode::kEntityTooLarge, "ENTITY_TOO_LARGE", "EntityTooLarge", false, C::kInvalidArgument},
    {ErrorCode::kInvalidDescriptor, "INVALID_DESCRIPTOR", "InvalidArgument", false,
     C::kInvalidArgument},
    {ErrorCode::kDescriptorOutOfBounds, "DESCRIPTOR_OUT_OF_BOUNDS", "InvalidArgument", false,
     C::kOutOfRange},
    {ErrorCode::kDescriptorTooSmall, "DESCRIPTOR_TOO_SMALL", "InvalidArgument", false,
     C::kInvalidArgument},
    {ErrorCode::kInvalidRkey, "INVALID_RKEY", "InvalidArgument", false, C::kInvalidArgument},
    {ErrorCode::kUnsupportedMemoryType, "UNSUPPORTED_MEMORY_TYPE", "NotImplemented", false,
     C::kUnimplemented},
    {ErrorCode::kBadDigest, "BAD_DIGEST", "BadDigest", false, C::kDataLoss},
    {ErrorCode::kTransferFailed, "TRANSFER_FAILED", "InternalError", true, C::kUnavailable},
    {ErrorCode::kDataChannelUnavailable, "DATA_CHANNEL_UNAVAILABLE", "ServiceUnavailable", true,
     C::kUnavailable},
    {ErrorCode::kIncompleteTransfer, "INCOMPLETE_TRANSFER", "IncompleteBody", false, C::kDataLoss},
    {ErrorCode::kDeadlineExceeded, "DEADLINE_EXCEEDED", "RequestTimeout", true,
     C::kDeadlineExceeded},
    {ErrorCode::kCancelled, "CANCELLED", "RequestCancelled", false, C::kCancelled},
    {ErrorCode::kEndpointUnconfirmed, "ENDPOINT_UNCONFIRMED", "AccessDenied", false,
     C::kFailedPrecondition},
    {ErrorCode::kStorageError, "STORAGE_ERROR", "InternalError", true, C::kInternal},
    {ErrorCode::kInvalidRange, "INVALID_RANGE", "InvalidRange", false, C::kOutOfRange},
    {ErrorCode::kPreconditionFailed, "PRECONDITION_FAILED", "PreconditionFailed", false,
     C::kFailedPrecondition},
    {ErrorCode::kNotModified, "NOT_MODIFIED", "NotModified", false, C::kFailedPrecondition},
    {ErrorCode::kMetadataTooLarge, "METADATA_TOO_LARGE", "MetadataTooLarge", false,
     C::kInvalidArgument},
    {ErrorCode::kInvalidContinuationToken, "INVALID_CONTINUATION_TOKEN", "InvalidArgument", false,
     C::kInvalidArgument},
    {ErrorCode::kInvalidRequest, "INVALID_REQUEST", "InvalidRequest", false, C::kInvalidArgument},
    {ErrorCode::kNoSuchUpload, "NO_SUCH_UPLOAD", "NoSuchUpload", false, C::kNotFound},
    {ErrorCode::kInvalidPart, "INVALID_PART", "InvalidPart", false, C::kInvalidArgument},
    {ErrorCode::kInvalidPartOrder, "INVALID_PART_ORDER", "InvalidPartOrder", false,
     C::kInvalidArgument},
    {ErrorCode::kEntityTooSmall, "ENTITY_TOO_SMALL", "EntityTooSmall", false, C::kInvalidArgument},
    {ErrorCode::kTooManyParts, "TOO_MANY_PARTS", "InvalidArgument", false, C::kInvalidArgument},
    {ErrorCode::kTooManyUploads, "TOO_MANY_UPLOADS", "SlowDown", true, C::kResourceExhausted},
};

constexpr bool RegistryIsSorted() {
  for (size_t i = 1; i < std::size(kRegistry); ++i) {
    if (kRegistry[i - 1].code >= kRegistry[i].code) return false;
  }
  return true;
}
static_assert(RegistryIsSorted(), "kRegistry must be in strictly ascending code order");

const ErrorInfo* FindRow(ErrorCode code) {
  for (const ErrorInfo& row : kRegistry) {
    if (row.code == code) return &row;
  }
  return nullptr;
}

constexpr const ErrorInfo& kInternalRow = kRegistry[1];
static_assert(kRegistry[1].code == ErrorCode::kInternal);

}  // namespace

std::vector<ErrorInfo> AllErrorInfos() { return {std::begin(kRegistry), std::end(kRegistry)}; }

ErrorInfo GetErrorInfo(ErrorCode code) {
  if (const ErrorInfo* row = FindRow(code)) return *row;
  // AOBJ-EXT-004: unknown codes (grease included) are treated like INTERNAL, but the numeric
  // value is kept so logs and relays still show what the peer sent.
  ErrorInfo info = kInternalRow;
  info.code = code;
  info.name = "UNKNOWN";
  info.retryable = false;  // the receiver cannot know that a retry is safe
  return info;
}

absl::Status MakeError(ErrorCode code, std::string_view message) {
  // An OK status cannot carry a payload, and callers use MakeError only on failure paths, so a
  // kOk here is a bug in the caller; report it as INTERNAL rather than returning success.
  if (code == ErrorCode::kOk) code = ErrorCode::kInternal;
  // absl::string_view is not std::string_view in every absl build (Debian's is its own type).
  absl::Status status(GetErrorInfo(code).canonical,
                      absl::string_view(message.data(), message.size()));
  status.SetPayload(kErrorCodePayloadUrl, absl::Cord(std::to_string(static_cast<uint32_t>(code))));
  return status;
}

ErrorCode ErrorCodeOf(const absl::Status& status) {
  if (status.ok()) return ErrorCode::kOk;
  const auto payload = status.GetPayload(kErrorCodePayloadUrl);
  // Decimal uint32 is at most 10 digits; anything longer is not ours.
  if (!payload.has_value() || payload->size() > 10) return ErrorCode::kInternal;
  uint32_t value = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &value)) return ErrorCode::kInternal;
  // A failed status never carries kOk; unknown non-zero values pass through unchanged and are
  // treated as INTERNAL by GetErrorInfo().
  if (value == 0) return ErrorCode::kInternal;
  return static_cast<ErrorCode>(value);
}

std::string ControlChannelFailure(const absl::Status& status) {
  if (status.ok()) return "";
  const auto payload = status.GetPayload(kControlChannelPayloadUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

}  // namespace aobj
