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
//
// Listing: each bucket keeps its objects in a std::map ordered by key bytes (std::string compares
// octets as unsigned char, which is S3's UTF-8 byte order), so ListObjects is a lower_bound and
// an ordered walk under the shared lock: O(log n + returned).
//
// Commit conditions (If-None-Match "*", If-Match) are checked under the exclusive lock in the same
// critical section that swaps the map entry, so they are atomic against concurrent writers of the
// key (AOBJ-OBJ-134).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
#include "store/store_rules.h"
#include "wire/status_macros.h"

namespace aobj {
namespace {

// Asks for transparent huge pages over the 2 MiB-aligned interior of a large object buffer: the
// first write into a fresh 64 MiB buffer then takes 32 page faults instead of 16 384 (about 3 us
// each on this VM, docs/benchmarks.md appendix A.10.2). Advice only: where THP is off or the
// kernel refuses, the buffer works as before.
void AdviseHugePages(uint8_t* p, size_t n) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

// Buffers of objects that are gone (overwritten or deleted, and no reader left), kept for the
// next object of exactly the same size, so that a steady stream of same-sized PUTs reuses
// faulted-in memory instead of having the kernel zero fresh pages for each (39 % of the server's
// CPU in a 64 MiB PUT loop before this; docs/benchmarks.md). Only buffers of at least
// kMinBytes; at most MaxHeldBytes() held, the oldest freed first. A recycled buffer still holds
// the bytes of the object it belonged to: a writer overwrites every byte before its Commit
// (Append checks it; DirectBuffer users promise it), and an uncommitted buffer is never read.
// Thread-safe.
class Recycler {
 public:
  static constexpr size_t kMinBytes = 1 << 20;
  // At most 1 GiB and a sixteenth of physical memory: eight writers of 64 MiB objects at once
  // need 512 MiB in flight, and with a 256 MiB bound half of them got fresh pages (8 processes
  // of 64 MiB PUTs: 0.67x one process's throughput, with 1 GiB 1.05x; docs/benchmarks.md).
  static size_t MaxHeldBytes() {
    static const size_t bound = [] {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
      const size_t physical = pages > 0 && page > 0 ? static_cast<size_t>(pages) *
                                                         static_cast<size_t>(page)
                                                   : size_t{0};
      return std::max<size_t>(kMinBytes, std::min<size_t>(size_t{1} << 30, physical / 16));
    }();
    return bound;
  }

  ~Recycler() {
    for (auto& [size, p] : free_) Unmap(p, size);
  }

  // A recycled buffer of exactly `size` octets, or a new one (null when out of memory). Buffers
  // of kMinBytes and more are mappings of their own (never glibc's heap, so the huge-page advice
  // stays with them and freeing one returns it to the system); smaller ones come from new[].
  uint8_t* Take(size_t size) {
    if (size < kMinBytes) return new (std::nothrow) uint8_t[size];
    {
      absl::MutexLock lock(&mu_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->first == size) {
          uint8_t* p = it->second;
          held_ -= size;
          free_.erase(it);
          return p;
        }
      }
    }
    uint8_t* p = Map(size);
    if (p == nullptr) {
      // Out of memory while holding buffers of other sizes: give those back and try once more.
      Purge();
      p = Map(size);
    }
    return p;
  }

  void Give(uint8_t* p, size_t size) {
    if (size < kMinBytes) {
      delete[] p;
      return;
    }
    if (size > MaxHeldBytes()) {
      Unmap(p, size);
      return;
    }
    absl::MutexLock lock(&mu_);
    try {
      free_.emplace_back(size, p);
    } catch (const std::bad_alloc&) {
      Unmap(p, size);  // a deleter must not throw: keep nothing rather than fail
      return;
    }
    held_ += size;
    while (held_ > MaxHeldBytes()) {
      held_ -= free_.front().first;
      Unmap(free_.front().second, free_.front().first);
      free_.pop_front();
    }
  }

 private:
  static uint8_t* Map(size_t size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    AdviseHugePages(static_cast<uint8_t*>(p), size);
    return static_cast<uint8_t*>(p);
  }
  static void Unmap(uint8_t* p, size_t size) { munmap(p, size); }
  void Purge() {
    absl::MutexLock lock(&mu_);
    for (auto& [size, p] : free_) Unmap(p, size);
    free_.clear();
    held_ = 0;
  }

  absl::Mutex mu_;
  std::deque<std::pair<size_t, uint8_t*>> free_ ABSL_GUARDED_BY(mu_);  // oldest first
  size_t held_ ABSL_GUARDED_BY(mu_) = 0;
};

// Returns an object buffer, which always comes from Recycler::Take, to its Recycler.
struct BufferDeleter {
  std::shared_ptr<Recycler> recycler;
  size_t size = 0;
  void operator()(uint8_t* p) const { recycler->Give(p, size); }
};
using Buffer = std::unique_ptr<uint8_t[], BufferDeleter>;

// One committed, immutable object version.
struct Object {
  ObjectInfo info;
  Buffer data;  // info.size bytes; non-null even for size 0
};

// `objects` is guarded by MemoryState::mu (a member of another object, so not annotated).
struct Bucket {
  // Ordered by key octets (AOBJ-OBJ-100); std::less<> allows lookups by string_view.
  std::map<std::string, std::shared_ptr<const Object>, std::less<>> objects;
  int64_t creation_time_ms = 0;
};

// absl::string_view is its own type in some absl builds (Debian's), not std::string_view.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Store state shared by the store and its writers. Thread-safe.
class MemoryState {
 public:
  const std::shared_ptr<Recycler> recycler = std::make_shared<Recycler>();
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<Bucket>> buckets ABSL_GUARDED_BY(mu);

