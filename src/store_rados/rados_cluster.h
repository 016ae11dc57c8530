// Internals of RadosStore shared by the store (rados_store.cc) and its multipart uploads
// (rados_multipart.cc): librados handles, the omap primitives every protocol step is made of,
// bucket resolution, heads, and the writer. The protocol itself: rados_store.cc's opening
// comment; the layout: rados_format.h.
#ifndef AOBJ_STORE_RADOS_RADOS_CLUSTER_H_
#define AOBJ_STORE_RADOS_RADOS_CLUSTER_H_

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "aobj/rados_store.h"
#include "aobj/status.h"
#include "rados/librados.h"
#include "store/bucket_owners.h"
#include "store/multipart.h"
#include "store/store_rules.h"
#include "store_rados/rados_format.h"
#include "wire/crypto.h"
#include "wire/le_codec.h"

namespace aobj::rados_internal {

using rados_format::BucketRecord;
using rados_format::GcIntent;
using rados_format::GcKind;
using rados_format::HeadRecord;
using rados_format::Uuid;

// How often a compare-and-swap that lost a race is tried again before the operation gives up.
inline constexpr int kCasAttempts = 64;
// Entries read per omap page (RADOS caps a page at osd_max_omap_entries_per_request, 1024).
inline constexpr uint64_t kOmapPage = 1000;
// The internal status of "the index object is gone": the bucket was deleted, maybe re-created.
inline constexpr absl::string_view kIndexGone = "aobj: bucket index gone";

inline int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

inline absl::Status RadosError(int r, absl::string_view what) {
  return MakeError(ErrorCode::kStorageError,
                   absl::StrCat("RADOS ", what, ": ", strerror(-r), " (", r, ")"));
}

inline absl::Status IndexGone() { return absl::NotFoundError(kIndexGone); }
inline bool IsIndexGone(const absl::Status& s) {
  return s.code() == absl::StatusCode::kNotFound && s.message() == kIndexGone;
}

inline Uuid NewUuid() {
  Uuid u;
  const std::string bytes = RandomBytes(u.size());
  std::memcpy(u.data(), bytes.data(), u.size());
  return u;
}

// RAII for librados handles.
struct WriteOp {
  rados_write_op_t op = rados_create_write_op();
  ~WriteOp() { rados_release_write_op(op); }
};
struct ReadOp {
  rados_read_op_t op = rados_create_read_op();
  ~ReadOp() { rados_release_read_op(op); }
};
struct OmapIter {
  rados_omap_iter_t it = nullptr;
  ~OmapIter() {
    if (it != nullptr) rados_omap_get_end(it);
  }
};
struct Completion {
  rados_completion_t c = nullptr;
  Completion() { rados_aio_create_completion2(nullptr, nullptr, &c); }
  ~Completion() {
    if (c != nullptr) rados_aio_release(c);
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  int Wait() {
    rados_aio_wait_for_complete(c);
    return rados_aio_get_return_value(c);
  }
};

// One key's head as read from an index: absent, or its exact octets (what a compare-and-swap
// expects) and their decoding.
struct HeadLookup {
  bool found = false;
  std::string raw;
  HeadRecord head;
};

class Cluster;

// Where a writer's bytes go: an object's head, or part `part_number` of an upload.
struct PartTarget {
  std::string upload_id;
  uint32_t part_number = 0;
};

class RadosWriter final : public ObjectWriter {
 public:
  // `part`: install a multipart part (rados_multipart.cc) instead of committing an object.
  RadosWriter(Cluster* store, Uuid incarnation, std::string encoded_key, uint64_t size,
              WriteOptions options, std::optional<PartTarget> part = std::nullopt);
  ~RadosWriter() override;
  absl::Status Start();
  absl::Status Append(absl::Span<const uint8_t> data) override;
  absl::Span<uint8_t> DirectBuffer() override;
  absl::StatusOr<ObjectInfo> Commit(const ObjectInfo& info) override;

 private:
  struct InFlight {
    std::unique_ptr<Completion> done;
    std::string bytes;
    uint64_t stripe = 0;
  };
  absl::Status Flush();              // sends the buffered stripe
  absl::Status WaitUntil(size_t n);  // until at most n stripes are in flight
  void Abandon();                    // deletes what was written, and the garbage entry
  rados_format::Segment segment() const { return {uuid_, size_, stripe_bytes_}; }
  absl::StatusOr<ObjectInfo> CommitObject(const ObjectInfo& info);
  absl::StatusOr<ObjectInfo> InstallPart(const ObjectInfo& info);

