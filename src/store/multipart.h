// Multipart uploads over any ObjectStore (spec section 9.15, S3's CreateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads).
//
// A MultipartManager keeps the uploads in progress and their parts in a part area of its own,
// beside the store, and completes an upload by streaming the listed parts in order through
// ObjectStore::BeginPut -> Append -> Commit: the new object becomes visible atomically, exactly
// as a single PUT would (AOBJ-OBJ-218), with the CRC32C of the whole content computed on the
// way (AOBJ-DAT-152). The store needs nothing multipart-specific.
//
// Part areas:
//   * in memory (`dir` empty): lost at exit, like MemoryStore;
//   * a directory (`dir`, the reference server uses <fs store root>/.multipart): uploads and
//     parts survive a restart (AOBJ-OBJ-227). Layout and crash-safety rules: multipart.cc.
//
// Crash safety (AOBJ-OBJ-226): a crash at any point leaves either the upload, with every part
// whose UploadPart succeeded, or the completed object (possibly with the upload still listed,
// until it is completed again or aborted); never a torn object.
//
// Concurrency (AOBJ-OBJ-225): every method may be called from many threads at once. Requests on
// one upload take effect in some serial order: while a Complete assembles the object, an Abort,
// another Complete, or the installation of a part of that upload waits for its outcome, then
// proceeds or fails with NO_SUCH_UPLOAD. Part bodies are received concurrently; only their
// installation is serialized.
//
// Ownership: `store` is borrowed and must outlive the manager. Part writers returned by
// BeginPart keep the manager's state alive and may outlive the manager (their Commit then
// fails).
// Errors: absl::Status with AOBJ codes: kNoSuchBucket, kNoSuchUpload, kInvalidPart,
// kInvalidPartOrder, kEntityTooSmall, kEntityTooLarge, kTooManyParts, kTooManyUploads,
// kInvalidArgument, kStorageError.
#ifndef AOBJ_STORE_MULTIPART_H_
#define AOBJ_STORE_MULTIPART_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "aobj/multipart.h"
#include "aobj/store.h"

namespace aobj {

inline constexpr size_t kUploadIdLength = 32;  // AOBJ-OBJ-203: lower-case hex

struct MultipartLimits {
  uint64_t min_part_size = kDefaultMinPartSize;  // AOBJ-OBJ-213: every part but the last
  uint64_t max_part_size = kDefaultMaxPartSize;  // AOBJ-OBJ-209
  uint64_t max_object_size = uint64_t{5} << 40;  // AOBJ-OBJ-214 (S3: 5 TiB)
  size_t max_uploads = 10000;                    // AOBJ-OBJ-228: in progress, server-wide
  size_t max_uploads_per_initiator = 1000;       // AOBJ-OBJ-233: of one access key
  uint64_t max_parts_per_initiator = 100000;     // AOBJ-OBJ-233: held by its uploads together
  uint64_t max_parts = 1000000;                  // AOBJ-OBJ-228: held by all uploads together
  size_t copy_chunk_bytes = 8 << 20;             // Complete reads parts in chunks of this size
  // AOBJ-OBJ-234: uploads initiated longer ago than this are aborted by ExpireUploads (and when
  // the manager opens); infinite = never.
  absl::Duration upload_expiry = absl::InfiniteDuration();
};

// True for a string the manager could have issued as an upload ID (AOBJ-OBJ-203).
bool IsWellFormedUploadId(absl::string_view upload_id);

class MultipartManager {
 public:
  // A manager with an in-memory part area when `dir` is empty, else with the directory part
  // area at `dir` (created if missing; uploads found there are loaded, crash leftovers removed).
  // The directory must not be used by another manager meanwhile.
  static absl::StatusOr<std::unique_ptr<MultipartManager>> Open(ObjectStore* store,
                                                                const std::string& dir,
                                                                const MultipartLimits& limits);
  virtual ~MultipartManager() = default;

  virtual const MultipartLimits& limits() const = 0;

  // AOBJ-OBJ-200: a new upload for bucket/key, begun by `initiator` (an access key id; kept with
  // the upload, across restarts). NO_SUCH_BUCKET, TOO_MANY_UPLOADS (the server's limit, or the
  // initiator's, AOBJ-OBJ-233). `attributes` (content type, user metadata) go to the object that
  // Complete creates.
  virtual absl::StatusOr<UploadInfo> Create(absl::string_view bucket, absl::string_view key,
                                            const WriteOptions& attributes,
                                            absl::string_view initiator) = 0;
  // The same with no initiator (counted under "": tests and single-tenant embedders).
  absl::StatusOr<UploadInfo> Create(absl::string_view bucket, absl::string_view key,
                                    const WriteOptions& attributes) {
    return Create(bucket, key, attributes, "");
  }

