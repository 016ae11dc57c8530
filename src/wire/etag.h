// S3 entity tags (spec sections 9.4 and 9.15): the single-PUT form and the multipart form.
// Pure functions; thread-safe.
#ifndef AOBJ_WIRE_ETAG_H_
#define AOBJ_WIRE_ETAG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace aobj {

// The 32 lower-case hex digits of an MD5 ETag given with or without surrounding quotes and in
// either case; "" when it is not one.
std::string BareMd5Etag(absl::string_view etag);

// The ETag of a multipart object (AOBJ-OBJ-217): quoted lower-case hex MD5 of the concatenated
// binary MD5s of its parts, in order, then "-" and the part count in decimal, e.g.
// "\"c19e6e1ab4bd4b5b36d0dcc2e9b5fe2f-3\"". INVALID_ARGUMENT when a part ETag is not an MD5.
absl::StatusOr<std::string> MultipartEtag(const std::vector<std::string>& part_etags);

// An opaque ETag (AOBJ-OBJ-016, capability OPAQUE_ETAG): 128 bits from the system's secure
// random source as 32 lower-case hex digits, then "-0", in double quotes, e.g.
// "\"3f0c9d2e8a1b4c5d6e7f8091a2b3c4d5-0\"". Costs nothing per octet of the body.
std::string OpaqueEtag();

// Whether `etag` has the form of an opaque ETag (quotes included).
bool IsOpaqueEtag(absl::string_view etag);

// An opaque part ETag (AOBJ-OBJ-254, capability OPAQUE_PART_ETAG): 128 bits from the system's
// secure random source as 32 lower-case hex digits in double quotes, the form of a part's MD5
// ETag, so that the multipart ETag (AOBJ-OBJ-217) is computed from it unchanged. Costs nothing
// per octet of the part.
std::string OpaquePartEtag();

}  // namespace aobj

#endif  // AOBJ_WIRE_ETAG_H_
