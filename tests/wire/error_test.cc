#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/error_registry.h"

namespace aobj {
namespace {

struct Expected {
  ErrorCode code;
  std::string_view name;
  std::string_view s3_code;
  bool retryable;
};

// The registry as listed beside enum ErrorCode in proto/aobj/v1/aobj.proto.
const std::vector<Expected>& ExpectedRows() {
  static const auto* rows = new std::vector<Expected>{
      {ErrorCode::kInternal, "INTERNAL", "InternalError", true},
      {ErrorCode::kInvalidArgument, "INVALID_ARGUMENT", "InvalidArgument", false},
      {ErrorCode::kUnsupportedVersion, "UNSUPPORTED_VERSION", "UnsupportedVersion", false},
      {ErrorCode::kMissingAuthentication, "MISSING_AUTHENTICATION", "MissingSecurityHeader", false},
      {ErrorCode::kSignatureDoesNotMatch, "SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch",
       false},
      {ErrorCode::kInvalidAccessKeyId, "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId", false},
      {ErrorCode::kRequestTimeTooSkewed, "REQUEST_TIME_TOO_SKEWED", "RequestTimeTooSkewed", false},
      {ErrorCode::kRequestReplayed, "REQUEST_REPLAYED", "AccessDenied", false},
      {ErrorCode::kNoSuchSession, "NO_SUCH_SESSION", "NoSuchSession", false},
      {ErrorCode::kSessionExpired, "SESSION_EXPIRED", "SessionExpired", false},
      {ErrorCode::kAccessDenied, "ACCESS_DENIED", "AccessDenied", false},
      {ErrorCode::kSlowDown, "SLOW_DOWN", "SlowDown", true},
      {ErrorCode::kTooManyTransfers, "TOO_MANY_TRANSFERS", "SlowDown", true},
      {ErrorCode::kNegotiationFailed, "NEGOTIATION_FAILED", "NegotiationFailed", false},
      {ErrorCode::kNoSuchBucket, "NO_SUCH_BUCKET", "NoSuchBucket", false},
      {ErrorCode::kNoSuchKey, "NO_SUCH_KEY", "NoSuchKey", false},
      {ErrorCode::kBucketAlreadyExists, "BUCKET_ALREADY_EXISTS", "BucketAlreadyExists", false},
      {ErrorCode::kBucketNotEmpty, "BUCKET_NOT_EMPTY", "BucketNotEmpty", false},
      {ErrorCode::kInvalidBucketName, "INVALID_BUCKET_NAME", "InvalidBucketName", false},
      {ErrorCode::kKeyTooLong, "KEY_TOO_LONG", "KeyTooLongError", false},
      {ErrorCode::kEntityTooLarge, "ENTITY_TOO_LARGE", "EntityTooLarge", false},
      {ErrorCode::kInvalidDescriptor, "INVALID_DESCRIPTOR", "InvalidArgument", false},
      {ErrorCode::kDescriptorOutOfBounds, "DESCRIPTOR_OUT_OF_BOUNDS", "InvalidArgument", false},
      {ErrorCode::kDescriptorTooSmall, "DESCRIPTOR_TOO_SMALL", "InvalidArgument", false},
      {ErrorCode::kInvalidRkey, "INVALID_RKEY", "InvalidArgument", false},
      {ErrorCode::kUnsupportedMemoryType, "UNSUPPORTED_MEMORY_TYPE", "NotImplemented", false},
      {ErrorCode::kBadDigest, "BAD_DIGEST", "BadDigest", false},
      {ErrorCode::kTransferFailed, "TRANSFER_FAILED", "InternalError", true},
      {ErrorCode::kDataChannelUnavailable, "DATA_CHANNEL_UNAVAILABLE", "ServiceUnavailable", true},
      {ErrorCode::kIncompleteTransfer, "INCOMPLETE_TRANSFER", "IncompleteBody", false},
      {ErrorCode::kDeadlineExceeded, "DEADLINE_EXCEEDED", "RequestTimeout", true},
      {ErrorCode::kCancelled, "CANCELLED", "RequestCancelled", false},
      {ErrorCode::kEndpointUnconfirmed, "ENDPOINT_UNCONFIRMED", "AccessDenied", false},
      {ErrorCode::kStorageError, "STORAGE_ERROR", "InternalError", true},
      {ErrorCode::kInvalidRange, "INVALID_RANGE", "InvalidRange", false},
      {ErrorCode::kPreconditionFailed, "PRECONDITION_FAILED", "PreconditionFailed", false},
      {ErrorCode::kNotModified, "NOT_MODIFIED", "NotModified", false},
      {ErrorCode::kMetadataTooLarge, "METADATA_TOO_LARGE", "MetadataTooLarge", false},
      {ErrorCode::kInvalidContinuationToken, "INVALID_CONTINUATION_TOKEN", "InvalidArgument",
       false},
      {ErrorCode::kInvalidRequest, "INVALID_REQUEST", "InvalidRequest", false},
      {ErrorCode::kNoSuchUpload, "NO_SUCH_UPLOAD", "NoSuchUpload", false},
      {ErrorCode::kInvalidPart, "INVALID_PART", "InvalidPart", false},
      {ErrorCode::kInvalidPartOrder, "INVALID_PART_ORDER", "InvalidPartOrder", false},
      {ErrorCode::kEntityTooSmall, "ENTITY_TOO_SMALL", "EntityTooSmall", false},
      {ErrorCode::kTooManyParts, "TOO_MANY_PARTS", "InvalidArgument", false},
      {ErrorCode::kTooManyUploads, "TOO_MANY_UPLOADS", "SlowDown", true},
  };
  return *rows;
}

TEST(ErrorRegistryTest, EveryCodeHasItsRow) {
  for (const Expected& want : ExpectedRows()) {
    const ErrorInfo info = GetErrorInfo(want.code);
    EXPECT_EQ(info.code, want.code) << want.name;
    EXPECT_EQ(info.name, want.name);
    EXPECT_EQ(info.s3_code, want.s3_code) << want.name;
    EXPECT_EQ(info.retryable, want.retryable) << want.name;
    EXPECT_NE(info.canonical, absl::StatusCode::kOk) << want.name;
  }
}

TEST(ErrorRegistryTest, AllErrorInfosListsOkThenEveryCodeInOrder) {
  const std::vector<ErrorInfo> all = AllErrorInfos();
  ASSERT_EQ(all.size(), ExpectedRows().size() + 1);
  EXPECT_EQ(all[0].code, ErrorCode::kOk);
  EXPECT_EQ(all[0].name, "OK");
  EXPECT_EQ(all[0].canonical, absl::StatusCode::kOk);
  for (size_t i = 0; i < ExpectedRows().size(); ++i) {
    EXPECT_EQ(all[i + 1].code, ExpectedRows()[i].code);
  }
}

TEST(ErrorRegistryTest, NamesAndCodesAreUnique) {
  std::set<std::string_view> names;
  std::set<uint32_t> codes;
  for (const ErrorInfo& info : AllErrorInfos()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_TRUE(codes.insert(static_cast<uint32_t>(info.code)).second) << info.name;
  }
}

// AOBJ-ERR-005: the gRPC status code of each registry row.
TEST(ErrorRegistryTest, CanonicalCodes) {
  EXPECT_EQ(GetErrorInfo(ErrorCode::kNoSuchKey).canonical, absl::StatusCode::kNotFound);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kNoSuchBucket).canonical, absl::StatusCode::kNotFound);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kBucketAlreadyExists).canonical,
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kBucketNotEmpty).canonical,
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kSignatureDoesNotMatch).canonical,
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kAccessDenied).canonical, absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kSlowDown).canonical, absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kDataChannelUnavailable).canonical,
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kBadDigest).canonical, absl::StatusCode::kDataLoss);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kDescriptorOutOfBounds).canonical,
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kUnsupportedMemoryType).canonical,
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(GetErrorInfo(ErrorCode::kStorageError).canonical, absl::StatusCode::kInternal);
}