  // The bucket record, or null.
  std::shared_ptr<Bucket> FindBucket(std::string_view name) ABSL_SHARED_LOCKS_REQUIRED(mu) {
    auto it = buckets.find(AbslView(name));
    return it == buckets.end() ? nullptr : it->second;
  }
};

absl::Status CheckBucketName(std::string_view bucket) { return CheckStoreBucket(bucket); }
absl::Status CheckKey(std::string_view bucket, std::string_view key) {
  return CheckStoreKey(bucket, key);
}

// Writes one object into a private buffer. Used by one thread at a time.
class MemoryWriter final : public ObjectWriter {
 public:
  MemoryWriter(std::shared_ptr<MemoryState> state, std::shared_ptr<Bucket> bucket,
               std::string bucket_name, std::string key, uint64_t size, WriteOptions options,
               Buffer buffer)
      : state_(std::move(state)),
        bucket_(std::move(bucket)),
        bucket_name_(std::move(bucket_name)),
        key_(std::move(key)),
        size_(size),
        options_(std::move(options)),
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
    AOBJ_RETURN_IF_ERROR(
        CheckWriteComplete(direct_used_ ? size_ : offset_, size_, info.size, "object"));
    auto object = std::make_shared<Object>();
    object->info.size = size_;
    object->info.etag = info.etag;
    object->info.crc32c = info.crc32c;
    object->info.content_type = options_.content_type;
    object->info.user_metadata = options_.user_metadata;
    object->data = std::move(buffer_);
    std::shared_ptr<const Object> previous;  // freed after the lock, off the critical path
    ObjectInfo stored;
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->FindBucket(bucket_name_) != bucket_) {
        // Deleted (and maybe re-created) while we were writing.
        buffer_ = std::move(object->data);
        return NoSuchBucket();
      }
      auto it = bucket_->objects.find(key_);
      const Object* current = it == bucket_->objects.end() ? nullptr : it->second.get();
      // AOBJ-OBJ-134: the conditions and the swap are one critical section.
      if (absl::Status s = CheckCommitConditions(options_, current ? &current->info.etag : nullptr);
          !s.ok()) {
        // AOBJ-OBJ-135: the key keeps its object; the writer is left as it was.
        buffer_ = std::move(object->data);
        return s;
      }
      // Taken under the lock, so that commits of one key carry increasing times (AOBJ-OBJ-007).
      object->info.last_modified_ms = absl::ToUnixMillis(absl::Now());
      stored = object->info;
      if (it == bucket_->objects.end()) {
        bucket_->objects.emplace(key_, std::move(object));
      } else {
        previous = std::move(it->second);
        it->second = std::move(object);
      }
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
  const WriteOptions options_;
  Buffer buffer_;  // size_ bytes until Commit moves it
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

  bool AnswersFromMemory() const override { return true; }

  absl::Status CreateBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->mu);
    auto [it, inserted] = state_->buckets.try_emplace(std::string(bucket), nullptr);
    if (!inserted) {  // AOBJ-OBJ-006
      return MakeError(ErrorCode::kBucketAlreadyExists, "bucket already exists");
    }
    it->second = std::make_shared<Bucket>();
    it->second->creation_time_ms = absl::ToUnixMillis(absl::Now());
    return absl::OkStatus();
  }

  absl::Status DeleteBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->mu);
    auto it = state_->buckets.find(AbslView(bucket));
    if (it == state_->buckets.end()) return NoSuchBucket();
    if (!it->second->objects.empty()) {  // AOBJ-OBJ-006
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

  using ObjectStore::BeginPut;
  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         const WriteOptions& options) override {
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
    const auto n = static_cast<size_t>(size);
    Buffer buffer(state_->recycler->Take(n), BufferDeleter{state_->recycler, n});
    if (buffer == nullptr) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat("cannot allocate ", size, " bytes for the object"));
    }
    return std::make_unique<MemoryWriter>(state_, std::move(record), std::string(bucket),
                                          std::string(key), size, options, std::move(buffer));
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
    auto it = record->objects.find(key);
    if (it != record->objects.end()) {
      doomed = std::move(it->second);
      record->objects.erase(it);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<ObjectSummary>> ListObjects(std::string_view bucket,
                                                         std::string_view prefix,
                                                         std::string_view start_after,
                                                         size_t limit) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->mu);
    std::shared_ptr<Bucket> record = state_->FindBucket(bucket);
    if (record == nullptr) return NoSuchBucket();
    return ListFromMap(record->objects, prefix, start_after, limit,
                       [](const std::string& key, const auto& object) {
                         const ObjectInfo& info = object->info;
                         return ObjectSummary{key, info.size, info.etag, info.last_modified_ms};
                       });
  }

  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    std::vector<BucketSummary> out;
    {
      absl::ReaderMutexLock lock(&state_->mu);
      out.reserve(state_->buckets.size());
      for (const auto& [name, record] : state_->buckets) {
        out.push_back({name, record->creation_time_ms});
      }
    }
    std::sort(out.begin(), out.end(),
              [](const BucketSummary& a, const BucketSummary& b) { return a.name < b.name; });
    return out;
  }

 private:
  absl::StatusOr<std::shared_ptr<const Object>> Find(std::string_view bucket,
                                                     std::string_view key) {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->mu);
    std::shared_ptr<Bucket> record = state_->FindBucket(bucket);
    if (record == nullptr) return NoSuchBucket();
    auto it = record->objects.find(key);
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
