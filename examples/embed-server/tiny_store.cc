#include "tiny_store.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "aobj/status.h"

namespace {

using aobj::ErrorCode;
using aobj::MakeError;

struct Object {
  aobj::ObjectInfo info;
  std::vector<uint8_t> bytes;
};
using ObjectPtr = std::shared_ptr<const Object>;

struct Bucket {
  int64_t created_ms = 0;
  std::map<std::string, ObjectPtr> objects;  // std::string compares bytes as unsigned char
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class TinyStore;

class TinyWriter final : public aobj::ObjectWriter {
 public:
  TinyWriter(TinyStore* store, std::string bucket, std::string key, uint64_t size,
             aobj::WriteOptions options)
      : store_(store), bucket_(std::move(bucket)), key_(std::move(key)), size_(size),
        options_(std::move(options)) {
    bytes_.reserve(size);
  }
  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (bytes_.size() + data.size() > size_) {
      return MakeError(ErrorCode::kInvalidArgument, "more bytes than announced");
    }
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return absl::OkStatus();
  }
  absl::StatusOr<aobj::ObjectInfo> Commit(const aobj::ObjectInfo& info) override;

 private:
  TinyStore* store_;  // outlives the writer
  std::string bucket_, key_;
  uint64_t size_;
  aobj::WriteOptions options_;
  std::vector<uint8_t> bytes_;
};

class TinyReader final : public aobj::ObjectReader {
 public:
  explicit TinyReader(ObjectPtr object) : object_(std::move(object)) {}
  const aobj::ObjectInfo& info() const override { return object_->info; }
  absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
    if (offset >= object_->bytes.size()) return 0;
    const size_t n = std::min<uint64_t>(out.size(), object_->bytes.size() - offset);
    std::copy_n(object_->bytes.begin() + offset, n, out.begin());
    return n;
  }

 private:
  ObjectPtr object_;  // a snapshot: overwrites do not affect an open reader
};

class TinyStore final : public aobj::ObjectStore {
 public:
  absl::Status CreateBucket(std::string_view bucket) override {
    std::lock_guard l(mu_);
    if (buckets_.count(std::string(bucket))) {
      return MakeError(ErrorCode::kBucketAlreadyExists, "bucket exists");
    }
    buckets_[std::string(bucket)].created_ms = NowMs();
    return absl::OkStatus();
  }
  absl::Status DeleteBucket(std::string_view bucket) override {
    std::lock_guard l(mu_);
    auto it = buckets_.find(std::string(bucket));
    if (it == buckets_.end()) return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    if (!it->second.objects.empty()) {
      return MakeError(ErrorCode::kBucketNotEmpty, "bucket not empty");
    }
    buckets_.erase(it);
    return absl::OkStatus();
  }
  absl::Status HeadBucket(std::string_view bucket) override {
    std::lock_guard l(mu_);
    if (!buckets_.count(std::string(bucket))) {
      return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<aobj::ObjectWriter>> BeginPut(
      std::string_view bucket, std::string_view key, uint64_t size,
      const aobj::WriteOptions& options) override {
    if (absl::Status s = HeadBucket(bucket); !s.ok()) return s;
    return std::unique_ptr<aobj::ObjectWriter>(
        new TinyWriter(this, std::string(bucket), std::string(key), size, options));
  }
  absl::StatusOr<std::unique_ptr<aobj::ObjectReader>> OpenRead(std::string_view bucket,
                                                               std::string_view key) override {
    auto o = Find(bucket, key);
    if (!o.ok()) return o.status();
    return std::unique_ptr<aobj::ObjectReader>(new TinyReader(*o));
  }
  absl::StatusOr<aobj::ObjectInfo> Head(std::string_view bucket, std::string_view key) override {
    auto o = Find(bucket, key);
    if (!o.ok()) return o.status();
    return (*o)->info;
  }
  absl::Status Delete(std::string_view bucket, std::string_view key) override {
    std::lock_guard l(mu_);
    auto it = buckets_.find(std::string(bucket));
    if (it == buckets_.end()) return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    it->second.objects.erase(std::string(key));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<aobj::ObjectSummary>> ListObjects(std::string_view bucket,
                                                               std::string_view prefix,
                                                               std::string_view start_after,
                                                               size_t limit) override {
    std::lock_guard l(mu_);
    auto it = buckets_.find(std::string(bucket));
    if (it == buckets_.end()) return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    std::vector<aobj::ObjectSummary> out;
    for (auto o = it->second.objects.upper_bound(std::string(start_after));
         o != it->second.objects.end() && out.size() < limit; ++o) {
      if (o->first.compare(0, prefix.size(), prefix) != 0) continue;
      out.push_back({o->first, o->second->info.size, o->second->info.etag,
                     o->second->info.last_modified_ms});
    }
    return out;
  }
  absl::StatusOr<std::vector<aobj::BucketSummary>> ListBuckets() override {
    std::lock_guard l(mu_);
    std::vector<aobj::BucketSummary> out;
    for (const auto& [name, b] : buckets_) out.push_back({name, b.created_ms});
    return out;
  }

  // Makes `object` visible if the commit conditions of `options` hold (AOBJ-OBJ-134), under
  // the same lock as the check.
  absl::StatusOr<aobj::ObjectInfo> Publish(const std::string& bucket, const std::string& key,
                                           const aobj::WriteOptions& options,
                                           std::shared_ptr<Object> object) {
    std::lock_guard l(mu_);
    auto it = buckets_.find(bucket);
    if (it == buckets_.end()) return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    auto cur = it->second.objects.find(key);
    const bool exists = cur != it->second.objects.end();
    if (options.if_none_match_star && exists) {
      return MakeError(ErrorCode::kPreconditionFailed, "the key holds an object");
    }
    if (!options.if_match_etag.empty()) {
      if (!exists) return MakeError(ErrorCode::kNoSuchKey, "no such key");
      if (options.if_match_etag != "*" && options.if_match_etag != cur->second->info.etag) {
        return MakeError(ErrorCode::kPreconditionFailed, "ETag differs");
      }
    }
    object->info.last_modified_ms = NowMs();
    it->second.objects[key] = object;
    return object->info;
  }

 private:
  absl::StatusOr<ObjectPtr> Find(std::string_view bucket, std::string_view key) {
    std::lock_guard l(mu_);
    auto it = buckets_.find(std::string(bucket));
    if (it == buckets_.end()) return MakeError(ErrorCode::kNoSuchBucket, "no such bucket");
    auto o = it->second.objects.find(std::string(key));
    if (o == it->second.objects.end()) return MakeError(ErrorCode::kNoSuchKey, "no such key");
    return o->second;
  }

  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;  // guarded by mu_
};

absl::StatusOr<aobj::ObjectInfo> TinyWriter::Commit(const aobj::ObjectInfo& info) {
  if (bytes_.size() != size_ || info.size != size_) {
    return MakeError(ErrorCode::kInvalidArgument, "fewer bytes than announced");
  }
  auto object = std::make_shared<Object>();
  object->info = info;
  object->info.content_type = options_.content_type;
  object->info.user_metadata = options_.user_metadata;
  object->bytes = std::move(bytes_);
  return store_->Publish(bucket_, key_, options_, std::move(object));
}

}  // namespace

std::unique_ptr<aobj::ObjectStore> NewTinyStore() { return std::make_unique<TinyStore>(); }
