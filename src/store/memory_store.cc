// MemoryStore: the in-process ObjectStore (include/aobj/store.h).
//
// Consistency model: a committed object is an immutable Object snapshot held by
// std::shared_ptr<const Object>. The bucket maps are guarded by one mutex; a reader copies the
// shared_ptr out under the lock and then reads without it, so a later overwrite or delete only
// swaps the map entry and never touches bytes a reader holds (AOBJ-OBJ-010). A writer fills a
// private buffer of exactly `size` bytes and Commit() moves it into a fresh snapshot.
//
// Bucket identity: each bucket is a shared Bucket record. A writer remembers the record it began
// in, so a writer whose bucket was deleted (and perhaps re-created) meanwhile fails to commit
// with kNoSuchBucket instead of landing in a bucket it never saw.
//
// Lifetime: the state lives in a shared_ptr owned by the store and by every writer, so writers
// and readers may outlive the store object.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "aobj/status.h"
#include "aobj/store.h"

namespace aobj {
namespace {

// One committed, immutable object version.
struct Object {
  ObjectInfo info;
  std::unique_ptr<uint8_t[]> data;  // info.size bytes; non-null even for size 0
};

// `objects` is guarded by MemoryState::mu (a member of another object, so not annotated).
struct Bucket {
  absl::flat_hash_map<std::string, std::shared_ptr<const Object>> objects;
};

// absl::string_view is its own type in some absl builds (Debian's), not std::string_view.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Store state shared by the store and its writers. Thread-safe.
class MemoryState {
 public:
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<Bucket>> buckets ABSL_GUARDED_BY(mu);

  // The bucket record, or null.
  std::shared_ptr<Bucket> FindBucket(std::string_view name) ABSL_SHARED_LOCKS_REQUIRED(mu) {
    auto it = buckets.find(AbslView(name));
    return it == buckets.end() ? nullptr : it->second;
  }
};

// Defence in depth: the server validates bucket names to S3 rules before they reach a store.
absl::Status CheckBucketName(std::string_view bucket) {
  if (bucket.empty() || bucket == "." || bucket == ".." ||
      bucket.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "invalid bucket name");
  }
  return absl::OkStatus();
}

// An empty key cannot name an S3 object.
absl::Status CheckKey(std::string_view bucket, std::string_view key) {
  if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
  if (key.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty object key");
  return absl::OkStatus();
}

absl::Status NoSuchBucket() { return MakeError(ErrorCode::kNoSuchBucket, "no such bucket"); }

// Writes one object into a private buffer. Used by one thread at a time.
class MemoryWriter final : public ObjectWriter {
 public:
  MemoryWriter(std::shared_ptr<MemoryState> state, std::shared_ptr<Bucket> bucket,
               std::string bucket_name, std::string key, uint64_t size, std::string content_type,
               std::unique_ptr<uint8_t[]> buffer)
      : state_(std::move(state)),
        bucket_(std::move(bucket)),
        bucket_name_(std::move(bucket_name)),
        key_(std::move(key)),
        size_(size),
        content_type_(std::move(content_type)),
        buffer_(std::move(buffer)) {}
  MemoryWriter(const MemoryWriter&) = delete;
  MemoryWriter& operator=(const MemoryWriter&) = delete;

  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (committed_) {
      return MakeError(ErrorCode::kInvalidArgument, "Append after Commit");
    }
    if (data.size() > size_ - offset_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("append of ", data.size(), " bytes at offset ", offset_,
                                    " exceeds the object size ", size_));
    }
    if (!data.empty()) std::memcpy(buffer_.get() + offset_, data.data(), data.size());
    offset_ += data.size();
    return absl::OkStatus();
  }

  absl::Span<uint8_t> DirectBuffer() override {
    if (committed_) return {};
    direct_used_ = true;
    return absl::Span<uint8_t>(buffer_.get(), static_cast<size_t>(size_));
  }

  absl::StatusOr<ObjectInfo> Commit(const ObjectInfo& info) override {
    if (committed_) {
      return MakeError(ErrorCode::kInvalidArgument, "Commit called twice");
    }
    // With DirectBuffer the caller promised to fill the whole buffer; we cannot tell.
    if (!direct_used_ && offset_ != size_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("only ", offset_, " of ", size_, " bytes were written"));
    }
    if (info.size != size_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("commit size ", info.size, " differs from the size ", size_,
                                    " given to BeginPut"));
    }
    auto object = std::make_shared<Object>();
    object->info.size = size_;
    object->info.etag = info.etag;
    object->info.crc32c = info.crc32c;
    object->info.content_type = content_type_;
    object->info.last_modified_ms = absl::ToUnixMillis(absl::Now());
    object->data = std::move(buffer_);
    ObjectInfo stored = object->info;
    std::shared_ptr<const Object> previous;  // freed after the lock, off the critical path
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->FindBucket(bucket_name_) != bucket_) {
        // Deleted (and maybe re-created) while we were writing.
        buffer_ = std::move(object->data);
        return NoSuchBucket();
      }
      std::shared_ptr<const Object>& slot = bucket_->objects[key_];
      previous = std::move(slot);
      slot = std::move(object);
    }
    committed_ = true;
    return stored;
  }

 private:
  const std::shared_ptr<MemoryState> state_;
  const std::shared_ptr<Bucket> bucket_;  // guarded by state_->mu once shared
  const std::string bucket_name_;
  const std::string key_;
  const uint64_t size_;
  const std::string content_type_;
  std::unique_ptr<uint8_t[]> buffer_;  // size_ bytes until Commit moves it
  uint64_t offset_ = 0;
  bool direct_used_ = false;
  bool committed_ = false;
};

