// User metadata of objects (spec section 9.8, AOBJ-OBJ-120..123): S3's x-amz-meta-* pairs.
//
// Names are HTTP field-name tokens, stored lower-case so that they survive an S3 gateway
// unchanged; values are UTF-8 without control characters. The total of name and value octets is
// at most 2 KiB, S3's limit. Pure functions; thread-safe.
#ifndef AOBJ_WIRE_USER_METADATA_H_
#define AOBJ_WIRE_USER_METADATA_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/map.h"

namespace aobj {

// AOBJ-OBJ-121: S3's limit on the sum of the octets of all names and values.
inline constexpr size_t kMaxUserMetadataBytes = 2048;

using UserMetadata = std::map<std::string, std::string>;

// Validates peer-supplied metadata and returns it with lower-case names. METADATA_TOO_LARGE past
// kMaxUserMetadataBytes (checked first, before any other work); INVALID_ARGUMENT for an empty
// name, a name with a character outside the RFC 9110 token set, two names equal but for case, or
// a value that is not UTF-8 or holds a control character.
absl::StatusOr<UserMetadata> NormalizeUserMetadata(
    const google::protobuf::Map<std::string, std::string>& in);
absl::StatusOr<UserMetadata> NormalizeUserMetadata(const UserMetadata& in);

// Copies `in` into a proto map.
void UserMetadataToProto(const UserMetadata& in,
                         google::protobuf::Map<std::string, std::string>* out);

}  // namespace aobj

#endif  // AOBJ_WIRE_USER_METADATA_H_
