// MultipartManager (multipart.h): the upload index, the S3 rules of each operation, and the
// assembly of a completed object through ObjectStore. Storage of parts: multipart_area.cc.
//
// State: one mutex guards the whole index (uploads by id and by bucket, every Upload's state and
// part map, the part count). Each Upload is in one of three states:
//   kActive      accepts parts; may be completed, aborted or listed
//   kCompleting  a Complete is assembling the object from a snapshot of its parts; requests that
//                would change the upload (part installation, Abort, Complete) wait on `changed`
//   kGone        completed or aborted; removed from the index; holders of a pointer see it and
//                answer NO_SUCH_UPLOAD
// Assembly runs without the lock (it reads and writes whole objects); the snapshot stays valid
// because nothing can change the upload's parts while it is kCompleting.
#include "store/multipart.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/status.h"
#include "store/multipart_area.h"
#include "store/store_rules.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/status_macros.h"

namespace aobj {
namespace {

constexpr size_t kMaxContentTypeBytes = 16 * 1024;

struct Part {
  PartInfo info;
  std::shared_ptr<const PartBlob> blob;
};

struct Upload {
  enum class State { kActive, kCompleting, kGone };
  UploadInfo info;
  // Guarded by Core::mu (a member of another object, so not annotated).
  State state = State::kActive;
  std::map<uint32_t, Part> parts;
};

absl::Status NoSuchUpload(absl::string_view id) {
  return MakeError(ErrorCode::kNoSuchUpload, absl::StrCat("no upload ", id.substr(0, 64),
                                                          " in progress for this bucket and key"));
}

std::string_view StdView(absl::string_view s) { return std::string_view(s.data(), s.size()); }

absl::Status CheckNames(absl::string_view bucket, absl::string_view key) {
  return CheckStoreKey(StdView(bucket), StdView(key));
}

// State shared by the manager and its part writers.
struct Core {
  Core(ObjectStore* store_in, std::unique_ptr<PartArea> area_in, const MultipartLimits& limits_in)
      : store(store_in), area(std::move(area_in)), limits(limits_in) {}

  ObjectStore* const store;  // borrowed; used only by manager methods
  const std::unique_ptr<PartArea> area;
  const MultipartLimits limits;

  absl::Mutex mu;
  absl::CondVar changed;  // signalled when an upload leaves kCompleting
  absl::flat_hash_map<std::string, std::shared_ptr<Upload>> by_id ABSL_GUARDED_BY(mu);
  // bucket -> (key, upload_id) -> upload: the order of ListMultipartUploads (AOBJ-OBJ-223),
  // since upload IDs start with the initiation time.
  std::map<std::string, std::map<std::pair<std::string, std::string>, std::shared_ptr<Upload>>>
      by_bucket ABSL_GUARDED_BY(mu);
  uint64_t part_count ABSL_GUARDED_BY(mu) = 0;
  size_t creating ABSL_GUARDED_BY(mu) = 0;  // Creates between their reservation and insertion
  // The same, per bucket: a bucket with a Create in flight is not empty (AOBJ-OBJ-232).
  absl::flat_hash_map<std::string, size_t> creating_in ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;  // the manager was destroyed
  // Per initiator (AOBJ-OBJ-233): uploads in progress or being created, and their parts.
  struct Holdings {
    size_t uploads = 0;
    uint64_t parts = 0;
  };
  absl::flat_hash_map<std::string, Holdings> per_initiator ABSL_GUARDED_BY(mu);

  void Count(const std::string& initiator, bool add) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (add) {
      ++per_initiator[initiator].uploads;
    } else if (auto it = per_initiator.find(initiator);
               it != per_initiator.end() && --it->second.uploads == 0) {
      per_initiator.erase(it);
    }
  }
  uint64_t& PartsOf(const std::string& initiator) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return per_initiator[initiator].parts;
  }