  Cluster* const store_;
  const Uuid incarnation_;
  const std::string encoded_key_;
  const uint64_t size_;
  const WriteOptions options_;
  const std::optional<PartTarget> part_;
  const Uuid uuid_ = NewUuid();
  const uint32_t stripe_bytes_;
  std::string buffer_;        // the stripe being filled
  uint64_t next_stripe_ = 0;  // index of the stripe in buffer_
  uint64_t appended_ = 0;
  bool direct_ = false;
  std::deque<InFlight> in_flight_;
  absl::Status failed_;
  std::string intent_;  // the garbage entry's current value; empty: none written
  std::string intent_name_;
  bool done_ = false;
};

class RadosReader final : public ObjectReader {
 public:
  RadosReader(Cluster* store, HeadRecord head) : store_(store), head_(std::move(head)) {}
  const ObjectInfo& info() const override { return head_.info; }
  absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override;

 private:
  Cluster* const store_;
  const HeadRecord head_;
};

class Cluster final : public RadosStore, public MultipartProvider, public BucketOwnerStore {
 public:
  Cluster(RadosStoreOptions options, rados_t cluster, rados_ioctx_t io)
      : options_(std::move(options)), cluster_(cluster), io_(io) {
    if (options_.gc_interval_ms > 0) collector_ = std::thread([this] { CollectorLoop(); });
  }

  // Ceph acknowledges a write once every replica of its placement group has it in its
  // object store's journal; how stable that is, is the cluster's (a memstore OSD, as in this
  // project's tests, keeps nothing across a power loss).
  bool DurableCommits() const override { return true; }
  ~Cluster() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (collector_.joinable()) collector_.join();
    rados_ioctx_destroy(io_);
    rados_shutdown(cluster_);
  }

  const RadosStoreOptions& options() const { return options_; }
  rados_ioctx_t io() const { return io_; }

  // ---- omap primitives ---------------------------------------------------------------------

  // The value of `key` in `oid`'s omap. IndexGone() when the object does not exist.
  absl::StatusOr<std::optional<std::string>> OmapGet(const std::string& oid,
                                                     const std::string& key) {
    ReadOp op;
    OmapIter iter;
    int prval = 0;
    const char* keys[] = {key.data()};
    const size_t lens[] = {key.size()};
    rados_read_op_omap_get_vals_by_keys2(op.op, keys, 1, lens, &iter.it, &prval);
    const int r = rados_read_op_operate(op.op, io_, oid.c_str(), 0);
    if (r == -ENOENT) return IndexGone();
    if (r < 0) return RadosError(r, absl::StrCat("read of ", oid));
    if (prval < 0) return RadosError(prval, absl::StrCat("omap read of ", oid));
    char *k = nullptr, *v = nullptr;
    size_t kl = 0, vl = 0;
    while (rados_omap_get_next2(iter.it, &k, &v, &kl, &vl) == 0 && k != nullptr) {
      if (std::string_view(k, kl) == key) return std::optional<std::string>(std::string(v, vl));
    }
    return std::optional<std::string>();
  }

  // Sets `key` to `value` (or removes it, when null) only if it holds exactly `expected` (the
  // empty string: absent). 0, -ECANCELED (it held something else), -ENOENT (no object; only
  // with `must_exist`, else the object is created) or another error.
  int OmapSwap(const std::string& oid, const std::string& key, const std::string& expected,
               const std::string* value, bool must_exist) {
    WriteOp op;
    int cmp_rval = 0;
    if (must_exist) {
      rados_write_op_assert_exists(op.op);
    } else {
      rados_write_op_create(op.op, LIBRADOS_CREATE_IDEMPOTENT, nullptr);  // omap_cmp needs one
    }
    rados_write_op_omap_cmp2(op.op, key.data(), LIBRADOS_CMPXATTR_OP_EQ, expected.data(),
                             key.size(), expected.size(), &cmp_rval);
    const char* keys[] = {key.data()};
    const size_t key_lens[] = {key.size()};
    if (value != nullptr) {
      const char* vals[] = {value->data()};
      const size_t val_lens[] = {value->size()};
      rados_write_op_omap_set2(op.op, keys, vals, key_lens, val_lens, 1);
    } else {
      rados_write_op_omap_rm_keys2(op.op, keys, key_lens, 1);
    }
    const int r = rados_write_op_operate(op.op, io_, oid.c_str(), nullptr, 0);
    return r;
  }

