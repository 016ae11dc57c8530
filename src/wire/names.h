// Bucket names and object keys (spec "Object operations", AOBJ-OBJ-001, AOBJ-OBJ-002).
// Pure functions; thread-safe.
#ifndef AOBJ_WIRE_NAMES_H_
#define AOBJ_WIRE_NAMES_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace aobj {

// S3 bucket naming rules: 3-63 characters of a-z, 0-9, '.', '-'; starts and ends with a letter
// or digit; no ".." ; not an IPv4 address. INVALID_BUCKET_NAME otherwise.
absl::Status ValidateBucketName(absl::string_view name);

// 1-1024 bytes of valid UTF-8: KEY_TOO_LONG past 1024, INVALID_ARGUMENT if empty or not UTF-8.
absl::Status ValidateObjectKey(absl::string_view key);

bool IsValidUtf8(absl::string_view s);

}  // namespace aobj

#endif  // AOBJ_WIRE_NAMES_H_