  // TOO_MANY_UPLOADS when one more part would pass the server's or the initiator's part limit
  // (AOBJ-OBJ-228, AOBJ-OBJ-233).
  absl::Status CheckPartRoom(const std::string& initiator) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (part_count >= limits.max_parts) {
      return MakeError(ErrorCode::kTooManyUploads,
                       absl::StrCat("the server holds its maximum of ", limits.max_parts,
                                    " parts of uploads in progress"));
    }
    auto it = per_initiator.find(initiator);
    if (it != per_initiator.end() && it->second.parts >= limits.max_parts_per_initiator) {
      return MakeError(ErrorCode::kTooManyUploads,
                       absl::StrCat("the uploads in progress of this access key hold ",
                                    it->second.parts, " parts, the server's limit for one access "
                                    "key; complete or abort some first"));
    }
    return absl::OkStatus();
  }

  // Inserts an upload; it counts against its initiator unless `counted` (a Create reserved it).
  void Insert(std::shared_ptr<Upload> u, bool counted = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!counted) Count(u->info.initiator, true);
    part_count += u->parts.size();
    PartsOf(u->info.initiator) += u->parts.size();
    by_bucket[u->info.bucket][{u->info.key, u->info.upload_id}] = u;
    by_id[u->info.upload_id] = std::move(u);
  }

  void Erase(const std::shared_ptr<Upload>& u) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    u->state = Upload::State::kGone;
    PartsOf(u->info.initiator) -= u->parts.size();
    Count(u->info.initiator, false);
    part_count -= u->parts.size();
    by_id.erase(u->info.upload_id);
    auto b = by_bucket.find(u->info.bucket);
    if (b != by_bucket.end()) {
      b->second.erase({u->info.key, u->info.upload_id});
      if (b->second.empty()) by_bucket.erase(b);
    }
  }

  // The upload named by all three, in any state but kGone (AOBJ-OBJ-201).
  absl::StatusOr<std::shared_ptr<Upload>> Find(absl::string_view bucket, absl::string_view key,
                                               absl::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = by_id.find(id);
    if (it == by_id.end() || it->second->info.bucket != bucket || it->second->info.key != key) {
      return NoSuchUpload(id);
    }
    return it->second;
  }

  // As Find, but first waits for a Complete in progress on the upload to end (AOBJ-OBJ-225).
  absl::StatusOr<std::shared_ptr<Upload>> FindActive(absl::string_view bucket,
                                                     absl::string_view key, absl::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (;;) {
      auto u = Find(bucket, key, id);
      if (!u.ok() || (*u)->state == Upload::State::kActive) return u;
      changed.Wait(&mu);
    }
  }
};

// Receives one part; Commit installs it. Used by one thread at a time.
class PartWriter final : public ObjectWriter {
 public:
  PartWriter(std::shared_ptr<Core> core, std::shared_ptr<Upload> upload, uint32_t part_number,
             uint64_t size, std::unique_ptr<PendingPart> pending)
      : core_(std::move(core)),
        upload_(std::move(upload)),
        part_number_(part_number),
        size_(size),
        pending_(std::move(pending)) {}
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;

  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (pending_ == nullptr) return MakeError(ErrorCode::kInvalidArgument, "part committed");
    return pending_->Append(data);
  }
  absl::Span<uint8_t> DirectBuffer() override {
    return pending_ == nullptr ? absl::Span<uint8_t>() : pending_->DirectBuffer();
  }

  absl::StatusOr<ObjectInfo> Commit(const ObjectInfo& info) override {
    if (pending_ == nullptr) return MakeError(ErrorCode::kInvalidArgument, "part committed");
    if (info.size != size_) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          absl::StrCat("commit size ", info.size, " differs from the part size ", size_));
    }
    const std::string bare = BareMd5Etag(info.etag);
    if (bare.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "part etag is not a quoted hex MD5");
    }
    PartInfo part;
    part.part_number = part_number_;
    part.size = size_;
    part.etag = absl::StrCat("\"", bare, "\"");  // AOBJ-OBJ-207
    part.last_modified_ms = absl::ToUnixMillis(absl::Now());
    part.crc32c = info.crc32c;
    // Durable before it can be seen (AOBJ-OBJ-227).
    if (absl::Status s = pending_->Seal(part); !s.ok()) return s;

    absl::MutexLock lock(&core_->mu);
    // A part arriving during a Complete waits for its outcome (AOBJ-OBJ-225).
    while (upload_->state == Upload::State::kCompleting) core_->changed.Wait(&core_->mu);
    if (upload_->state == Upload::State::kGone || core_->closed) {
      return NoSuchUpload(upload_->info.upload_id);
    }
    const bool replaces = upload_->parts.count(part_number_) > 0;  // AOBJ-OBJ-208
    if (!replaces) AOBJ_RETURN_IF_ERROR(core_->CheckPartRoom(upload_->info.initiator));
    auto blob = pending_->Install();
    if (!blob.ok()) return blob.status();
    pending_.reset();
    upload_->parts[part_number_] = Part{part, *std::move(blob)};
    if (!replaces) {
      ++core_->part_count;
      ++core_->PartsOf(upload_->info.initiator);
    }

    ObjectInfo out;
    out.size = part.size;
    out.etag = part.etag;
    out.last_modified_ms = part.last_modified_ms;
    out.crc32c = part.crc32c;
    return out;
  }

 private:
  const std::shared_ptr<Core> core_;
  const std::shared_ptr<Upload> upload_;
  const uint32_t part_number_;
  const uint64_t size_;
  std::unique_ptr<PendingPart> pending_;  // null once installed
};

