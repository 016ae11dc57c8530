// The object-store interface: the extension point behind the server (spec "Object semantics").
//
// A vendor puts its own storage behind aobj-server by implementing ObjectStore. The reference
// stores are MemoryStore (in process) and FileStore (a directory; the embedded default).
//
// Threading: every method of ObjectStore may be called from many threads at once. An
// ObjectWriter or ObjectReader is used by one thread at a time.
// Ownership: writers and readers are owned by the caller and must be destroyed before the store;
// the spans of DirectBuffer() and ContiguousView() are valid while their writer or reader
// lives. The server moves bytes by RMA straight into or out of those spans, and stops doing so
// for a cancelled request before it drops the writer (AOBJ-DAT-016, AOBJ-DAT-155), so a store
// never sees a write into a span after the writer is gone.
// Errors: absl::Status with an AOBJ error code attached (aobj/status.h): kNoSuchBucket,
// kNoSuchKey, kBucketAlreadyExists, kBucketNotEmpty, kPreconditionFailed, kStorageError,
// kInvalidArgument.
// Atomicity: an object becomes visible only when ObjectWriter::Commit() returns OK, and then
// replaces any previous object of that key as a whole: a reader sees the old or the new object,
// never a mix (AOBJ-OBJ-010). A writer destroyed without Commit() leaves no trace.
#ifndef AOBJ_STORE_H_
#define AOBJ_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace aobj {

// What a store keeps about an object besides its bytes.
struct ObjectInfo {
  uint64_t size = 0;
  std::string etag;               // quoted lower-case hex MD5 of the content: "\"9e10...\""
  int64_t last_modified_ms = 0;   // Unix epoch milliseconds
  std::string content_type;
  uint32_t crc32c = 0;            // CRC32C of the full content (checksum.h convention)
  // S3 user metadata (x-amz-meta-*), names lower-case; at most 2 KiB of names and values
  // (AOBJ-OBJ-120, AOBJ-OBJ-121). The server validates it before it reaches a store.
  std::map<std::string, std::string> user_metadata;
};

// What BeginPut records besides the bytes, and the conditions Commit() checks.
struct WriteOptions {
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
  // Commit conditions, checked by Commit() atomically with making the object visible, so that
  // of concurrent writers of one key exactly the ones whose condition held at their commit
  // succeed (AOBJ-OBJ-134):
  //  * if_none_match_star: fail with kPreconditionFailed when the key holds an object;
  //  * if_match_etag (non-empty): "*" or an ETag in stored form (quoted); fail with kNoSuchKey
  //    when the key holds no object and with kPreconditionFailed when its ETag differs.
  bool if_none_match_star = false;
  std::string if_match_etag;
};

// One object of a listing.
struct ObjectSummary {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  int64_t last_modified_ms = 0;
};

// One bucket of a listing.
struct BucketSummary {
  std::string name;
  int64_t creation_time_ms = 0;  // Unix epoch milliseconds
};

// Receives one object's bytes in order. Destroying it without Commit() aborts the write.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  // Appends `data`. The total appended must not exceed the size given to BeginPut.
  virtual absl::Status Append(absl::Span<const uint8_t> data) = 0;
  // Optional fast path: a writable view of the whole object (size given to BeginPut) that the
  // caller fills directly instead of calling Append. Empty span when not supported (a store may
  // support it up to some size only); the caller then uses Append. When used, the caller fills it
  // completely before Commit().
  virtual absl::Span<uint8_t> DirectBuffer() { return {}; }
  // Makes the object durable (as the store defines it) and visible atomically. `info.size`,
  // `info.etag` and `info.crc32c` are computed by the caller over the bytes written; the store
  // sets last_modified_ms. Returns the stored info.
  virtual absl::StatusOr<ObjectInfo> Commit(const ObjectInfo& info) = 0;
};

