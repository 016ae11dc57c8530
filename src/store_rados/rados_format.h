// RadosStore's layout in a RADOS pool (namespace) and the records it keeps there: names,
// constants, encoders and decoders, shared by every code path that reads or writes them, so
// that all follow the one description here (docs/deploy-cluster.md says why it is built so).
//
// RADOS objects of one store (one pool and namespace):
//
//   aobj.buckets            omap: bucket name -> BucketRecord
//   aobj.secrets            omap: name -> 32 random octets (SharedSecret)
//   aobj.gateways           omap: host:port -> when that gateway last registered
//   aobj.index.<inc>        one per bucket incarnation (32 hex digits; a new one each time a
//                           name is created): omap: EncodeKey(object key) -> HeadRecord, and
//                           UploadEntry(key, upload id) -> UploadRecord for each multipart
//                           upload in progress (so a bucket with uploads is not empty).
//                           Removing it is what deletes the bucket, so a writer that began
//                           before a DeleteBucket can never commit into a later bucket of the name
//   aobj.data.<uuid>.<n>    bytes, stripe n (decimal) of stripe_bytes each, of one segment: a
//                           PUT's body or a multipart part; a fresh uuid (32 hex digits) for
//                           every write, never rewritten. An object is a list of segments (one
//                           for a PUT; its parts, in order, for a completed multipart upload)
//   aobj.upload.<id>        one per multipart upload: omap: "~state" -> UploadState,
//                           PartEntry(n) -> PartRecord
//   aobj.gc.<shard>         omap: GcEntryName (time first) -> GcIntent; shard = uuid octet 0 % 8
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
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/store.h"