  int OmapSet(const std::string& oid, const std::string& key, const std::string& value) {
    WriteOp op;
    const char* keys[] = {key.data()};
    const char* vals[] = {value.data()};
    const size_t key_lens[] = {key.size()};
    const size_t val_lens[] = {value.size()};
    rados_write_op_omap_set2(op.op, keys, vals, key_lens, val_lens, 1);
    return rados_write_op_operate(op.op, io_, oid.c_str(), nullptr, 0);
  }

  // Calls `f(key, value)` for up to `limit` entries of `oid` after `start_after` whose keys
  // start with `prefix`, in key order; stops early when f returns false. IndexGone() when the
  // object does not exist.
  template <typename F>
  absl::Status OmapScan(const std::string& oid, std::string start_after, const std::string& prefix,
                        uint64_t limit, F&& f) {
    uint64_t seen = 0;
    while (seen < limit) {
      ReadOp op;
      OmapIter iter;
      unsigned char more = 0;
      int prval = 0;
      rados_read_op_omap_get_vals2(op.op, start_after.c_str(), prefix.c_str(),
                                   std::min(kOmapPage, limit - seen), &iter.it, &more, &prval);
      const int r = rados_read_op_operate(op.op, io_, oid.c_str(), 0);
      if (r == -ENOENT) return IndexGone();
      if (r < 0) return RadosError(r, absl::StrCat("listing of ", oid));
      if (prval < 0) return RadosError(prval, absl::StrCat("omap listing of ", oid));
      char *k = nullptr, *v = nullptr;
      size_t kl = 0, vl = 0;
      uint64_t page = 0;
      while (rados_omap_get_next2(iter.it, &k, &v, &kl, &vl) == 0 && k != nullptr) {
        ++page;
        ++seen;
        start_after.assign(k, kl);
        if (absl::Status s = f(std::string_view(k, kl), std::string_view(v, vl)); !s.ok()) {
          return s.code() == absl::StatusCode::kCancelled ? absl::OkStatus() : s;
        }
        if (seen == limit) break;
      }
      if (!more || page == 0) break;
    }
    return absl::OkStatus();
  }

  // ---- buckets -----------------------------------------------------------------------------

  absl::StatusOr<std::optional<std::string>> BucketEntry(std::string_view bucket) {
    absl::StatusOr<std::optional<std::string>> v =
        OmapGet(rados_format::kBucketsObject, std::string(bucket));
    if (!v.ok() && IsIndexGone(v.status())) return std::optional<std::string>();
    return v;
  }

  // The current incarnation of `bucket` (from the cache unless `fresh`), or kNoSuchBucket.
  absl::StatusOr<Uuid> Incarnation(std::string_view bucket, bool fresh) {
    if (!fresh) {
      absl::MutexLock lock(&mu_);
      if (auto it = incarnations_.find(std::string(bucket)); it != incarnations_.end())
        return it->second;
    }
    absl::StatusOr<std::optional<std::string>> entry = BucketEntry(bucket);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return NoSuchBucket();
    absl::StatusOr<BucketRecord> record = rados_format::DecodeBucket(**entry);
    if (!record.ok()) return record.status();
    absl::MutexLock lock(&mu_);
    incarnations_[std::string(bucket)] = record->incarnation;
    return record->incarnation;
  }

  void Forget(std::string_view bucket) {
    absl::MutexLock lock(&mu_);
    incarnations_.erase(std::string(bucket));
  }

