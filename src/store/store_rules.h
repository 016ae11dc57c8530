// Rules every ObjectStore of aobj applies the same way (memory, file, RADOS), kept in one place.
#ifndef AOBJ_STORE_STORE_RULES_H_
#define AOBJ_STORE_STORE_RULES_H_

#include <string>

#include "absl/status/status.h"
#include "aobj/store.h"

namespace aobj {

// The commit conditions of `options` (store.h, WriteOptions) against the ETag of the key's
// current object, or null when the key holds none: kPreconditionFailed or kNoSuchKey, or OK.
absl::Status CheckCommitConditions(const WriteOptions& options, const std::string* current_etag);

absl::Status NoSuchBucket();

}  // namespace aobj

#endif  // AOBJ_STORE_STORE_RULES_H_