namespace aobj::rados_format {

using Uuid = std::array<uint8_t, 16>;

inline constexpr char kBucketsObject[] = "aobj.buckets";
// omap: name -> 32 random octets shared by every gateway of the store (RadosStore::SharedSecret).
inline constexpr char kSecretsObject[] = "aobj.secrets";
// omap: gateway address (host:port) -> the time it last registered, 8 octets little-endian ms.
inline constexpr char kGatewaysObject[] = "aobj.gateways";
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
// strings, and a key may hold U+0000, so keys are escaped: 0x00 -> 0x01 0x02, 0x01 -> 0x01 0x03,
// every other octet as it is. The escape keeps byte order and prefixes (a < b iff E(a) < E(b);
// a is a prefix of b iff E(a) is a prefix of E(b)), so RADOS's sorted omap lists in the order
// ListObjects promises. E(k) never holds 0x01 0x01, which marks upload entries (below): every
// upload entry sorts before every encoded key, all of which are at least kFirstObjectEntry.
std::string EncodeKey(std::string_view key);
absl::StatusOr<std::string> DecodeKey(std::string_view encoded);
inline constexpr char kMark[] = "\x01\x01";
inline constexpr char kFirstObjectEntry[] = "\x01\x02";
// A listing start that every upload entry precedes and every encoded key follows.
std::string AfterUploadEntries();

// Multipart: the index entry of an upload, ordered by key, then by upload ID.
std::string UploadEntry(std::string_view encoded_key, std::string_view upload_id);
std::string UploadEntryPrefix(std::string_view encoded_key_prefix);
std::string UploadObject(std::string_view upload_id);
std::string PartEntry(uint32_t part_number);  // "p00001": sorts by number
inline constexpr char kPartPrefix[] = "p";
inline constexpr char kStateEntry[] = "~state";

// What a bucket name maps to in aobj.buckets.
struct BucketRecord {
  int64_t creation_time_ms = 0;
  Uuid incarnation{};
  std::string owner;  // the principal that created it (AOBJ-SEC-009); empty: none
};
std::string EncodeBucket(const BucketRecord& record);
absl::StatusOr<BucketRecord> DecodeBucket(std::string_view octets);

// Bytes of an object: `size` octets in stripes of `stripe_bytes` under `uuid`.
struct Segment {
  Uuid uuid{};
  uint64_t size = 0;
  uint32_t stripe_bytes = 0;
};
inline constexpr size_t kMaxSegments = 10000;  // a multipart object's parts
// Longest key the store takes (the server allows 1024 octets, AOBJ-OBJ-002).
inline constexpr size_t kMaxKeyBytes = 4096;

// The current version of a key: where its bytes are and what HEAD reports. Never empty once
// encoded (the empty value means "no such key" in a compare-and-swap). The segments' sizes add
// up to info.size; an empty object has none.
struct HeadRecord {
  std::vector<Segment> segments;
  ObjectInfo info;
};
std::string EncodeHead(const HeadRecord& record);
absl::StatusOr<HeadRecord> DecodeHead(std::string_view octets);

// A note that some data may need deleting: kWriting, written before the first stripe of a
// write and removed after its commit; kReplaced, written before a commit, delete or part upload
// replaces a version or part; kUpload, written before a multipart upload is created and kept
// while it exists. The collector settles an entry older than its grace: a segment's stripes go
// unless the key's head (or, for a part, its upload's part record) still names them; an
// upload's object goes, with every part no head names, once the upload's entry has left the
// index (completed or aborted). docs/deploy-cluster.md, "Garbage".
enum class GcKind : uint8_t { kWriting = 1, kReplaced = 2, kUpload = 3 };
struct GcIntent {
  GcKind kind = GcKind::kWriting;
  int64_t time_ms = 0;
  Uuid uuid{};  // the segment; for kUpload, unused
  Uuid incarnation{};
  uint64_t size = 0;
  uint32_t stripe_bytes = 0;
  std::string encoded_key;  // EncodeKey of the object key
  std::string upload_id;    // a part's upload, or the kUpload's; empty otherwise
  uint32_t part_number = 0;
};
// Entry names begin with the time the entry was first written (16 hex digits of milliseconds),
// so that a collector reads a shard in age order and stops at the first entry younger than the
// grace; a renewal changes the value's time, never the name.
std::string GcEntryName(int64_t time_ms, const Uuid& uuid, GcKind kind);
std::string GcUploadEntryName(int64_t time_ms, std::string_view upload_id);
// The time at the start of an entry name; -1 when it has none.
int64_t GcEntryTime(std::string_view name);
std::string GcUploadObject(std::string_view upload_id);
std::string EncodeGcIntent(const GcIntent& intent);
absl::StatusOr<GcIntent> DecodeGcIntent(std::string_view octets);

// What an upload's index entry holds; immutable while the upload exists.
struct UploadRecord {
  std::string upload_id;
  std::string key;
  int64_t initiated_ms = 0;
  std::string initiator;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
};
std::string EncodeUpload(const UploadRecord& record);
absl::StatusOr<UploadRecord> DecodeUpload(std::string_view octets);

// An installed part.
struct PartRecord {
  uint32_t part_number = 0;
  Segment segment;
  std::string etag;
  uint32_t crc32c = 0;
  int64_t last_modified_ms = 0;
};
std::string EncodePart(const PartRecord& record);
absl::StatusOr<PartRecord> DecodePart(std::string_view octets);

// The "~state" entry of an upload object: kActive takes parts; kClosing (since, by whom) while a
// Complete or Abort decides, which a later one may take over once it is stale.
enum class UploadState : uint8_t { kActive = 1, kClosing = 2 };
struct UploadStateRecord {
  UploadState state = UploadState::kActive;
  int64_t since_ms = 0;
  std::string nonce;  // 8 random octets: whose closing this is
};
std::string EncodeUploadState(const UploadStateRecord& record);
absl::StatusOr<UploadStateRecord> DecodeUploadState(std::string_view octets);

}  // namespace aobj::rados_format

#endif  // AOBJ_STORE_RADOS_RADOS_FORMAT_H_
