// RadosStore's layout in a RADOS pool (namespace) and the records it keeps there: names,
// constants, encoders and decoders, shared by every code path that reads or writes them, so
// that all follow the one description here (docs/deploy-cluster.md says why it is built so).
//
// RADOS objects of one store (one pool and namespace):
//
//   aobj.buckets            omap: bucket name -> BucketRecord
//   aobj.secrets            omap: name -> 32 random octets (SharedSecret)
//   aobj.index.<inc>        one per bucket incarnation (32 hex digits; a new one each time a
//                           name is created): omap: EncodeKey(object key) -> HeadRecord.
//                           Removing it is what deletes the bucket, so a writer that began
//                           before a DeleteBucket can never commit into a later bucket of the name
//   aobj.data.<uuid>.<n>    the object's bytes, stripe n (decimal) of stripe_bytes each; a fresh
//                           uuid (32 hex digits) for every write, never rewritten
//   aobj.gc.<shard>         omap: <uuid>.w | <uuid>.r -> GcIntent; shard = first uuid octet % 8
//
// Commits are compare-and-swap operations on one omap entry (`omap_cmp` against the value read,
// the empty value for an absent key, then `omap_set` in the same RADOS write operation), so a
// head changes atomically from exactly the version a writer saw to its own.
//
// Integers little-endian, encoded field by field (wire/le_codec.h). Decoders treat the octets
// as untrusted (a damaged omap value, or another program's) and fail with kStorageError.
#ifndef AOBJ_STORE_RADOS_RADOS_FORMAT_H_
#define AOBJ_STORE_RADOS_RADOS_FORMAT_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "aobj/store.h"

namespace aobj::rados_format {

using Uuid = std::array<uint8_t, 16>;

inline constexpr char kBucketsObject[] = "aobj.buckets";
// omap: name -> 32 random octets shared by every gateway of the store (RadosStore::SharedSecret).
inline constexpr char kSecretsObject[] = "aobj.secrets";
inline constexpr uint8_t kRecordFormat = 1;
inline constexpr int kGcShards = 8;
// A stripe is one RADOS object; RADOS refuses objects above osd_max_object_size (128 MiB by
// default) and single writes above osd_max_write_size (90 MB), so stripes stay well below both.
inline constexpr uint32_t kMinStripeBytes = 64 * 1024;
inline constexpr uint32_t kMaxStripeBytes = 64 * 1024 * 1024;

std::string IndexObject(const Uuid& incarnation);
std::string DataObject(const Uuid& uuid, uint64_t stripe);
std::string GcObject(const Uuid& uuid);
uint64_t StripeCount(uint64_t size, uint32_t stripe_bytes);

// Object keys as omap keys. librados takes the start and prefix of an omap listing as C
// strings, and a key may hold U+0000, so keys are escaped: 0x00 -> 0x01 0x01, 0x01 -> 0x01 0x02,
// every other octet as it is. The escape keeps byte order and prefixes (a < b iff E(a) < E(b);
// a is a prefix of b iff E(a) is a prefix of E(b)), so RADOS's sorted omap lists in the order
// ListObjects promises.
std::string EncodeKey(std::string_view key);
absl::StatusOr<std::string> DecodeKey(std::string_view encoded);

// What a bucket name maps to in aobj.buckets.
struct BucketRecord {
  int64_t creation_time_ms = 0;
  Uuid incarnation{};
};
std::string EncodeBucket(const BucketRecord& record);
absl::StatusOr<BucketRecord> DecodeBucket(std::string_view octets);

// The current version of a key: where its bytes are and what HEAD reports. Never empty once
// encoded (the empty value means "no such key" in a compare-and-swap).
struct HeadRecord {
  Uuid uuid{};
  uint32_t stripe_bytes = 0;
  ObjectInfo info;
};
std::string EncodeHead(const HeadRecord& record);
absl::StatusOr<HeadRecord> DecodeHead(std::string_view octets);

// A note that some data may need deleting: kWriting, written before the first stripe of a
// write and removed after its commit; kReplaced, written before a commit or delete replaces a
// version. The collector deletes the data of an entry older than its grace unless the key's
// head names that uuid, and removes the entry (docs/deploy-cluster.md, "Garbage").
enum class GcKind : uint8_t { kWriting = 1, kReplaced = 2 };
struct GcIntent {
  GcKind kind = GcKind::kWriting;
  int64_t time_ms = 0;
  Uuid uuid{};
  Uuid incarnation{};
  uint64_t size = 0;
  uint32_t stripe_bytes = 0;
  std::string encoded_key;  // EncodeKey of the object key
};
std::string GcEntryName(const Uuid& uuid, GcKind kind);
std::string EncodeGcIntent(const GcIntent& intent);
absl::StatusOr<GcIntent> DecodeGcIntent(std::string_view octets);

}  // namespace aobj::rados_format

#endif  // AOBJ_STORE_RADOS_RADOS_FORMAT_H_