  // Runs f(index object) on the bucket's index; once more with a fresh incarnation if the cached
  // one's index is gone (deleted, perhaps re-created, through another gateway).
  template <typename T, typename F>
  absl::StatusOr<T> OnIndex(std::string_view bucket, F&& f) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::StatusOr<Uuid> inc = Incarnation(bucket, attempt > 0);
      if (!inc.ok()) return inc.status();
      absl::StatusOr<T> r = f(rados_format::IndexObject(*inc));
      if (r.ok() || !IsIndexGone(r.status())) return r;
      Forget(bucket);
    }
    return NoSuchBucket();
  }

  bool ObjectExists(const std::string& oid, absl::Status* error) {
    uint64_t size = 0;
    time_t mtime = 0;
    const int r = rados_stat(io_, oid.c_str(), &size, &mtime);
    if (r < 0 && r != -ENOENT) *error = RadosError(r, absl::StrCat("stat of ", oid));
    return r == 0;
  }

  absl::Status CreateBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucket(bucket); !s.ok()) return s;
    const std::string name(bucket);
    for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
      absl::StatusOr<std::optional<std::string>> entry = BucketEntry(bucket);
      if (!entry.ok()) return entry.status();
      std::string expected;
      if (entry->has_value()) {
        absl::StatusOr<BucketRecord> old = rados_format::DecodeBucket(**entry);
        if (!old.ok()) return old.status();
        absl::Status error;
        if (ObjectExists(rados_format::IndexObject(old->incarnation), &error)) {
          return MakeError(ErrorCode::kBucketAlreadyExists, "bucket already exists");
        }
        if (!error.ok()) return error;
        expected = **entry;  // a deletion that stopped half-way: take the name over
      }
      BucketRecord record{NowMs(), NewUuid(), Creator(bucket)};
      const std::string index = rados_format::IndexObject(record.incarnation);
      {
        WriteOp op;
        rados_write_op_create(op.op, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
        const int r = rados_write_op_operate(op.op, io_, index.c_str(), nullptr, 0);
        if (r < 0) return RadosError(r, absl::StrCat("create of ", index));
      }
      const std::string value = rados_format::EncodeBucket(record);
      const int r = OmapSwap(rados_format::kBucketsObject, name, expected, &value, false);
      if (r == 0) {
        absl::MutexLock lock(&mu_);
        incarnations_[std::string(bucket)] = record.incarnation;
        return absl::OkStatus();
      }
      rados_remove(io_, index.c_str());
      if (r != -ECANCELED) return RadosError(r, "bucket registration");
    }
    return MakeError(ErrorCode::kStorageError, "bucket registration kept losing races");
  }

  absl::Status DeleteBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucket(bucket); !s.ok()) return s;
    Forget(bucket);
    absl::StatusOr<std::optional<std::string>> entry = BucketEntry(bucket);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return NoSuchBucket();
    absl::StatusOr<BucketRecord> record = rados_format::DecodeBucket(**entry);
    if (!record.ok()) return record.status();
    const std::string index = rados_format::IndexObject(record->incarnation);
    // Versions are per I/O context: a private one, so no other thread's operation moves it.
    rados_ioctx_t io;
    if (int r = rados_ioctx_create(cluster_, options_.pool.c_str(), &io); r < 0) {
      return RadosError(r, "I/O context");
    }
    rados_ioctx_set_namespace(io, options_.ns.c_str());
    absl::Status result = MakeError(ErrorCode::kStorageError, "bucket deletion kept losing races");
    for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
      ReadOp read;
      OmapIter iter;
      unsigned char more = 0;
      int prval = 0;
      rados_read_op_omap_get_keys2(read.op, "", 1, &iter.it, &more, &prval);
      int r = rados_read_op_operate(read.op, io, index.c_str(), 0);
      if (r == -ENOENT) {
        result = absl::OkStatus();
        break;
      }
      if (r < 0 || prval < 0) {
        result = RadosError(r < 0 ? r : prval, absl::StrCat("read of ", index));
        break;
      }
      char* k = nullptr;
      size_t kl = 0;
      if (rados_omap_get_next2(iter.it, &k, nullptr, &kl, nullptr) == 0 && k != nullptr) {
        // Upload entries sort first: any is one in progress (AOBJ-OBJ-232).
        result =
            absl::StartsWith(absl::string_view(k, kl), rados_format::kMark)
                ? MakeError(ErrorCode::kBucketNotEmpty,
                            absl::StrCat("bucket ", absl::string_view(bucket.data(), bucket.size()),
                                         " has multipart uploads in progress; complete or "
                                         "abort them first (AOBJ-OBJ-232)"))
                : MakeError(ErrorCode::kBucketNotEmpty, "bucket is not empty");
        break;
      }
      const uint64_t version = rados_get_last_version(io);
      WriteOp remove;
      rados_write_op_assert_version(remove.op, version);
      rados_write_op_remove(remove.op);
      r = rados_write_op_operate(remove.op, io, index.c_str(), nullptr, 0);
      if (r == 0 || r == -ENOENT) {
        result = absl::OkStatus();
        break;
      }
      if (r != -ERANGE && r != -EOVERFLOW) {
        result = RadosError(r, absl::StrCat("removal of ", index));
        break;
      }
    }
    rados_ioctx_destroy(io);
    if (!result.ok()) return result;
    // The name last: a gateway that stops here leaves a name whose index is gone, which every
    // operation reads as no bucket and the next CreateBucket of the name takes over.
    const int r =
        OmapSwap(rados_format::kBucketsObject, std::string(bucket), **entry, nullptr, false);
    if (r != 0 && r != -ECANCELED) return RadosError(r, "bucket deregistration");
    Forget(bucket);
    return absl::OkStatus();
  }

  // ---- owners (BucketOwnerStore) -----------------------------------------------------------

  void SetCreator(std::string_view bucket, std::string_view principal) override {
    absl::MutexLock lock(&mu_);
    creators_[std::string(bucket)] = std::string(principal);
  }
  void ClearCreator(std::string_view bucket) override {
    absl::MutexLock lock(&mu_);
    creators_.erase(std::string(bucket));
  }
  std::string Creator(std::string_view bucket) {
    absl::MutexLock lock(&mu_);
    auto it = creators_.find(std::string(bucket));
    return it == creators_.end() ? std::string() : it->second;
  }
  absl::StatusOr<std::string> OwnerOf(std::string_view bucket) override {
    absl::StatusOr<std::optional<std::string>> entry = BucketEntry(bucket);
    if (!entry.ok()) return entry.status();
    if (!entry->has_value()) return NoSuchBucket();
    absl::StatusOr<BucketRecord> record = rados_format::DecodeBucket(**entry);
    if (!record.ok()) return record.status();
    return record->owner;
  }

  absl::Status HeadBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucket(bucket); !s.ok()) return s;
    absl::StatusOr<Uuid> inc = Incarnation(bucket, true);
    if (!inc.ok()) return inc.status();
    absl::Status error;
    if (ObjectExists(rados_format::IndexObject(*inc), &error)) return absl::OkStatus();
    if (!error.ok()) return error;
    Forget(bucket);
    return NoSuchBucket();
  }

  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    std::vector<BucketSummary> out;
    absl::Status s = OmapScan(rados_format::kBucketsObject, "", "", UINT64_MAX,
                              [&](std::string_view k, std::string_view v) -> absl::Status {
                                absl::StatusOr<BucketRecord> r = rados_format::DecodeBucket(v);
                                if (!r.ok()) return r.status();
                                out.push_back({std::string(k), r->creation_time_ms});
                                return absl::OkStatus();
                              });
    if (!s.ok() && !IsIndexGone(s)) return s;
    return out;
  }

  // ---- objects -----------------------------------------------------------------------------

  absl::StatusOr<HeadLookup> ReadHead(const std::string& index, const std::string& encoded_key) {
    absl::StatusOr<std::optional<std::string>> raw = OmapGet(index, encoded_key);
    if (!raw.ok()) return raw.status();
    HeadLookup out;
    if (!raw->has_value()) return out;
    absl::StatusOr<HeadRecord> head = rados_format::DecodeHead(**raw);
    if (!head.ok()) return head.status();
    out.found = true;
    out.raw = std::move(**raw);
    out.head = std::move(*head);
    return out;
  }

  // Notes that the version `head` of key may need collecting once nothing names it.
  absl::Status NoteReplaced(const Uuid& incarnation, const std::string& encoded_key,
                            const HeadRecord& head) {
    for (const rados_format::Segment& s : head.segments) {
      if (absl::Status n = NoteSegment(GcKind::kReplaced, incarnation, encoded_key, s, nullptr);
          !n.ok()) {
        return n;
      }
    }
    return absl::OkStatus();
  }

  // Writes the garbage entry of one segment (none for an empty one); `part`: the part record
  // that may name it besides the key's head.
  absl::Status NoteSegment(GcKind kind, const Uuid& incarnation, const std::string& encoded_key,
                           const rados_format::Segment& s, const PartTarget* part,
                           std::string* value_out = nullptr, std::string* name_out = nullptr) {
    if (s.size == 0) return absl::OkStatus();  // no stripes
    GcIntent intent{kind,
                    NowMs(),
                    s.uuid,
                    incarnation,
                    s.size,
                    s.stripe_bytes,
                    encoded_key,
                    /*upload_id=*/{},
                    /*part_number=*/0};
    if (part != nullptr) {
      intent.upload_id = part->upload_id;
      intent.part_number = part->part_number;
    }
    std::string value = rados_format::EncodeGcIntent(intent);
    std::string name = rados_format::GcEntryName(intent.time_ms, s.uuid, kind);
    const int r = OmapSet(rados_format::GcObject(s.uuid), name, value);
    if (r < 0) return RadosError(r, "garbage entry");
    if (value_out != nullptr) *value_out = std::move(value);
    if (name_out != nullptr) *name_out = std::move(name);
    return absl::OkStatus();
  }

  // Makes `head` the version of `encoded_key` in the bucket incarnation: the commit conditions of
  // `options` are checked against the current head, the version it replaces is noted for the
  // collector, and one compare-and-swap from exactly what was read makes the change (again on a
  // lost race). With `upload_entry` (its name and exact value) the same operation removes that
  // upload from the index (CompleteMultipartUpload), or fails with kNoSuchUpload when it is gone.
  absl::StatusOr<ObjectInfo> CommitHead(const Uuid& incarnation, const std::string& encoded_key,
                                        const HeadRecord& head, const WriteOptions& options,
                                        const std::pair<std::string, std::string>* upload_entry);

  // Whether a record still names the segment of `intent`: its key's head, or its part record.
  absl::StatusOr<bool> Named(const GcIntent& intent);
  // Settles one kUpload entry (rados_store.cc).
  absl::Status SettleUpload(const std::string& gc_object, const std::string& name,
                            const std::string& value, const GcIntent& intent, int64_t now,
                            RadosGcReport* report);

  // Deletes stripes [0, count) of `uuid`; missing ones are fine.
  absl::Status DeleteStripes(const Uuid& uuid, uint64_t count) {
    absl::Status result;
    std::deque<std::unique_ptr<Completion>> pending;
    auto reap = [&] {
      const int r = pending.front()->Wait();
      if (r < 0 && r != -ENOENT && result.ok()) result = RadosError(r, "stripe removal");
      pending.pop_front();
    };
    for (uint64_t i = 0; i < count; ++i) {
      auto c = std::make_unique<Completion>();
      const int r = rados_aio_remove(io_, rados_format::DataObject(uuid, i).c_str(), c->c);
      if (r < 0) {
        if (result.ok()) result = RadosError(r, "stripe removal");
        continue;
      }
      pending.push_back(std::move(c));
      if (pending.size() >= 16) reap();
    }
    while (!pending.empty()) reap();
    return result;
  }

  using ObjectStore::BeginPut;
  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         const WriteOptions& options) override {
    if (absl::Status s = CheckObjectKey(bucket, key); !s.ok()) return s;
    absl::StatusOr<Uuid> inc = Incarnation(bucket, false);
    if (!inc.ok()) return inc.status();
    auto writer =
        std::make_unique<RadosWriter>(this, *inc, rados_format::EncodeKey(key), size, options);
    if (absl::Status s = writer->Start(); !s.ok()) return s;
    return std::unique_ptr<ObjectWriter>(std::move(writer));
  }

  absl::StatusOr<std::unique_ptr<ObjectReader>> OpenRead(std::string_view bucket,
                                                         std::string_view key) override {
    absl::StatusOr<HeadRecord> head = HeadRecordOf(bucket, key);
    if (!head.ok()) return head.status();
    return std::unique_ptr<ObjectReader>(std::make_unique<RadosReader>(this, *std::move(head)));
  }

  absl::StatusOr<ObjectInfo> Head(std::string_view bucket, std::string_view key) override {
    absl::StatusOr<HeadRecord> head = HeadRecordOf(bucket, key);
    if (!head.ok()) return head.status();
    return std::move(head->info);
  }

  // The key's current head record: kNoSuchBucket, kNoSuchKey.
  absl::StatusOr<HeadRecord> HeadRecordOf(std::string_view bucket, std::string_view key) {
    if (absl::Status s = CheckObjectKey(bucket, key); !s.ok()) return s;
    const std::string ekey = rados_format::EncodeKey(key);
    return OnIndex<HeadRecord>(bucket, [&](const std::string& index) -> absl::StatusOr<HeadRecord> {
      absl::StatusOr<HeadLookup> got = ReadHead(index, ekey);
      if (!got.ok()) return got.status();
      if (!got->found) return MakeError(ErrorCode::kNoSuchKey, "no such key");
      return std::move(got->head);
    });
  }

  absl::Status Delete(std::string_view bucket, std::string_view key) override {
    if (absl::Status s = CheckObjectKey(bucket, key); !s.ok()) return s;
    const std::string ekey = rados_format::EncodeKey(key);
    absl::StatusOr<bool> done =
        OnIndex<bool>(bucket, [&](const std::string& index) -> absl::StatusOr<bool> {
          for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
            absl::StatusOr<HeadLookup> got = ReadHead(index, ekey);
            if (!got.ok()) return got.status();
            if (!got->found) return true;  // S3: deleting a missing key succeeds
            absl::StatusOr<Uuid> inc = Incarnation(bucket, false);
            if (!inc.ok()) return inc.status();
            if (absl::Status s = NoteReplaced(*inc, ekey, got->head); !s.ok()) return s;
            const int r = OmapSwap(index, ekey, got->raw, nullptr, true);
            if (r == 0) return true;
            if (r == -ENOENT) return IndexGone();
            if (r != -ECANCELED) return RadosError(r, "head removal");
          }
          return MakeError(ErrorCode::kStorageError, "delete kept losing races with writers");
        });
    return done.status();
  }

  absl::StatusOr<std::vector<ObjectSummary>> ListObjects(std::string_view bucket,
                                                         std::string_view prefix,
                                                         std::string_view start_after,
                                                         size_t limit) override {
    if (absl::Status s = CheckBucket(bucket); !s.ok()) return s;
    const std::string eprefix = rados_format::EncodeKey(prefix);
    std::string estart = rados_format::EncodeKey(start_after);
    // Upload entries (multipart) sort before every object entry: start past them.
    if (estart < rados_format::kFirstObjectEntry) estart = rados_format::AfterUploadEntries();
    return OnIndex<std::vector<ObjectSummary>>(
        bucket, [&](const std::string& index) -> absl::StatusOr<std::vector<ObjectSummary>> {
          std::vector<ObjectSummary> out;
          if (limit == 0) {
            // Still answers kNoSuchBucket for a bucket that is gone.
            absl::Status error;
            if (!ObjectExists(index, &error)) return error.ok() ? IndexGone() : error;
            return out;
          }
          absl::Status s =
              OmapScan(index, estart, eprefix, limit,
                       [&](std::string_view k, std::string_view v) -> absl::Status {
                         absl::StatusOr<std::string> key = rados_format::DecodeKey(k);
                         if (!key.ok()) return key.status();
                         absl::StatusOr<HeadRecord> head = rados_format::DecodeHead(v);
                         if (!head.ok()) return head.status();
                         out.push_back({*std::move(key), head->info.size,
                                        std::move(head->info.etag), head->info.last_modified_ms});
                         return absl::OkStatus();
                       });
          if (!s.ok()) return s;
          return out;
        });
  }

  // ---- collector ---------------------------------------------------------------------------

  absl::StatusOr<RadosGcReport> CollectGarbage() override;  // rados_store.cc
  // Multipart uploads kept in the cluster (rados_multipart.cc).
  absl::StatusOr<std::unique_ptr<MultipartManager>> OpenMultipart(
      const MultipartLimits& limits) override;

  absl::StatusOr<std::string> SharedSecret(const std::string& name) override {
    if (name.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty secret name");
    for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
      absl::StatusOr<std::optional<std::string>> got = OmapGet(rados_format::kSecretsObject, name);
      if (!got.ok() && !IsIndexGone(got.status())) return got.status();
      if (got.ok() && got->has_value()) {
        if ((*got)->size() != 32) {
          return MakeError(ErrorCode::kStorageError,
                           absl::StrCat("shared secret '", name, "' is not 32 octets"));
        }
        return **got;
      }
      const std::string secret = RandomBytes(32);
      const int r = OmapSwap(rados_format::kSecretsObject, name, "", &secret, false);
      if (r == 0) return secret;
      if (r != -ECANCELED) return RadosError(r, "shared secret");
    }
    return MakeError(ErrorCode::kStorageError, "shared secret kept losing races");
  }

  absl::Status RegisterGateway(const std::string& address) override {
    if (address.empty() || address.size() > 255) {
      return MakeError(ErrorCode::kInvalidArgument, "a gateway address is 1 to 255 octets");
    }
    std::string when;
    LeWriter(&when).U64(static_cast<uint64_t>(NowMs()));
    WriteOp op;
    rados_write_op_create(op.op, LIBRADOS_CREATE_IDEMPOTENT, nullptr);
    const char* keys[] = {address.data()};
    const size_t key_lens[] = {address.size()};
    const char* vals[] = {when.data()};
    const size_t val_lens[] = {when.size()};
    rados_write_op_omap_set2(op.op, keys, vals, key_lens, val_lens, 1);
    const int r = rados_write_op_operate(op.op, io_, rados_format::kGatewaysObject, nullptr, 0);
    return r < 0 ? RadosError(r, "gateway registration") : absl::OkStatus();
  }

  absl::Status DeregisterGateway(const std::string& address) override {
    WriteOp op;
    const char* keys[] = {address.data()};
    const size_t key_lens[] = {address.size()};
    rados_write_op_omap_rm_keys2(op.op, keys, key_lens, 1);
    const int r = rados_write_op_operate(op.op, io_, rados_format::kGatewaysObject, nullptr, 0);
    return r < 0 && r != -ENOENT ? RadosError(r, "gateway deregistration") : absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> Gateways(int64_t max_age_ms) override {
    std::vector<std::string> out;
    const int64_t now = NowMs();
    absl::Status s =
        OmapScan(rados_format::kGatewaysObject, "", "", 1024,
                 [&](std::string_view k, std::string_view v) -> absl::Status {
                   uint64_t when = 0;
                   if (LeReader(v).U64(&when) && now - static_cast<int64_t>(when) <= max_age_ms) {
                     out.emplace_back(k);
                   }
                   return absl::OkStatus();
                 });
    if (!s.ok() && !IsIndexGone(s)) return s;
    return out;
  }

  absl::StatusOr<uint64_t> CountObjects(const std::string& prefix) override {
    rados_list_ctx_t ctx;
    if (int r = rados_nobjects_list_open(io_, &ctx); r < 0) return RadosError(r, "object listing");
    uint64_t n = 0;
    const char* entry = nullptr;
    size_t entry_size = 0;
    while (rados_nobjects_list_next2(ctx, &entry, nullptr, nullptr, &entry_size, nullptr,
                                     nullptr) == 0) {
      if (absl::StartsWith(absl::string_view(entry, entry_size), prefix)) ++n;
    }
    rados_nobjects_list_close(ctx);
    return n;
  }

 private:
  static absl::Status CheckBucket(std::string_view bucket) { return CheckStoreBucket(bucket); }
  static absl::Status CheckObjectKey(std::string_view bucket, std::string_view key) {
    return CheckStoreKey(bucket, key, {.max_key_bytes = rados_format::kMaxKeyBytes});
  }

  void CollectorLoop() {
    absl::MutexLock lock(&mu_);
    while (!stopping_) {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           absl::Milliseconds(options_.gc_interval_ms));
      if (stopping_) break;
      mu_.Unlock();
      (void)CollectGarbage();  // a failed pass leaves its entries for the next one
      mu_.Lock();
    }
  }

  const RadosStoreOptions options_;
  rados_t cluster_;
  rados_ioctx_t io_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Uuid> incarnations_ ABSL_GUARDED_BY(mu_);
  // Who this process's next CreateBucket of a name records as its owner (SetCreator).
  absl::flat_hash_map<std::string, std::string> creators_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread collector_;
};

}  // namespace aobj::rados_internal

#endif  // AOBJ_STORE_RADOS_RADOS_CLUSTER_H_
