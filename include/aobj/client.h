// The AOBJ/1 client stack, embeddable (spec: the client side of every section).
//
// A Client holds one session: the gRPC control channel to the server, a UCX worker with its
// progress thread (the data channel's target side), and a lease renewer. Bulk data moves by the
// server's RMA into or out of Buffers: memory registered with UCX. The client never initiates
// RMA (AOBJ-TRN-001).
//
// Threading: all methods are thread-safe; operations may run concurrently up to the session's
// max_in_flight (beyond it the server answers TOO_MANY_TRANSFERS).
// Errors: absl::Status with the AOBJ code attached (aobj/status.h, ErrorCodeOf()).
// Ownership: Buffers must be destroyed before the Client that made them.
#ifndef AOBJ_CLIENT_H_
#define AOBJ_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/multipart.h"
#include "aobj/store.h"
#include "aobj/types.h"

namespace aobj {

struct ClientOptions {
  std::string endpoint = "127.0.0.1:7878";  // the server's control channel
  TlsOptions tls;                            // plaintext unless tls.enabled
  std::string access_key_id;
  std::string secret;                        // used to derive the signing key; never sent
  ChecksumAlgorithm checksum = ChecksumAlgorithm::kCrc32c;
  bool allow_inline = true;                  // small bodies inside control messages
  bool require_hardware_protection = false;  // AOBJ-SES-014
  Limits requested_limits;                   // zero fields: the server's
  DataChannelOptions data_channel;
  int64_t timeout_ms = 120000;               // per operation
  std::string client_name = "aobj-client/0.1";
  // Offered protocol versions; tests use these to exercise negotiation.
  uint32_t min_version = 1;
  uint32_t max_version = 1;
  bool grease = true;                        // offer a grease capability (AOBJ-EXT-002)
};

// What the server granted at OpenSession.
struct SessionInfo {
  std::string session_id;  // hex
  uint32_t version = 0;
  std::vector<uint32_t> capabilities;
  Limits limits;
  MemoryProtection protection = MemoryProtection::kUnspecified;
  int64_t lease_ms = 0;
  std::string server_name;
};

// Memory registered with the data channel. Move-only; the Client must outlive it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // True when UCX allocated it (the fast path on hosts without an RDMA NIC).
  virtual bool allocated_by_library() const = 0;
};

// The octets a ranged GET moved (S3's Content-Range), offsets inclusive.
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t complete_length = 0;  // the object's size
};

struct TransferResult {
  ObjectInfo info;
  uint64_t bytes_transferred = 0;
  TransferPath path = TransferPath::kUnspecified;
  // Set exactly for a ranged GET (AOBJ-DAT-103).
  std::optional<ContentRange> range = std::nullopt;
};

