// Rules every ObjectStore of aobj applies the same way (memory, file, RADOS), kept in one place.
#ifndef AOBJ_STORE_STORE_RULES_H_
#define AOBJ_STORE_STORE_RULES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "aobj/store.h"

namespace aobj {

// The commit conditions of `options` (store.h, WriteOptions) against the ETag of the key's
// current object, or null when the key holds none: kPreconditionFailed or kNoSuchKey, or OK.
absl::Status CheckCommitConditions(const WriteOptions& options, const std::string* current_etag);

absl::Status NoSuchBucket();

// The names a store refuses whatever was checked before it, INVALID_ARGUMENT. Defence in depth:
// the server applies S3's naming rules (wire/names.h) before a name reaches a store; a store
// embedded without the server still refuses a name it cannot hold.
struct StoreNameRules {
  // Bucket names that start with '.' are the store's own (FileStore keeps <root>/.multipart
  // beside its buckets); otherwise only "." and ".." are refused.
  bool reserve_dot_names = false;
  size_t max_key_bytes = SIZE_MAX;  // the longest key the store's records hold
};
// A bucket name: non-empty, without '/' or NUL (one path component, one part of an object
// name), not "." or "..".
absl::Status CheckStoreBucket(std::string_view bucket, const StoreNameRules& rules = {});
// What every writer (of an object or of a part) checks when its caller commits or seals it:
// every octet announced at BeginPut (`size`) was written (`written`: what Append took; a writer
// whose direct buffer was used cannot tell and passes `size`), and the size committed
// (`committed_size`) is that size. INVALID_ARGUMENT naming `what` ("object", "part").
absl::Status CheckWriteComplete(uint64_t written, uint64_t size, uint64_t committed_size,
                                std::string_view what);

// A key of `bucket`: the bucket as above; the key non-empty and at most rules.max_key_bytes.
absl::Status CheckStoreKey(std::string_view bucket, std::string_view key,
                           const StoreNameRules& rules = {});

}  // namespace aobj

#endif  // AOBJ_STORE_STORE_RULES_H_