// Reads one snapshot; holding the shared_ptr keeps the bytes alive. One thread at a time.
class MemoryReader final : public ObjectReader {
 public:
  explicit MemoryReader(std::shared_ptr<const Object> object) : object_(std::move(object)) {}
  MemoryReader(const MemoryReader&) = delete;
  MemoryReader& operator=(const MemoryReader&) = delete;

  const ObjectInfo& info() const override { return object_->info; }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
    const uint64_t size = object_->info.size;
    if (offset >= size) return 0;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
    std::memcpy(out.data(), object_->data.get() + offset, n);
    return n;
  }

  absl::Span<const uint8_t> ContiguousView() const override {
    return absl::Span<const uint8_t>(object_->data.get(), static_cast<size_t>(object_->info.size));
  }

 private:
  const std::shared_ptr<const Object> object_;
};

class MemoryStore final : public ObjectStore {
 public:
  MemoryStore() : state_(std::make_shared<MemoryState>()) {}
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  absl::Status CreateBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->mu);
    auto [it, inserted] = state_->buckets.try_emplace(std::string(bucket), nullptr);
    if (!inserted) {
      return MakeError(ErrorCode::kBucketAlreadyExists, "bucket already exists");
    }
    it->second = std::make_shared<Bucket>();
    return absl::OkStatus();
  }

  absl::Status DeleteBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->mu);
    auto it = state_->buckets.find(AbslView(bucket));
    if (it == state_->buckets.end()) return NoSuchBucket();
    if (!it->second->objects.empty()) {
      return MakeError(ErrorCode::kBucketNotEmpty, "bucket is not empty");
    }
    state_->buckets.erase(it);
    return absl::OkStatus();
  }

  absl::Status HeadBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->mu);
    if (state_->FindBucket(bucket) == nullptr) return NoSuchBucket();
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         std::string_view content_type) override {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    std::shared_ptr<Bucket> record;
    {
      absl::MutexLock lock(&state_->mu);
      record = state_->FindBucket(bucket);
    }
    if (record == nullptr) return NoSuchBucket();
    if (size > std::numeric_limits<size_t>::max()) {
      return MakeError(ErrorCode::kStorageError, "object too large for memory");
    }
    // Not zero-filled: every byte is overwritten by Append or by the DirectBuffer user.
    // nothrow, so that a huge size is an error rather than an exception.
    std::unique_ptr<uint8_t[]> buffer(new (std::nothrow) uint8_t[static_cast<size_t>(size)]);
    if (buffer == nullptr) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat("cannot allocate ", size, " bytes for the object"));
    }
    return std::make_unique<MemoryWriter>(state_, std::move(record), std::string(bucket),
                                          std::string(key), size, std::string(content_type),
                                          std::move(buffer));
  }

  absl::StatusOr<std::unique_ptr<ObjectReader>> OpenRead(std::string_view bucket,
                                                         std::string_view key) override {
    absl::StatusOr<std::shared_ptr<const Object>> object = Find(bucket, key);
    if (!object.ok()) return object.status();
    return std::make_unique<MemoryReader>(*std::move(object));
  }

  absl::StatusOr<ObjectInfo> Head(std::string_view bucket, std::string_view key) override {
    absl::StatusOr<std::shared_ptr<const Object>> object = Find(bucket, key);
    if (!object.ok()) return object.status();
    return (*object)->info;
  }

  absl::Status Delete(std::string_view bucket, std::string_view key) override {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    std::shared_ptr<const Object> doomed;  // released after the lock, off the critical path
    absl::MutexLock lock(&state_->mu);
    std::shared_ptr<Bucket> record = state_->FindBucket(bucket);
    if (record == nullptr) return NoSuchBucket();
    auto it = record->objects.find(AbslView(key));
    if (it != record->objects.end()) {
      doomed = std::move(it->second);
      record->objects.erase(it);
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::shared_ptr<const Object>> Find(std::string_view bucket,
                                                     std::string_view key) {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->mu);
    std::shared_ptr<Bucket> record = state_->FindBucket(bucket);
    if (record == nullptr) return NoSuchBucket();
    auto it = record->objects.find(AbslView(key));
    if (it == record->objects.end()) {
      return MakeError(ErrorCode::kNoSuchKey, "no such key");
    }
    return it->second;
  }

  const std::shared_ptr<MemoryState> state_;
};

}  // namespace

std::unique_ptr<ObjectStore> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace aobj