// `length` octets of a registered Buffer from `offset`: one window of a scatter-gather GET or
// PUT. Windows fill in order (spec section 7.3); the Buffer must outlive the call.
struct BufferSlice {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Conditions on the object an operation acts on (spec section 9.10; S3's If-* headers). Empty
// strings and absent times impose nothing. An entity tag may be given with or without quotes.
struct Preconditions {
  std::string if_match;       // one ETag, or "*"
  std::string if_none_match;  // one ETag, or "*"; a PUT takes "*" only (create-only)
  std::optional<int64_t> if_modified_since_ms;    // GET and HEAD only
  std::optional<int64_t> if_unmodified_since_ms;  // GET and HEAD only
};

// One byte range of a GET (RFC 9110 section 14.1.2; spec section 9.9).
struct ByteRange {
  enum class Kind { kFirstLast, kFrom, kSuffix };
  Kind kind = Kind::kFrom;
  uint64_t first = 0;          // kFirstLast, kFrom
  uint64_t last = 0;           // kFirstLast, inclusive
  uint64_t suffix_length = 0;  // kSuffix

  static ByteRange FirstLast(uint64_t first, uint64_t last) {
    return {Kind::kFirstLast, first, last, 0};
  }
  static ByteRange From(uint64_t first) { return {Kind::kFrom, first, 0, 0}; }
  static ByteRange Suffix(uint64_t length) { return {Kind::kSuffix, 0, 0, length}; }
  // Parses S3's header form: "bytes=first-last", "bytes=first-" or "bytes=-length".
  // INVALID_ARGUMENT for anything else, including several ranges and first > last.
  static absl::StatusOr<ByteRange> Parse(std::string_view text);
  std::string ToString() const;  // "bytes=0-99"
};

struct PutOptions {
  std::string content_type;
  // S3 user metadata (x-amz-meta-*): names are stored lower-case; at most 2 KiB of names and
  // values (METADATA_TOO_LARGE beyond; spec section 9.8).
  std::map<std::string, std::string> user_metadata;
  // if_none_match "*" (create-only: PRECONDITION_FAILED when the key exists, atomic against
  // concurrent PUTs) or if_match (PRECONDITION_FAILED when the ETag differs, NO_SUCH_KEY when
  // the key is absent).
  Preconditions conditions;
};

struct GetOptions {
  std::optional<ByteRange> range;  // absent: the whole object
  // PRECONDITION_FAILED (If-Match, If-Unmodified-Since) or NOT_MODIFIED (If-None-Match,
  // If-Modified-Since), evaluated on the version the GET would move. NOT_MODIFIED means that the
  // copy the caller holds is current, not that the server failed (AOBJ-ERR-101).
  Preconditions conditions;
};

// One ListObjectsV2 request (spec section 9.12).
struct ListObjectsOptions {
  std::string prefix;
  std::string delimiter;           // e.g. "/": keys are grouped into common prefixes
  std::string start_after;
  std::string continuation_token;  // from the previous page; wins over start_after
  uint32_t max_keys = 0;           // 0: the server's default (1000); at most 1000
};

// One page of a listing, or (ListAllObjects) all of them.
struct ObjectListing {
  std::vector<ObjectSummary> objects;       // in byte order of their keys
  std::vector<std::string> common_prefixes;  // in byte order
  bool is_truncated = false;
  std::string next_continuation_token;  // opaque; pass back unchanged
};

struct DeleteObjectsResult {
  std::vector<std::string> deleted;                            // empty when quiet
  std::vector<std::pair<std::string, absl::Status>> errors;  // per key
};

// CopyObject (spec section 9.14).
struct CopyOptions {
  // false (S3's COPY): the copy keeps the source's content type and user metadata. true (S3's
  // REPLACE): it takes content_type and user_metadata below.
  bool replace_metadata = false;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
  Preconditions source_conditions;  // on the source (x-amz-copy-source-if-*): 412 on failure
  Preconditions conditions;         // on the destination, as for Put
};

class Client {
 public:
  // Opens a session (AOBJ-SES-001). Errors: UNSUPPORTED_VERSION, auth errors,
  // DATA_CHANNEL_UNAVAILABLE, ACCESS_DENIED, INTERNAL when the server is unreachable.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  virtual ~Client() = default;

  virtual const SessionInfo& session() const = 0;

  // A buffer of `size` bytes allocated and registered by UCX (the fast path).
  virtual absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) = 0;
  // Registers caller memory; the caller keeps it alive longer than the Buffer.
  virtual absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) = 0;