  // AOBJ-OBJ-234: aborts every upload initiated before now - limits().upload_expiry (an upload
  // being completed is left to its Complete). Returns how many it aborted. Open() runs it once,
  // so uploads that expired while the server was down go at start.
  virtual size_t ExpireUploads(absl::Time now) = 0;

  // A writer for part `part_number` (1..10000) of `size` bytes. Its Commit(info) installs the
  // part, replacing an earlier part of that number (AOBJ-OBJ-208); `info.etag` must be the
  // quoted hex MD5 and `info.crc32c` the CRC32C of the bytes appended (the caller computed and
  // verified them). Destroying it without Commit leaves no trace. Commit fails with
  // NO_SUCH_UPLOAD when the upload was completed or aborted meanwhile.
  // Errors here: NO_SUCH_BUCKET, NO_SUCH_UPLOAD, INVALID_ARGUMENT (part 0), TOO_MANY_PARTS
  // (above 10000), ENTITY_TOO_LARGE (above max_part_size), TOO_MANY_UPLOADS (max_parts).
  virtual absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPart(absl::string_view bucket,
                                                                  absl::string_view key,
                                                                  absl::string_view upload_id,
                                                                  uint32_t part_number,
                                                                  uint64_t size) = 0;

  // Assembles the listed parts into bucket/key and ends the upload (AOBJ-OBJ-210..219).
  // Only the commit conditions of `conditions` are used (if_none_match_star, if_match_etag;
  // AOBJ-OBJ-231): the store checks them atomically at commit, and a failed condition leaves the
  // upload in progress. Returns the stored object's info.
  // `expected_crc32c`, when set, is the client's CRC32C of the whole content (AOBJ-OBJ-259): a
  // different one fails with BAD_DIGEST before the commit, and the upload stays in progress.
  virtual absl::StatusOr<ObjectInfo> Complete(
      absl::string_view bucket, absl::string_view key, absl::string_view upload_id,
      const std::vector<CompletedPart>& parts, const WriteOptions& conditions = {},
      std::optional<uint32_t> expected_crc32c = std::nullopt) = 0;

  // Deletes the bucket from the store unless an upload of it is in progress (or being created):
  // BUCKET_NOT_EMPTY then (AOBJ-OBJ-232). Decided atomically with Create, so no upload can
  // outlive its bucket and pass to whoever creates the name next. Store errors as DeleteBucket.
  virtual absl::Status DeleteBucket(absl::string_view bucket) = 0;

  // Ends the upload and discards its parts (AOBJ-OBJ-220). NO_SUCH_BUCKET, NO_SUCH_UPLOAD.
  virtual absl::Status Abort(absl::string_view bucket, absl::string_view key,
                             absl::string_view upload_id) = 0;

  // Parts with numbers above `part_number_marker`, at most `max_parts` (0: 1000; capped at 1000)
  // (AOBJ-OBJ-221).
  virtual absl::StatusOr<PartsPage> ListParts(absl::string_view bucket, absl::string_view key,
                                              absl::string_view upload_id,
                                              uint32_t part_number_marker, uint32_t max_parts) = 0;

  // Uploads in progress in `bucket` whose key starts with `prefix`, after the markers
  // (AOBJ-OBJ-223, AOBJ-OBJ-224): with an empty `upload_id_marker`, keys above `key_marker`;
  // otherwise uploads after (key_marker, upload_id_marker).
  virtual absl::StatusOr<UploadsPage> ListUploads(absl::string_view bucket,
                                                  absl::string_view prefix,
                                                  absl::string_view key_marker,
                                                  absl::string_view upload_id_marker,
                                                  uint32_t max_uploads) = 0;
};

// A store that keeps multipart uploads itself, where every server in front of it sees them
// (RadosStore: in the cluster). The server asks for its manager instead of opening a part area.
class MultipartProvider {
 public:
  virtual ~MultipartProvider() = default;
  virtual absl::StatusOr<std::unique_ptr<MultipartManager>> OpenMultipart(
      const MultipartLimits& limits) = 0;
};

}  // namespace aobj

#endif  // AOBJ_STORE_MULTIPART_H_
