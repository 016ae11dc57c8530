// Rules every ObjectStore of aobj applies the same way (memory, file, RADOS), kept in one place.
#ifndef AOBJ_STORE_STORE_RULES_H_
#define AOBJ_STORE_STORE_RULES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aobj/multipart.h"
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

// AOBJ-OBJ-259: BAD_DIGEST when the client sent its CRC32C of a completed upload's whole content
// (`expected`) and the assembled content's (`assembled`) differs; nothing when it sent none.
absl::Status CheckFullObjectCrc32c(std::optional<uint32_t> expected, uint32_t assembled);

// A key of `bucket`: the bucket as above; the key non-empty and at most rules.max_key_bytes.
absl::Status CheckStoreKey(std::string_view bucket, std::string_view key,
                           const StoreNameRules& rules = {});

// A new multipart upload ID (AOBJ-OBJ-203): 8 octets of the initiation time `now` (microseconds
// since the epoch, big-endian), so that IDs sort by initiation, then 8 random octets; 32
// lower-case hex digits.
std::string NewUploadId(absl::Time now);

// The size of a listing page: `asked`, or `most` when `asked` is 0 or above it (AOBJ-OBJ-221,
// AOBJ-OBJ-224).
inline uint32_t PageLimit(uint32_t asked, uint32_t most) {
  return asked == 0 ? most : std::min(asked, most);
}

// Adds the next listed part to a ListParts page of at most `limit` parts (AOBJ-OBJ-221). False
// when the page is full: the page is then marked truncated, its marker the last part it lists,
// and the caller stops.
inline bool AddToPage(PartsPage& page, uint32_t limit, PartInfo part) {
  if (page.parts.size() == limit) {
    page.truncated = true;
    page.next_part_number_marker = page.parts.back().part_number;
    return false;
  }
  page.parts.push_back(std::move(part));
  return true;
}

// The same for a ListMultipartUploads page (AOBJ-OBJ-224): its markers the last upload listed.
inline bool AddToPage(UploadsPage& page, uint32_t limit, UploadInfo upload) {
  if (page.uploads.size() == limit) {
    page.truncated = true;
    page.next_key_marker = page.uploads.back().key;
    page.next_upload_id_marker = page.uploads.back().upload_id;
    return false;
  }
  page.uploads.push_back(std::move(upload));
  return true;
}

// ListObjects over a store's key-ordered map of `objects` (AOBJ-OBJ-101): up to `limit`
// summaries, in key order, of the keys after `start_after` that start with `prefix`;
// `summary(key, value)` makes each.
template <class Map, class Summary>
std::vector<ObjectSummary> ListFromMap(const Map& objects, std::string_view prefix,
                                       std::string_view start_after, size_t limit,
                                       Summary summary) {
  std::vector<ObjectSummary> out;
  // The first key > start_after that is also >= prefix (every key with the prefix is).
  auto it = prefix > start_after ? objects.lower_bound(prefix) : objects.upper_bound(start_after);
  for (; it != objects.end() && out.size() < limit; ++it) {
    if (std::string_view(it->first).substr(0, prefix.size()) != prefix) break;  // sorted
    out.push_back(summary(it->first, it->second));
  }
  return out;
}

}  // namespace aobj

#endif  // AOBJ_STORE_STORE_RULES_H_