  // Stores buffer.data()[0, size) under bucket/key. The buffer must not change until return.
  // Verifies the server's byte count and checksum (AOBJ-DAT-004).
  virtual absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             const PutOptions& options = {}) = 0;
  // Reads bucket/key into buffer (from offset 0); DESCRIPTOR_TOO_SMALL when it does not fit
  // (info.size tells the size needed). Verifies byte count and checksum (AOBJ-DAT-004).
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             Buffer& buffer) = 0;
  virtual absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) = 0;
  virtual absl::Status Delete(const std::string& bucket, const std::string& key) = 0;
  virtual absl::Status CreateBucket(const std::string& bucket) = 0;
  virtual absl::Status DeleteBucket(const std::string& bucket) = 0;
  virtual absl::Status HeadBucket(const std::string& bucket) = 0;

  // ---- S3 object semantics (spec sections 9.8 to 9.14) ----
  // Stores the concatenation of `source` (in order) under bucket/key; one descriptor per slice
  // (several need MULTI_DESCRIPTOR), inline when small. Empty slices are skipped.
  virtual absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                             const std::vector<BufferSlice>& source,
                                             const PutOptions& options) = 0;
  // Reads bucket/key, or options.range of it, into buffer from offset 0.
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             Buffer& buffer, const GetOptions& options) = 0;
  // Reads bucket/key (or a range) into the windows of `destination` in order (scatter-gather):
  // octets past the body keep their contents. DESCRIPTOR_TOO_SMALL when they do not hold it.
  // Verifies byte count, range and checksum (AOBJ-DAT-004, AOBJ-DAT-105).
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             const std::vector<BufferSlice>& destination,
                                             const GetOptions& options) = 0;
  virtual absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                          const Preconditions& conditions) = 0;
  // Every bucket, in byte order of their names (pages through the server's listing).
  virtual absl::StatusOr<std::vector<BucketSummary>> ListBuckets() = 0;
  // One page of ListObjectsV2.
  virtual absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                                    const ListObjectsOptions& options) = 0;
  // Pages through ListObjectsV2 from `options` until the listing ends or `max_entries`
  // objects and common prefixes were collected (then is_truncated and next_continuation_token
  // tell where to go on).
  absl::StatusOr<ObjectListing> ListAllObjects(const std::string& bucket,
                                               ListObjectsOptions options,
                                               size_t max_entries = SIZE_MAX);
  // Batch delete (S3 DeleteObjects). More than 1000 keys go as several requests. A missing key
  // counts as deleted; per-key failures are in errors; the call fails only when a whole request
  // does (e.g. NO_SUCH_BUCKET).
  virtual absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                            const std::vector<std::string>& keys,
                                                            bool quiet) = 0;
  // Server-side copy; no data moves through the client. Returns the new object's info.
  virtual absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket,
                                          const std::string& source_key,
                                          const std::string& bucket, const std::string& key,
                                          const CopyOptions& options) = 0;

  // Multipart upload (spec section 9.15), with S3's names and rules. The object appears only at
  // CompleteMultipartUpload. Errors: NO_SUCH_UPLOAD, INVALID_PART, INVALID_PART_ORDER,
  // ENTITY_TOO_SMALL, TOO_MANY_PARTS, TOO_MANY_UPLOADS, plus those of Put.
  virtual absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                           const std::string& key,
                                                           const PutOptions& options = {}) = 0;
  // Uploads buffer.data()[offset, offset + size) as part `part_number` (1..10000); the server
  // reads exactly that window (inline when small). The window must not change until return.
  // Verifies the server's byte count and checksum (AOBJ-DAT-154).
  virtual absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket,
                                                      const std::string& key,
                                                      const std::string& upload_id,
                                                      uint32_t part_number, const Buffer& buffer,
                                                      uint64_t offset, uint64_t size) = 0;
  // Assembles the listed parts (ascending part numbers) into the object. `conditions` as for
  // Put: if_none_match "*" (create-only) or if_match, checked atomically at the commit; when
  // they fail the upload stays in progress.
  virtual absl::StatusOr<ObjectInfo> CompleteMultipartUpload(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      const std::vector<CompletedPart>& parts, const Preconditions& conditions = {}) = 0;
  virtual absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                            const std::string& upload_id) = 0;
  // One page of the upload's parts above `part_number_marker` (max_parts 0: 1000).
  virtual absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id,
                                              uint32_t part_number_marker = 0,
                                              uint32_t max_parts = 0) = 0;
  // One page of the bucket's uploads in progress.
  virtual absl::StatusOr<UploadsPage> ListMultipartUploads(
      const std::string& bucket, const ListUploadsOptions& options = {}) = 0;
  // Stores buffer.data()[0, size) under bucket/key as a multipart upload of `part_size`-byte
  // parts (the last one shorter): Create (with put's content type and user metadata), the parts
  // (several in flight, up to options.parallelism), Complete (with put's conditions). On any
  // failure it aborts the upload and returns the first error. INVALID_ARGUMENT when part_size
  // is 0 or the object needs more than 10000 parts.
  virtual absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket,
                                                     const std::string& key, const Buffer& buffer,
                                                     uint64_t size, uint64_t part_size,
                                                     const PutOptions& put = {},
                                                     const MultipartUploadOptions& options = {}) = 0;

  // Renews the lease now (the client also renews in the background at a third of the lease).
  virtual absl::Status Renew() = 0;
  // Closes the session; later calls fail with NO_SUCH_SESSION. Idempotent.
  virtual absl::Status Close() = 0;
};

}  // namespace aobj

#endif  // AOBJ_CLIENT_H_