class Manager final : public MultipartManager {
 public:
  using MultipartManager::Create;
  explicit Manager(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  ~Manager() override {
    absl::MutexLock lock(&core_->mu);
    core_->closed = true;
  }

  const MultipartLimits& limits() const override { return core_->limits; }

  absl::StatusOr<UploadInfo> Create(absl::string_view bucket, absl::string_view key,
                                    const WriteOptions& attributes,
                                    absl::string_view initiator) override {
    AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
    if (attributes.content_type.size() > kMaxContentTypeBytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("content type of ", attributes.content_type.size(),
                                    " bytes exceeds ", kMaxContentTypeBytes));
    }
    // The server bounds user metadata to 2 KiB (AOBJ-OBJ-121); this bounds the manifest.
    size_t metadata_bytes = 0;
    for (const auto& [name, value] : attributes.user_metadata) {
      metadata_bytes += name.size() + value.size();
    }
    if (metadata_bytes > kMaxContentTypeBytes) {
      return MakeError(ErrorCode::kInvalidArgument, "user metadata too large");
    }
    UploadInfo info;
    info.bucket = std::string(bucket);
    info.key = std::string(key);
    info.content_type = attributes.content_type;
    info.user_metadata = attributes.user_metadata;
    info.initiator = std::string(initiator);
    {
      absl::MutexLock lock(&core_->mu);
      // AOBJ-OBJ-200, checked under the lock that DeleteBucket holds (AOBJ-OBJ-232): the bucket
      // exists, and cannot be deleted until this upload is created or has failed.
      AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));
      // AOBJ-OBJ-228
      if (core_->by_id.size() + core_->creating >= core_->limits.max_uploads) {
        return MakeError(ErrorCode::kTooManyUploads,
                         absl::StrCat("the server holds its maximum of ", core_->limits.max_uploads,
                                      " uploads in progress"));
      }
      // AOBJ-OBJ-233: one principal cannot take the slots every other principal needs.
      if (auto it = core_->per_initiator.find(info.initiator);
          it != core_->per_initiator.end() &&
          it->second.uploads >= core_->limits.max_uploads_per_initiator) {
        return MakeError(ErrorCode::kTooManyUploads,
                         absl::StrCat("this access key has ", it->second.uploads,
                                      " uploads in progress, the server's limit for one access "
                                      "key; complete or abort some first"));
      }
      const absl::Time now = absl::Now();
      info.initiated_ms = absl::ToUnixMillis(now);
      do {
        info.upload_id = NewUploadId(now);  // AOBJ-OBJ-203
      } while (core_->by_id.contains(info.upload_id));
      ++core_->creating;
      ++core_->creating_in[info.bucket];
      core_->Count(info.initiator, true);
    }
    // Outside the lock: the directory area fsyncs.
    absl::Status added = core_->area->AddUpload(info);
    absl::MutexLock lock(&core_->mu);
    --core_->creating;
    if (--core_->creating_in[info.bucket] == 0) core_->creating_in.erase(info.bucket);
    if (!added.ok()) {
      core_->Count(info.initiator, false);
      return added;
    }
    auto upload = std::make_shared<Upload>();
    upload->info = info;
    core_->Insert(std::move(upload), /*counted=*/true);
    return info;
  }

  size_t ExpireUploads(absl::Time now) override {
    if (core_->limits.upload_expiry == absl::InfiniteDuration()) return 0;
    const int64_t before_ms = absl::ToUnixMillis(now - core_->limits.upload_expiry);
    std::vector<std::string> tokens;
    {
      absl::MutexLock lock(&core_->mu);
      std::vector<std::shared_ptr<Upload>> expired;
      for (const auto& [id, u] : core_->by_id) {
        if (u->state == Upload::State::kActive && u->info.initiated_ms < before_ms) {
          expired.push_back(u);
        }
      }
      for (const auto& u : expired) {
        // As Abort (AOBJ-OBJ-220): gone from disk first. One that cannot be detached now is
        // tried again on the next sweep.
        auto detached = core_->area->DetachUpload(u->info);
        if (!detached.ok()) continue;
        tokens.push_back(*std::move(detached));
        core_->Erase(u);
      }
    }
    for (const std::string& token : tokens) core_->area->Purge(token);
    return tokens.size();
  }

  absl::Status DeleteBucket(absl::string_view bucket) override {
    absl::MutexLock lock(&core_->mu);
    // AOBJ-OBJ-232: uploads in progress keep the bucket (S3 answers BucketNotEmpty likewise
    // for any content); the check and the delete are one step under the lock Create takes.
    auto it = core_->by_bucket.find(std::string(bucket));
    const bool uploads = it != core_->by_bucket.end() && !it->second.empty();
    if (uploads || core_->creating_in.contains(std::string(bucket))) {
      return MakeError(ErrorCode::kBucketNotEmpty,
                       absl::StrCat("bucket ", bucket, " has multipart uploads in progress; "
                                    "complete or abort them first (AOBJ-OBJ-232)"));
    }
    return core_->store->DeleteBucket(StdView(bucket));
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPart(absl::string_view bucket,
                                                          absl::string_view key,
                                                          absl::string_view upload_id,
                                                          uint32_t part_number,
                                                          uint64_t size) override {
    AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
    // AOBJ-OBJ-205
    if (part_number == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "part numbers start at 1");
    }
    if (part_number > kMaxPartNumber) {
      return MakeError(ErrorCode::kTooManyParts,
                       absl::StrCat("part number ", part_number, " is above ", kMaxPartNumber));
    }
    // AOBJ-OBJ-209
    if (size > core_->limits.max_part_size) {
      return MakeError(ErrorCode::kEntityTooLarge,
                       absl::StrCat("part of ", size, " bytes exceeds the maximum part size of ",
                                    core_->limits.max_part_size));
    }
    AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));
    absl::MutexLock lock(&core_->mu);
    auto upload = core_->FindActive(bucket, key, upload_id);
    if (!upload.ok()) return upload.status();
    if ((*upload)->parts.count(part_number) == 0) {
      AOBJ_RETURN_IF_ERROR(core_->CheckPartRoom((*upload)->info.initiator));
    }
    // Under the lock, so that the part's temporary file is created in an upload that is still
    // there (Abort and Complete detach it under the same lock).
    auto pending = core_->area->NewPart((*upload)->info, part_number, size);
    if (!pending.ok()) return pending.status();
    return std::unique_ptr<ObjectWriter>(
        new PartWriter(core_, *upload, part_number, size, *std::move(pending)));
  }

  absl::StatusOr<ObjectInfo> Complete(absl::string_view bucket, absl::string_view key,
                                      absl::string_view upload_id,
                                      const std::vector<CompletedPart>& list,
                                      const WriteOptions& conditions,
                                      std::optional<uint32_t> expected_crc32c) override {
    AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
    // AOBJ-OBJ-210
    if (list.size() > kMaxPartNumber) {
      return MakeError(
          ErrorCode::kTooManyParts,
          absl::StrCat("the part list has ", list.size(), " entries; at most ", kMaxPartNumber));
    }
    if (list.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "the part list is empty");
    }
    // AOBJ-OBJ-211
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i].part_number <= list[i - 1].part_number) {
        return MakeError(
            ErrorCode::kInvalidPartOrder,
            absl::StrCat("part ", list[i].part_number, " follows part ", list[i - 1].part_number,
                         "; part numbers must be strictly ascending"));
      }
    }
    AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));

    std::shared_ptr<Upload> upload;
    std::vector<Part> parts;
    uint64_t total = 0;
    std::vector<std::string> etags;
    {
      absl::MutexLock lock(&core_->mu);
      auto found = core_->FindActive(bucket, key, upload_id);
      if (!found.ok()) return found.status();
      upload = *std::move(found);
      parts.reserve(list.size());
      etags.reserve(list.size());
      for (const CompletedPart& c : list) {
        // AOBJ-OBJ-212
        auto it = upload->parts.find(c.part_number);
        if (it == upload->parts.end()) {
          return MakeError(ErrorCode::kInvalidPart,
                           absl::StrCat("part ", c.part_number, " was not uploaded"));
        }
        const std::string want = BareMd5Etag(c.etag);
        if (want.empty() || want != BareMd5Etag(it->second.info.etag)) {
          return MakeError(ErrorCode::kInvalidPart,
                           absl::StrCat("part ", c.part_number, " has ETag ", it->second.info.etag,
                                        ", the list says ", c.etag.substr(0, 80)));
        }
        parts.push_back(it->second);
        etags.push_back(it->second.info.etag);
      }
      // AOBJ-OBJ-213
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        if (parts[i].info.size < core_->limits.min_part_size) {
          return MakeError(
              ErrorCode::kEntityTooSmall,
              absl::StrCat("part ", parts[i].info.part_number, " has ", parts[i].info.size,
                           " bytes; every part but the last "
                           "needs at least ",
                           core_->limits.min_part_size));
        }
      }
      // AOBJ-OBJ-214, AOBJ-OBJ-230: at most 10000 parts of at most max_part_size each, so the
      // 64-bit sum cannot overflow.
      for (const Part& p : parts) total += p.info.size;
      if (total > core_->limits.max_object_size) {
        return MakeError(
            ErrorCode::kEntityTooLarge,
            absl::StrCat("the parts add up to ", total, " bytes; the maximum object size is ",
                         core_->limits.max_object_size));
      }
      upload->state = Upload::State::kCompleting;
    }

    absl::StatusOr<ObjectInfo> committed =
        Assemble(upload->info, parts, total, etags, conditions, expected_crc32c);

    std::string token;
    {
      absl::MutexLock lock(&core_->mu);
      core_->changed.SignalAll();
      if (!committed.ok()) {
        // AOBJ-OBJ-218: a failed Complete leaves the upload as it was.
        upload->state = Upload::State::kActive;
        return committed.status();
      }
      core_->Erase(upload);  // AOBJ-OBJ-219
      // The object is committed whatever happens here; should the detach fail, the upload
      // comes back after a restart and completes again to the same object (AOBJ-OBJ-226).
      auto detached = core_->area->DetachUpload(upload->info);
      if (detached.ok()) token = *std::move(detached);
    }
    core_->area->Purge(token);
    return committed;
  }

  absl::Status Abort(absl::string_view bucket, absl::string_view key,
                     absl::string_view upload_id) override {
    AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
    AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));
    std::string token;
    {
      absl::MutexLock lock(&core_->mu);
      auto upload = core_->FindActive(bucket, key, upload_id);  // AOBJ-OBJ-225
      if (!upload.ok()) return upload.status();
      // AOBJ-OBJ-220: gone from disk first, so that an acknowledged abort stays done.
      auto detached = core_->area->DetachUpload((*upload)->info);
      if (!detached.ok()) return detached.status();
      token = *std::move(detached);
      core_->Erase(*upload);
    }
    core_->area->Purge(token);
    return absl::OkStatus();
  }

  absl::StatusOr<PartsPage> ListParts(absl::string_view bucket, absl::string_view key,
                                      absl::string_view upload_id, uint32_t marker,
                                      uint32_t max_parts) override {
    AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
    AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));
    // AOBJ-OBJ-221
    const uint32_t limit = PageLimit(max_parts, kMaxListedParts);
    absl::MutexLock lock(&core_->mu);
    auto upload = core_->Find(bucket, key, upload_id);
    if (!upload.ok()) return upload.status();
    PartsPage page;
    page.upload = (*upload)->info;
    const auto& parts = (*upload)->parts;
    for (auto it = parts.upper_bound(marker); it != parts.end(); ++it) {
      if (!AddToPage(page, limit, it->second.info)) break;
    }
    return page;
  }

  absl::StatusOr<UploadsPage> ListUploads(absl::string_view bucket, absl::string_view prefix,
                                          absl::string_view key_marker,
                                          absl::string_view upload_id_marker,
                                          uint32_t max_uploads) override {
    if (bucket.empty()) return MakeError(ErrorCode::kInvalidArgument, "invalid bucket name");
    AOBJ_RETURN_IF_ERROR(core_->store->HeadBucket(StdView(bucket)));
    // AOBJ-OBJ-224
    const uint32_t limit = PageLimit(max_uploads, kMaxListedUploads);
    UploadsPage page;
    absl::MutexLock lock(&core_->mu);
    auto b = core_->by_bucket.find(std::string(bucket));
    if (b == core_->by_bucket.end()) return page;
    const auto& uploads = b->second;
    // The first candidate is the later of: the first key at or after the prefix, and the first
    // upload past the markers.
    auto it = uploads.lower_bound({std::string(prefix), std::string()});
    if (!key_marker.empty() || !upload_id_marker.empty()) {
      auto past = uploads.end();
      if (upload_id_marker.empty()) {
        past = uploads.lower_bound({std::string(key_marker), std::string()});
        while (past != uploads.end() && past->first.first == key_marker) ++past;
      } else {
        past = uploads.upper_bound({std::string(key_marker), std::string(upload_id_marker)});
      }
      if (past == uploads.end() || (it != uploads.end() && past->first > it->first)) it = past;
    }
    for (; it != uploads.end(); ++it) {
      const std::string& k = it->first.first;
      if (k.compare(0, prefix.size(), prefix.data(), prefix.size()) != 0) break;  // sorted
      if (!AddToPage(page, limit, it->second->info)) break;
    }
    return page;
  }

 private:
  // Streams the parts, in order, into one new object (AOBJ-OBJ-216), checking each part's
  // recorded CRC32C on the way (AOBJ-DAT-153) and combining the object's from those it checked
  // (AOBJ-DAT-152).
  absl::StatusOr<ObjectInfo> Assemble(const UploadInfo& u, const std::vector<Part>& parts,
                                      uint64_t total, const std::vector<std::string>& etags,
                                      const WriteOptions& conditions,
                                      std::optional<uint32_t> expected_crc32c) {
    absl::StatusOr<std::string> etag = MultipartEtag(etags);  // AOBJ-OBJ-217
    if (!etag.ok()) return etag.status();
    WriteOptions attributes;
    attributes.content_type = u.content_type;
    attributes.user_metadata = u.user_metadata;
    attributes.if_none_match_star = conditions.if_none_match_star;  // AOBJ-OBJ-231
    attributes.if_match_etag = conditions.if_match_etag;
    auto writer = core_->store->BeginPut(StdView(u.bucket), StdView(u.key), total, attributes);
    if (!writer.ok()) return writer.status();
    const absl::Span<uint8_t> direct = (*writer)->DirectBuffer();
    std::unique_ptr<uint8_t[]> chunk;
    const uint64_t chunk_bytes = std::max<uint64_t>(core_->limits.copy_chunk_bytes, 4096);
    uint32_t crc = 0;
    uint64_t at = 0;  // offset of the current part in the object
    for (const Part& p : parts) {
      const uint64_t size = p.info.size;
      uint32_t part_crc = 0;
      const absl::Span<const uint8_t> view = p.blob->ContiguousView();
      if (!view.empty()) {
        if (view.size() != size) {
          return MakeError(ErrorCode::kStorageError,
                           absl::StrCat("part ", p.info.part_number, " holds ", view.size(),
                                        " bytes, its record says ", size));
        }
        if (!direct.empty()) {
          // Checked and copied a block at a time, so that the copy reads what the check just
          // brought into the cache: the part crosses the memory bus once instead of twice.
          constexpr size_t kBlock = size_t{256} << 10;
          for (size_t off = 0; off < view.size(); off += kBlock) {
            const size_t n = std::min(kBlock, view.size() - off);
            part_crc = Crc32c(part_crc, view.data() + off, n);
            std::memcpy(direct.data() + at + off, view.data() + off, n);
          }
        } else {
          part_crc = Crc32c(0, view.data(), view.size());
          AOBJ_RETURN_IF_ERROR((*writer)->Append(view));
        }
      } else if (size > 0) {
        auto reader = p.blob->Open();
        if (!reader.ok()) return reader.status();
        if (direct.empty() && chunk == nullptr) chunk.reset(new uint8_t[chunk_bytes]);
        for (uint64_t off = 0; off < size;) {
          const uint64_t n = std::min(chunk_bytes, size - off);
          uint8_t* target = direct.empty() ? chunk.get() : direct.data() + at + off;
          auto got = (*reader)->ReadAt(off, {target, static_cast<size_t>(n)});
          if (!got.ok()) return got.status();
          if (*got != n) {
            return MakeError(
                ErrorCode::kStorageError,
                absl::StrCat("part ", p.info.part_number, " is shorter than its ", size, " bytes"));
          }
          part_crc = Crc32c(part_crc, target, n);
          if (direct.empty()) {
            AOBJ_RETURN_IF_ERROR((*writer)->Append({target, static_cast<size_t>(n)}));
          }
          off += n;
        }
      }
      if (part_crc != p.info.crc32c) {
        return MakeError(ErrorCode::kStorageError,
                         absl::StrCat("part ", p.info.part_number,
                                      " does not match the CRC32C recorded when it was "
                                      "uploaded; nothing was stored"));
      }
      // The object's CRC from the parts' (AOBJ-DAT-152 allows it): one pass over the content.
      crc = Crc32cCombine(crc, part_crc, size);
      at += size;
    }
    // AOBJ-OBJ-259: the client's checksum of the whole, before anything becomes visible.
    AOBJ_RETURN_IF_ERROR(CheckFullObjectCrc32c(expected_crc32c, crc));
    ObjectInfo info;
    info.size = total;
    info.etag = *std::move(etag);
    info.content_type = u.content_type;
    info.user_metadata = u.user_metadata;
    info.crc32c = crc;
    return (*writer)->Commit(info);  // AOBJ-OBJ-218: visible atomically, like a PUT
  }

  const std::shared_ptr<Core> core_;
};

}  // namespace