// Reads one committed object. It keeps reading the version it opened even if the key is
// overwritten or deleted meanwhile.
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual const ObjectInfo& info() const = 0;
  // Reads up to out.size() bytes at `offset`; returns the count (0 at the end).
  virtual absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) = 0;
  // Optional fast path: the whole content in memory, valid while the reader lives. Empty span
  // (with info().size > 0) when not supported.
  virtual absl::Span<const uint8_t> ContiguousView() const { return {}; }
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Whether a change this store reports done (a Commit, a Delete, a bucket created or deleted)
  // survives a crash of its host, power loss included, once the call returns. The server
  // announces it (Limits.durable_commits, spec AOBJ-OBJ-263), so a store says true only when it
  // syncs before it returns; the default promises nothing.
  virtual bool DurableCommits() const { return false; }

  // Whether every call returns without waiting on I/O, another host, or a lock held across
  // either (a store in this process's memory). The server may then serve a small request on the
  // thread that delivered it rather than hand it to a request thread (spec 8.9); a store that
  // says true must keep each call of a small object to microseconds. The default says false.
  virtual bool AnswersFromMemory() const { return false; }

  virtual absl::Status CreateBucket(std::string_view bucket) = 0;
  // Fails with kBucketNotEmpty unless the bucket holds no object.
  virtual absl::Status DeleteBucket(std::string_view bucket) = 0;
  virtual absl::Status HeadBucket(std::string_view bucket) = 0;

  // Starts writing `size` bytes under bucket/key with the attributes and commit conditions of
  // `options`. The bucket must exist. A store overrides this overload; `using
  // ObjectStore::BeginPut;` in the store's class keeps the content-type overload below visible.
  virtual absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                                 std::string_view key,
                                                                 uint64_t size,
                                                                 const WriteOptions& options) = 0;
  // The same with a content type only: no user metadata, no commit conditions.
  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         std::string_view content_type) {
    WriteOptions options;
    options.content_type = std::string(content_type);
    return BeginPut(bucket, key, size, options);
  }
  virtual absl::StatusOr<std::unique_ptr<ObjectReader>> OpenRead(std::string_view bucket,
                                                                 std::string_view key) = 0;
  virtual absl::StatusOr<ObjectInfo> Head(std::string_view bucket, std::string_view key) = 0;
  // Idempotent: deleting a missing key succeeds (S3). Fails with kNoSuchBucket.
  virtual absl::Status Delete(std::string_view bucket, std::string_view key) = 0;

  // Up to `limit` committed objects of `bucket` whose keys start with `prefix` and sort strictly
  // after `start_after`, ascending in byte order (octets compared as unsigned, like memcmp;
  // AOBJ-OBJ-100). Fewer than `limit` only when no more objects match. kNoSuchBucket.
  // The result reflects some moment during the call; it is not a snapshot across calls.
  virtual absl::StatusOr<std::vector<ObjectSummary>> ListObjects(std::string_view bucket,
                                                                 std::string_view prefix,
                                                                 std::string_view start_after,
                                                                 size_t limit) = 0;
  // Every bucket, ascending by name.
  virtual absl::StatusOr<std::vector<BucketSummary>> ListBuckets() = 0;

  // Commits writers[i] with infos[i] as writers[i]->Commit(infos[i]) would, for every i, and
  // returns each result in the same order: each object is atomic on its own (AOBJ-OBJ-010) and
  // becomes visible after those before it, but one's failure does not stop the others. A store
  // may share the durability work of the group (the filesystem store makes all the objects'
  // data durable together and syncs each directory once); the default commits one at a time.
  // Every writer comes from this store's BeginPut. PutObjects commits a round's items this way.
  virtual std::vector<absl::StatusOr<ObjectInfo>> CommitBatch(
      absl::Span<ObjectWriter* const> writers, absl::Span<const ObjectInfo> infos);
};

// In-memory store: consistent under concurrency, lost at exit.
std::unique_ptr<ObjectStore> NewMemoryStore();

// Filesystem store rooted at `root` (created if missing). A PUT goes to a temporary file that is
// written, fsync'ed and renamed over the final name, then the directory is fsync'ed, so a crash
// never leaves a torn or half-visible object (AOBJ-OBJ-011); CommitBatch starts the write-back of
// every temp file of the group before the first fsync, so that one journal commit covers them,
// and fsyncs each directory once. Temporary files left by a crash are
// removed when the store opens.
absl::StatusOr<std::unique_ptr<ObjectStore>> OpenFileStore(const std::string& root);

}  // namespace aobj

#endif  // AOBJ_STORE_H_
