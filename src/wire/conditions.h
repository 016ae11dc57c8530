// Conditional requests (spec section 9.10, AOBJ-OBJ-130..139): S3's If-Match, If-None-Match,
// If-Modified-Since and If-Unmodified-Since, evaluated as RFC 9110 section 13.2.2 orders them.
//
// Entity tags arrive from the peer and are validated here: one tag (optionally quoted, optionally
// weak "W/" for If-None-Match) or "*", at most kMaxEntityTagBytes, visible ASCII without commas
// (lists are not supported). Pure functions; thread-safe.
#ifndef AOBJ_WIRE_CONDITIONS_H_
#define AOBJ_WIRE_CONDITIONS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aobj/v1/aobj.pb.h"

namespace aobj {

inline constexpr size_t kMaxEntityTagBytes = 256;

// The conditions of one request; empty strings and absent times impose nothing.
struct Conditions {
  std::string if_match;       // "*" or one entity tag, as sent
  std::string if_none_match;  // "*" or one entity tag, as sent
  std::optional<int64_t> if_modified_since_ms;
  std::optional<int64_t> if_unmodified_since_ms;

  bool empty() const {
    return if_match.empty() && if_none_match.empty() && !if_modified_since_ms.has_value() &&
           !if_unmodified_since_ms.has_value();
  }
};

// Validates the peer's conditions (AOBJ-OBJ-131); INVALID_ARGUMENT for a malformed entity tag.
absl::StatusOr<Conditions> ConditionsFromProto(const aobj::v1::Preconditions& in);
void ConditionsToProto(const Conditions& in, aobj::v1::Preconditions* out);

// Whether the condition value `tag` ("*" or one entity tag, quotes optional) matches an existing
// object whose ETag is `etag` (quoted, as stored). `weak` allows a "W/" prefix on `tag` and
// compares the opaque part (If-None-Match uses weak comparison, RFC 9110 section 13.1.2).
bool EntityTagMatches(absl::string_view tag, absl::string_view etag, bool weak);

// The stored form of a condition's entity tag: "*" stays "*", anything else is its opaque part in
// double quotes (as the server stores ETags). Precondition: `tag` passed ConditionsFromProto.
std::string CanonicalEntityTag(absl::string_view tag);

// GetObject and HeadObject (AOBJ-OBJ-130): OK, PRECONDITION_FAILED or NOT_MODIFIED for an object
// with `etag` and `last_modified_ms`.
absl::Status EvaluateReadConditions(const Conditions& c, absl::string_view etag,
                                    int64_t last_modified_ms);

// The source of a CopyObject (AOBJ-OBJ-152): as EvaluateReadConditions, but every failure is
// PRECONDITION_FAILED (S3 answers 412 for all four copy-source conditions).
absl::Status EvaluateCopySourceConditions(const Conditions& c, absl::string_view etag,
                                          int64_t last_modified_ms);

// PutObject and the destination of CopyObject (AOBJ-OBJ-133): only If-None-Match "*" and
// If-Match with one entity tag (or "*") are allowed; INVALID_ARGUMENT otherwise.
absl::Status ValidateWriteConditions(const Conditions& c);

}  // namespace aobj

#endif  // AOBJ_WIRE_CONDITIONS_H_
