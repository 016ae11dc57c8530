// Listing (spec sections 9.11 and 9.12): the continuation tokens of ListObjectsV2 and
// ListBuckets, and the ListObjectsV2 walk with delimiter grouping over an ordered key scan.
//
// Continuation tokens are opaque to clients and hostile input to the server (AOBJ-OBJ-107). The
// reference format, all integers little-endian, read through bounds-checked readers only:
//
//   offset  size  field
//        0     1  format version (kListTokenVersion)
//        1     1  kind: 0 = resume after the key `position`; 1 = resume after every key that
//                 starts with the common prefix `position` (already reported)
//        2     2  position length n, at most kMaxKeyBytes
//        4     n  position (UTF-8)
//    4 + n    16  tag: the first 16 octets of HMAC-SHA256(server token key,
//                 "aobj-list-token-v1" || scope || octets [0, 4 + n))
//
// `scope` binds a token to the listing that issued it: the operation, bucket, prefix and
// delimiter, each length-prefixed (ListScope). A token replayed against another listing, altered,
// truncated or extended fails the tag check or the structure check: INVALID_CONTINUATION_TOKEN.
// The server key is random per server process unless configured, so tokens do not outlive a
// restart unless the key is configured.
//
// Pure functions; thread-safe.
#ifndef AOBJ_WIRE_LISTING_H_
#define AOBJ_WIRE_LISTING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aobj/store.h"

namespace aobj {

inline constexpr uint8_t kListTokenVersion = 1;
inline constexpr size_t kListTokenTagBytes = 16;
// The longest token a server issues or reads: header, the longest key, tag.
inline constexpr size_t kMaxListTokenBytes = 4 + 1024 + kListTokenTagBytes;

// AOBJ-OBJ-104: page sizes of ListObjectsV2, and AOBJ-OBJ-112 of ListBuckets.
inline constexpr uint32_t kDefaultMaxKeys = 1000;
inline constexpr uint32_t kMaxMaxKeys = 1000;
inline constexpr uint32_t kDefaultMaxBuckets = 10000;
inline constexpr uint32_t kMaxMaxBuckets = 10000;

// Where a listing resumes.
struct ListPosition {
  enum class Kind : uint8_t {
    kAfterKey = 0,     // after `position` (a key, a bucket name, or start_after)
    kAfterPrefix = 1,  // after every key that starts with `position`
  };
  Kind kind = Kind::kAfterKey;
  std::string position;  // empty with kAfterKey: from the beginning
};

// The scope a token is bound to; `operation` is "ListObjectsV2" or "ListBuckets".
std::string ListScope(absl::string_view operation, absl::string_view bucket,
                      absl::string_view prefix, absl::string_view delimiter);

// A token for `position`. Precondition: position.position is at most kMaxKeyBytes (keys and
// common prefixes are).
std::string EncodeListToken(absl::string_view key, absl::string_view scope,
                            const ListPosition& position);

// The position in `token`; INVALID_CONTINUATION_TOKEN for anything this server did not issue for
// `scope` with `key`: wrong length, version or kind, a position length that disagrees with the
// token's size, a bad tag, or a position that is not UTF-8.
absl::StatusOr<ListPosition> DecodeListToken(absl::string_view key, absl::string_view scope,
                                             absl::string_view token);

// One ordered scan of the store: up to `limit` objects with the listing's prefix whose keys sort
// strictly after `start_after`, ascending (ObjectStore::ListObjects with the prefix bound).
using ObjectScan = std::function<absl::StatusOr<std::vector<ObjectSummary>>(
    absl::string_view start_after, size_t limit)>;

struct ListPage {
  std::vector<ObjectSummary> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  ListPosition next;  // where the next page resumes; meaningful when truncated
};

// One ListObjectsV2 page (AOBJ-OBJ-100..103): from `start`, up to `max_keys` (>= 1) entries,
// objects and common prefixes together in byte order. With a non-empty `delimiter`, a key whose
// remainder after `prefix` contains it is reported only as its common prefix: `prefix` and the
// remainder up to and including the first occurrence of `delimiter`. Keys are UTF-8 (never octet
// 0xFF), so "common prefix + 0xFF" sorts after every key that starts with the common prefix and
// before every other later key; the walk skips a reported prefix that way. Every page resumes
// strictly after the last entry of the previous one, so a key that exists throughout a paged
// listing appears in exactly one page (AOBJ-OBJ-109).
// The number of scans is at most max_keys + 1; the entries they read, at most 16 per common prefix
// reported and about twice the objects returned (never the keys under a reported prefix).
absl::StatusOr<ListPage> ListObjectsPage(const ObjectScan& scan, absl::string_view prefix,
                                         absl::string_view delimiter, const ListPosition& start,
                                         uint32_t max_keys);

}  // namespace aobj

#endif  // AOBJ_WIRE_LISTING_H_