TEST(MakeErrorTest, RoundTripsEveryCode) {
  for (const Expected& want : ExpectedRows()) {
    const absl::Status status = MakeError(want.code, "some detail");
    EXPECT_FALSE(status.ok()) << want.name;
    EXPECT_EQ(status.code(), GetErrorInfo(want.code).canonical) << want.name;
    EXPECT_EQ(status.message(), "some detail");
    EXPECT_EQ(ErrorCodeOf(status), want.code) << want.name;
    const auto payload = status.GetPayload(kErrorCodePayloadUrl);
    ASSERT_TRUE(payload.has_value());
    EXPECT_EQ(std::string(*payload), std::to_string(static_cast<uint32_t>(want.code)));
  }
}

TEST(MakeErrorTest, OkCodeBecomesInternal) {
  const absl::Status status = MakeError(ErrorCode::kOk, "bug");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(ErrorCodeOf(status), ErrorCode::kInternal);
}

TEST(ErrorCodeOfTest, OkStatusIsOk) { EXPECT_EQ(ErrorCodeOf(absl::OkStatus()), ErrorCode::kOk); }

TEST(ErrorCodeOfTest, StatusWithoutPayloadIsInternal) {
  EXPECT_EQ(ErrorCodeOf(absl::NotFoundError("x")), ErrorCode::kInternal);
}

TEST(ErrorCodeOfTest, UnparsablePayloadIsInternal) {
  for (const char* text : {"", "abc", "12x", "-3", "99999999999", "4294967296", "0"}) {
    absl::Status status = absl::InvalidArgumentError("x");
    status.SetPayload(kErrorCodePayloadUrl, absl::Cord(text));
    EXPECT_EQ(ErrorCodeOf(status), ErrorCode::kInternal) << "payload '" << text << "'";
  }
}

TEST(ErrorCodeOfTest, SurvivesStatusCopy) {
  const absl::Status original = MakeError(ErrorCode::kNoSuchKey, "gone");
  const absl::Status copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(ErrorCodeOf(copy), ErrorCode::kNoSuchKey);
}

// AOBJ-EXT-004: grease values (0x0A0A + k*0x1010) and other unknown codes act like INTERNAL
// while keeping their number.
TEST(UnknownCodeTest, MapsToInternalRowWithCodePreserved) {
  for (uint32_t raw : {0x0A0Au, 0x1A1Au, 15u, 99u, 0xFFFFFFFFu}) {
    const auto code = static_cast<ErrorCode>(raw);
    const ErrorInfo info = GetErrorInfo(code);
    const ErrorInfo internal = GetErrorInfo(ErrorCode::kInternal);
    EXPECT_EQ(info.code, code);
    EXPECT_EQ(info.name, "UNKNOWN");
    EXPECT_EQ(info.s3_code, internal.s3_code);
    EXPECT_FALSE(info.retryable);  // AOBJ-EXT-004: unknown codes are not retryable
    EXPECT_EQ(info.canonical, internal.canonical);

    const absl::Status status = MakeError(code, "from a newer peer");
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(ErrorCodeOf(status), code);
  }
}

}  // namespace
}  // namespace aobj