bool IsWellFormedUploadId(absl::string_view upload_id) {
  if (upload_id.size() != kUploadIdLength) return false;
  for (char c : upload_id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<MultipartManager>> MultipartManager::Open(
    ObjectStore* store, const std::string& dir, const MultipartLimits& limits) {
  if (store == nullptr) return MakeError(ErrorCode::kInvalidArgument, "no object store");
  std::unique_ptr<PartArea> area;
  if (dir.empty()) {
    area = NewMemoryPartArea();
  } else {
    auto opened = OpenDirectoryPartArea(dir);
    if (!opened.ok()) return opened.status();
    area = *std::move(opened);
  }
  std::vector<LoadedUpload> loaded;
  if (absl::Status s = area->Load(&loaded); !s.ok()) return s;
  auto core = std::make_shared<Core>(store, std::move(area), limits);
  {
    absl::MutexLock lock(&core->mu);
    for (LoadedUpload& l : loaded) {
      auto upload = std::make_shared<Upload>();
      upload->info = std::move(l.info);
      for (LoadedPart& p : l.parts) {
        const uint32_t n = p.info.part_number;
        upload->parts[n] = Part{std::move(p.info), std::move(p.blob)};
      }
      core->Insert(std::move(upload));
    }
  }
  auto manager = std::make_unique<Manager>(std::move(core));
  manager->ExpireUploads(absl::Now());  // AOBJ-OBJ-234: also what expired while stopped
  return std::unique_ptr<MultipartManager>(std::move(manager));
}

}  // namespace aobj
