// FileStore: the directory-backed ObjectStore (include/aobj/store.h).
//
// On-disk layout under the root directory:
//
//   <root>/LOCK                   flock()ed while a store has the root open (one store per root)
//   <root>/.<anything>            not the store's: names starting with '.' are never buckets
//   <root>/<bucket>/              one directory per bucket (names are never "", ".", ".." and
//                                 hold no '/')
//   <root>/<bucket>/o/<name>      one file per object; <name> = lower-case hex SHA-256 of the
//                                 key, because keys (up to 1024 bytes, any characters) cannot be
//                                 file names
//   <root>/<bucket>/tmp/<rand>.tmp  objects being written; removed on abort and at open
//
// The format of an object file (header, then content) is in object_file.h.
//
// Listing index: file names are hashes, so the directory cannot answer "keys after X in order".
// The store keeps, per bucket, an in-memory std::map from key to (size, etag, last_modified),
// ordered by key octets (AOBJ-OBJ-100). It is built at open by reading the header of every object
// file (one open + two preads per object: opening a store of N objects costs O(N) I/O and about
// 100 bytes + key length of memory per object) and kept current by Commit and Delete under
// index_mu, in the same critical section as the rename/unlink, so a listing never disagrees with
// the directory. Files whose header does not decode at open are left out of the index (reading
// them by key still answers kStorageError). ListObjects is O(log n + returned) under a shared
// lock. A store that outgrows memory would keep this index on disk (an LSM or B-tree).
//
// Commit conditions (If-None-Match "*", If-Match) are checked against the index under index_mu
// immediately before the rename, so a conditional commit is atomic against every other commit
// and delete of the store (AOBJ-OBJ-134). last_modified_ms is taken when Commit starts, before
// the header is written and fsync'ed, so two racing commits of one key may record times in the
// opposite order of their renames.
//
// PUT: create tmp/<rand>.tmp, write content, write header, fsync, rename() over o/<name>, fsync
// o/ (AOBJ-OBJ-011). rename() is atomic and a reader holds an open descriptor, so a reader keeps
// the version it opened (POSIX keeps unlinked files alive while open) (AOBJ-OBJ-010).
//
// Concurrency: the filesystem is the state. One reader/writer mutex orders bucket lifetime
// against object operations: CreateBucket/DeleteBucket hold it exclusively; BeginPut's temp-file
// creation, Commit's rename and Delete hold it shared. Other processes must not use the root
// meanwhile (the LOCK file refuses a second store).
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "store/object_file.h"
#include "store/posix_util.h"
#include "store/store_rules.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/status_macros.h"

namespace aobj {
namespace {

using object_file::Corrupt;
using object_file::DecodeHeader;
using object_file::DecodePreamble;
using object_file::EncodeHeader;
using object_file::Header;
using object_file::HeaderLength;
using object_file::IsCorrupt;
using object_file::kEtagCapacity;
using object_file::kMaxContentTypeBytes;
using object_file::kMaxKeyBytes;
using object_file::kMaxMetadataBytes;
using object_file::kMaxMetadataPairs;
using object_file::kPreambleBytes;
using object_file::MetadataBlockBytes;

constexpr mode_t kDirMode = 0700;
constexpr mode_t kFileMode = 0600;

// absl::string_view is its own type in some absl builds (Debian's), not std::string_view.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// POSIX helpers: store/posix_util.h.

absl::Status MakeDir(const std::string& path, bool exist_ok) {
  if (::mkdir(path.c_str(), kDirMode) == 0) return absl::OkStatus();
  if (exist_ok && errno == EEXIST) {
    absl::StatusOr<bool> is_dir = IsDir(path);
    if (!is_dir.ok()) return is_dir.status();
    if (*is_dir) return absl::OkStatus();
    return MakeError(ErrorCode::kStorageError,
                     absl::StrCat(path, " exists and is not a directory"));
  }
  return IoError("mkdir", path, errno);
}

// mkdir -p.
absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    if (absl::Status s = MakeDir(path.substr(0, pos), true); !s.ok()) return s;
  }
  return MakeDir(path, true);
}

absl::Status RemoveAllFilesIn(const std::string& dir) {
  std::vector<std::string> names;
  if (absl::Status s = ListDir(dir, &names); !s.ok()) return s;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir, "/", name);
    // unlink() removes a link itself, never what it points to; a directory is no object
    // being written and is reported, not descended into (issue 16).
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      if (errno == EISDIR || errno == EPERM) {
        return MakeError(ErrorCode::kStorageError,
                         absl::StrCat(path, " is a directory where the store keeps only files of "
                                            "writes in progress; remove it"));
      }
      return IoError("unlink", path, errno);
    }
  }
  return absl::OkStatus();
}

// Reads and validates the header of the object file open at `fd`, including that the file's
// size is header_len + content size.
absl::StatusOr<Header> ReadHeader(int fd, const std::string& path) {
  std::string bytes(kPreambleBytes, '\0');
  absl::StatusOr<size_t> got =
      PreadFull(fd, reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), 0, path);
  if (!got.ok()) return got.status();
  bytes.resize(*got);
  absl::StatusOr<uint32_t> header_len = DecodePreamble(bytes, path);
  if (!header_len.ok()) return header_len.status();
  bytes.resize(*header_len);
  got = PreadFull(fd, reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), 0, path);
  if (!got.ok()) return got.status();
  bytes.resize(*got);
  absl::StatusOr<Header> header = DecodeHeader(bytes, path);
  if (!header.ok()) return header.status();
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError("fstat", path, errno);
  const uint64_t expected = header->header_len + header->info.size;
  if (header->info.size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) ||
      static_cast<uint64_t>(st.st_size) != expected) {
    return Corrupt(path,
                   absl::StrCat("file has ", st.st_size, " bytes, header says ", header->info.size,
                                " of content after ", header->header_len, " of header"));
  }
  return header;
}

// ---- store ---------------------------------------------------------------------------------

// Names starting with '.' are never buckets here: they are left to things kept beside the
// buckets in the root (the server's multipart area, <root>/.multipart), which Recover and
// ListBuckets must not mistake for buckets.
constexpr StoreNameRules kNames{.reserve_dot_names = true, .max_key_bytes = kMaxKeyBytes};
absl::Status CheckBucketName(std::string_view bucket) { return CheckStoreBucket(bucket, kNames); }
absl::Status CheckKey(std::string_view bucket, std::string_view key) {
  return CheckStoreKey(bucket, key, kNames);
}

// The listing index of one bucket: key -> what a listing reports, ordered by key octets.
struct IndexEntry {
  uint64_t size = 0;
  std::string etag;
  int64_t last_modified_ms = 0;
};
struct BucketIndex {
  int64_t creation_time_ms = 0;
  std::map<std::string, IndexEntry, std::less<>> objects;
};

// Shared by the store and its writers, so writers may outlive the store object.
struct FileStoreState {
  std::string root;
  ScopedFd lock_fd;  // holds the flock on <root>/LOCK
  // Orders bucket creation/deletion (exclusive) against the object operations that need the
  // bucket directory to stay (shared). Guards the directory tree, not a member.
  // Lock order: bucket_mu, then index_mu.
  absl::Mutex bucket_mu;
  // Guards `index`, and is held across every rename into o/ and unlink from o/ so that the index
  // and the directory change together.
  absl::Mutex index_mu ABSL_ACQUIRED_AFTER(bucket_mu);
  // Bucket name -> its index; a bucket is listed here exactly when its directory exists.
  std::map<std::string, BucketIndex, std::less<>> index ABSL_GUARDED_BY(index_mu);

  BucketIndex* FindIndex(std::string_view bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(index_mu) {
    auto it = index.find(bucket);
    return it == index.end() ? nullptr : &it->second;
  }

  std::string BucketDir(std::string_view bucket) const {
    return absl::StrCat(root, "/", AbslView(bucket));
  }
  std::string ObjectDir(std::string_view bucket) const {
    return absl::StrCat(root, "/", AbslView(bucket), "/o");
  }
  std::string TmpDir(std::string_view bucket) const {
    return absl::StrCat(root, "/", AbslView(bucket), "/tmp");
  }
  std::string ObjectPath(std::string_view bucket, std::string_view key) const {
    return absl::StrCat(root, "/", AbslView(bucket), "/o/", HexEncode(Sha256(AbslView(key))));
  }

  // The bucket's directories are what start-up checked them to be, not links planted since
  // (eleventh hostile probe N2: objects were then read, and PUTs' files written, outside the
  // root). A link swapped in between this check and the open is not caught: whoever can write
  // in the root while the server runs and win that race still can.
  absl::Status CheckBucketDirs(std::string_view bucket) const {
    for (const std::string& d : {BucketDir(bucket), ObjectDir(bucket), TmpDir(bucket)}) {
      if (absl::Status s = CheckNoLink(d); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
};

// Writes one object into a temp file. Used by one thread at a time.
class FileWriter final : public ObjectWriter {
 public:
  FileWriter(std::shared_ptr<FileStoreState> state, std::string bucket, std::string key,
             uint64_t size, WriteOptions options, uint32_t header_len, ScopedFd fd,
             std::string tmp_path)
      : state_(std::move(state)),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        size_(size),
        options_(std::move(options)),
        header_len_(header_len),
        fd_(std::move(fd)),
        tmp_path_(std::move(tmp_path)) {}
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  ~FileWriter() override {
    if (!renamed_) {  // AOBJ-OBJ-014: a failed PUT never touches o/, the old object stays
      fd_.Reset();
      ::unlink(tmp_path_.c_str());  // ENOENT when DeleteBucket already removed it
    }
  }

  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (absl::Status s = CheckUsable(); !s.ok()) return s;
    if (data.size() > size_ - written_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("append of ", data.size(), " bytes at offset ", written_,
                                    " exceeds the object size ", size_));
    }
    absl::Status s =
        PwriteAll(fd_.get(), data.data(), data.size(), header_len_ + written_, tmp_path_);
    if (!s.ok()) {
      failed_ = true;
      return s;
    }
    written_ += data.size();
    return absl::OkStatus();
  }

  absl::StatusOr<ObjectInfo> Commit(const ObjectInfo& info) override {
    absl::StatusOr<ObjectInfo> stored = Prepare(info, /*start_writeback=*/false);
    if (!stored.ok()) return stored.status();
    if (absl::Status s = Persist(); !s.ok()) return s;
    if (absl::Status s = Publish(*stored); !s.ok()) return s;
    // The object is visible now; without this fsync its name may not survive a crash.
    if (absl::Status s = FsyncDir(state_->ObjectDir(bucket_)); !s.ok()) return s;
    return stored;
  }

  // Commit in three steps, so that a group can share the expensive ones (CommitBatch). Prepare
  // checks the writer and writes the header, and with `start_writeback` starts the temp file's
  // write-back (so that a group's fsyncs find their data on its way); it returns what will be
  // stored.
  absl::StatusOr<ObjectInfo> Prepare(const ObjectInfo& info, bool start_writeback) {
    if (absl::Status s = CheckUsable(); !s.ok()) return s;
    AOBJ_RETURN_IF_ERROR(CheckWriteComplete(written_, size_, info.size, "object"));
    if (info.etag.size() > kEtagCapacity) {
      return MakeError(ErrorCode::kInvalidArgument, "etag too long");
    }
    failed_ = true;  // any early return from here to Publish leaves the writer unusable
    ObjectInfo stored;
    stored.size = size_;
    stored.etag = info.etag;
    stored.crc32c = info.crc32c;
    stored.content_type = options_.content_type;
    stored.user_metadata = options_.user_metadata;
    stored.last_modified_ms = absl::ToUnixMillis(absl::Now());  // AOBJ-OBJ-007: commit time
    const std::string header = EncodeHeader(header_len_, key_, stored);
    if (absl::Status s = PwriteAll(fd_.get(), reinterpret_cast<const uint8_t*>(header.data()),
                                   header.size(), 0, tmp_path_);
        !s.ok()) {
      return s;
    }
    // Only a hint: Persist's fsync is what makes the file durable, and reports any error.
    if (start_writeback) ::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
    return stored;
  }

  // Makes the temp file durable and closes it.
  absl::Status Persist() {
    if (::fsync(fd_.get()) != 0) return IoError("fsync", tmp_path_, errno);
    if (fd_.Close() != 0) return IoError("close", tmp_path_, errno);
    return absl::OkStatus();
  }

  // Checks the commit conditions and renames the temp file over the object's name: the object
  // is visible, but its name is durable only after the directory's fsync.
  absl::Status Publish(const ObjectInfo& stored) {
    absl::ReaderMutexLock lock(&state_->bucket_mu);
    absl::StatusOr<bool> exists = IsRealDir(state_->BucketDir(bucket_));
    if (!exists.ok()) return exists.status();
    if (!*exists) return NoSuchBucket();
    if (absl::Status s = state_->CheckBucketDirs(bucket_); !s.ok()) return s;
    const std::string final_path = state_->ObjectPath(bucket_, key_);
    absl::MutexLock index_lock(&state_->index_mu);
    BucketIndex* index = state_->FindIndex(bucket_);
    if (index == nullptr) return NoSuchBucket();
    auto it = index->objects.find(key_);
    // AOBJ-OBJ-134: the conditions, the rename and the index update are one critical section.
    if (absl::Status s = CheckCommitConditions(
            options_, it == index->objects.end() ? nullptr : &it->second.etag);
        !s.ok()) {
      return s;
    }
    if (::rename(tmp_path_.c_str(), final_path.c_str()) != 0) {
      // Our temp file is gone: the bucket was deleted (and re-created) while we wrote.
      if (errno == ENOENT) return NoSuchBucket();
      return IoError("rename", final_path, errno);
    }
    renamed_ = true;
    index->objects.insert_or_assign(key_, IndexEntry{size_, stored.etag, stored.last_modified_ms});
    return absl::OkStatus();
  }

  const std::string& bucket() const { return bucket_; }

 private:
  absl::Status CheckUsable() const {
    if (renamed_) return MakeError(ErrorCode::kInvalidArgument, "writer already committed");
    if (failed_) return MakeError(ErrorCode::kStorageError, "writer failed earlier");
    return absl::OkStatus();
  }

  const std::shared_ptr<FileStoreState> state_;
  const std::string bucket_;
  const std::string key_;
  const uint64_t size_;
  const WriteOptions options_;
  const uint32_t header_len_;
  ScopedFd fd_;
  const std::string tmp_path_;
  uint64_t written_ = 0;
  bool failed_ = false;
  bool renamed_ = false;
};

// Reads one object through a descriptor opened before any later rename/unlink. One thread at a
// time.
class FileReader final : public ObjectReader {
 public:
  FileReader(ScopedFd fd, Header header, std::string path)
      : fd_(std::move(fd)), header_(std::move(header)), path_(std::move(path)) {}
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  const ObjectInfo& info() const override { return header_.info; }

  absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
    const uint64_t size = header_.info.size;
    if (offset >= size || out.empty()) return 0;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
    absl::StatusOr<size_t> got =
        PreadFull(fd_.get(), out.data(), n, header_.header_len + offset, path_);
    if (!got.ok()) return got.status();
    if (*got != n) return Corrupt(path_, "content shorter than its header says");
    return n;
  }

 private:
  ScopedFd fd_;
  const Header header_;
  const std::string path_;
};

class FileStore final : public ObjectStore {
 public:
  explicit FileStore(std::shared_ptr<FileStoreState> state) : state_(std::move(state)) {}
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  // Every commit, delete and bucket change fsyncs the file and its directory before it returns.
  bool DurableCommits() const override { return true; }

  absl::Status CreateBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->bucket_mu);
    const std::string dir = state_->BucketDir(bucket);
    if (::mkdir(dir.c_str(), kDirMode) != 0) {
      if (errno == EEXIST) {  // AOBJ-OBJ-006
        return MakeError(ErrorCode::kBucketAlreadyExists, "bucket already exists");
      }
      return IoError("mkdir", dir, errno);
    }
    absl::Status s = MakeDir(state_->ObjectDir(bucket), false);
    if (s.ok()) s = MakeDir(state_->TmpDir(bucket), false);
    if (s.ok()) s = FsyncDir(dir);
    if (s.ok()) s = FsyncDir(state_->root);
    if (!s.ok()) {
      ::rmdir(state_->TmpDir(bucket).c_str());
      ::rmdir(state_->ObjectDir(bucket).c_str());
      ::rmdir(dir.c_str());
      return s;
    }
    absl::MutexLock index_lock(&state_->index_mu);
    state_->index[std::string(bucket)] = BucketIndex{absl::ToUnixMillis(absl::Now()), {}};
    return s;
  }

  absl::Status DeleteBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->bucket_mu);
    const std::string dir = state_->BucketDir(bucket);
    absl::StatusOr<bool> exists = IsRealDir(dir);
    if (!exists.ok()) return exists.status();
    if (!*exists) return NoSuchBucket();
    std::vector<std::string> names;
    if (absl::Status s = ListDir(dir, &names); !s.ok()) return s;
    for (const std::string& name : names) {
      if (name != "o" && name != "tmp") {
        return MakeError(ErrorCode::kStorageError,
                         absl::StrCat("unexpected entry ", dir, "/", name));
      }
    }
    const std::string objects = state_->ObjectDir(bucket);
    if (absl::Status s = ListDir(objects, &names); !s.ok()) return s;
    // AOBJ-OBJ-006: only an empty bucket can be deleted.
    if (!names.empty()) return MakeError(ErrorCode::kBucketNotEmpty, "bucket is not empty");
    // Writers still in flight lose their temp files; their Commit fails with kNoSuchBucket.
    const std::string tmp = state_->TmpDir(bucket);
    if (absl::Status s = RemoveAllFilesIn(tmp); !s.ok()) return s;
    for (const std::string& d : {tmp, objects, dir}) {
      if (::rmdir(d.c_str()) != 0 && errno != ENOENT) return IoError("rmdir", d, errno);
    }
    {
      absl::MutexLock index_lock(&state_->index_mu);
      state_->index.erase(std::string(bucket));
    }
    return FsyncDir(state_->root);
  }

  absl::Status HeadBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::StatusOr<bool> exists = IsRealDir(state_->BucketDir(bucket));
    if (!exists.ok()) return exists.status();
    return *exists ? absl::OkStatus() : NoSuchBucket();
  }

  using ObjectStore::BeginPut;
  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         const WriteOptions& options) override {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    if (options.content_type.size() > kMaxContentTypeBytes) {
      return MakeError(ErrorCode::kInvalidArgument, "content type too long");
    }
    size_t metadata_bytes = 0;
    for (const auto& [name, value] : options.user_metadata) {
      metadata_bytes += name.size() + value.size();
    }
    if (options.user_metadata.size() > kMaxMetadataPairs || metadata_bytes > kMaxMetadataBytes) {
      return MakeError(
          ErrorCode::kMetadataTooLarge,
          absl::StrCat("user metadata of ", options.user_metadata.size(), " pairs and ",
                       metadata_bytes, " bytes is over the store's limit of ", kMaxMetadataPairs,
                       " pairs or ", kMaxMetadataBytes, " bytes"));
    }
    const uint32_t header_len = HeaderLength(key.size(), options.content_type.size(),
                                             MetadataBlockBytes(options.user_metadata));
    if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) - header_len) {
      return MakeError(ErrorCode::kInvalidArgument, "object too large");
    }
    const std::string tmp_path =
        absl::StrCat(state_->TmpDir(bucket), "/", HexEncode(RandomBytes(16)), ".tmp");
    ScopedFd fd;
    {
      absl::ReaderMutexLock lock(&state_->bucket_mu);
      absl::StatusOr<bool> exists = IsRealDir(state_->BucketDir(bucket));
      if (!exists.ok()) return exists.status();
      if (!*exists) return NoSuchBucket();
      if (absl::Status s = state_->CheckBucketDirs(bucket); !s.ok()) return s;
      fd = ScopedFd(::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode));
      if (!fd.valid()) return IoError("create", tmp_path, errno);
    }
    // Reserve the space now so that a full disk fails the PUT before any data moves. Not every
    // filesystem can; those fail later, at write time.
    if (size > 0 &&
        ::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(header_len + size)) != 0) {
      const int err = errno;
      if (err != EOPNOTSUPP && err != ENOSYS && err != EINVAL) {
        fd.Reset();
        ::unlink(tmp_path.c_str());
        return IoError("fallocate", tmp_path, err);
      }
    }
    return std::make_unique<FileWriter>(state_, std::string(bucket), std::string(key), size,
                                        options, header_len, std::move(fd), tmp_path);
  }

  absl::StatusOr<std::unique_ptr<ObjectReader>> OpenRead(std::string_view bucket,
                                                         std::string_view key) override {
    std::string path;
    ScopedFd fd;
    absl::StatusOr<Header> header = Open(bucket, key, &path, &fd);
    if (!header.ok()) return header.status();
    return std::make_unique<FileReader>(std::move(fd), *std::move(header), std::move(path));
  }

  absl::StatusOr<ObjectInfo> Head(std::string_view bucket, std::string_view key) override {
    std::string path;
    ScopedFd fd;
    absl::StatusOr<Header> header = Open(bucket, key, &path, &fd);
    if (!header.ok()) return header.status();
    return std::move(header->info);
  }

  absl::Status Delete(std::string_view bucket, std::string_view key) override {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->bucket_mu);
    absl::StatusOr<bool> exists = IsRealDir(state_->BucketDir(bucket));
    if (!exists.ok()) return exists.status();
    if (!*exists) return NoSuchBucket();
    if (absl::Status s = state_->CheckBucketDirs(bucket); !s.ok()) return s;
    const std::string path = state_->ObjectPath(bucket, key);
    {
      absl::MutexLock index_lock(&state_->index_mu);
      if (::unlink(path.c_str()) != 0) {
        if (errno == ENOENT) return absl::OkStatus();
        return IoError("unlink", path, errno);
      }
      if (BucketIndex* index = state_->FindIndex(bucket); index != nullptr) {
        if (auto it = index->objects.find(key); it != index->objects.end()) {
          index->objects.erase(it);
        }
      }
    }
    return FsyncDir(state_->ObjectDir(bucket));
  }

  absl::StatusOr<std::vector<ObjectSummary>> ListObjects(std::string_view bucket,
                                                         std::string_view prefix,
                                                         std::string_view start_after,
                                                         size_t limit) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::ReaderMutexLock lock(&state_->index_mu);
    auto bucket_it = state_->index.find(bucket);
    if (bucket_it == state_->index.end()) return NoSuchBucket();
    return ListFromMap(bucket_it->second.objects, prefix, start_after, limit,
                       [](const std::string& key, const auto& o) {
                         return ObjectSummary{key, o.size, o.etag, o.last_modified_ms};
                       });
  }

  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    std::vector<BucketSummary> out;
    absl::ReaderMutexLock lock(&state_->index_mu);
    out.reserve(state_->index.size());
    for (const auto& [name, index] : state_->index) out.push_back({name, index.creation_time_ms});
    return out;
  }

  // Each writer's Commit in its three steps, each step over the whole group: the temp files'
  // write-back starts for all (Prepare) before the first fsync (Persist), so one journal commit
  // carries the group's data; the renames (Publish) go in order; each bucket's object directory
  // is fsync'ed once, and an object's result waits for its directory's fsync.
  std::vector<absl::StatusOr<ObjectInfo>> CommitBatch(absl::Span<ObjectWriter* const> writers,
                                                      absl::Span<const ObjectInfo> infos) override {
    const size_t n = writers.size();
    std::vector<absl::StatusOr<ObjectInfo>> out(
        n, MakeError(ErrorCode::kInvalidArgument, "no info to commit"));
    std::vector<FileWriter*> files(n, nullptr);
    for (size_t i = 0; i < n && i < infos.size(); ++i) {
      files[i] = dynamic_cast<FileWriter*>(writers[i]);
      out[i] =
          files[i] != nullptr ? files[i]->Prepare(infos[i], n > 1) : writers[i]->Commit(infos[i]);
    }
    auto each = [&](auto step) {
      for (size_t i = 0; i < n; ++i) {
        if (files[i] == nullptr || !out[i].ok()) continue;
        if (absl::Status s = step(*files[i], *out[i]); !s.ok()) out[i] = s;
      }
    };
    each([](FileWriter& w, const ObjectInfo&) { return w.Persist(); });
    each([](FileWriter& w, const ObjectInfo& stored) { return w.Publish(stored); });
    std::map<std::string, absl::Status, std::less<>> synced;  // bucket -> its directory's fsync
    each([&](FileWriter& w, const ObjectInfo&) {
      auto it = synced.find(w.bucket());
      if (it == synced.end()) {
        it = synced.emplace(w.bucket(), FsyncDir(state_->ObjectDir(w.bucket()))).first;
      }
      return it->second;
    });
    return out;
  }

 private:
  // Opens and validates the object file of bucket/key; *fd stays open on success.
  absl::StatusOr<Header> Open(std::string_view bucket, std::string_view key, std::string* path,
                              ScopedFd* fd) {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    *path = state_->ObjectPath(bucket, key);
    if (absl::Status s = state_->CheckBucketDirs(bucket); !s.ok()) return s;
    // A regular file only, never through a link, never blocking (eleventh hostile probe N2: a
    // FIFO planted in a bucket while the server ran held every request thread in open()).
    *fd = ScopedFd(OpenRegularForRead(*path));
    if (!fd->valid()) {
      const int err = errno;
      if (err != ENOENT) return OpenRegularError(*path, err);
      absl::StatusOr<bool> exists = IsRealDir(state_->BucketDir(bucket));
      if (!exists.ok()) return exists.status();
      if (!*exists) return NoSuchBucket();
      return MakeError(ErrorCode::kNoSuchKey, "no such key");
    }
    absl::StatusOr<Header> header = ReadHeader(fd->get(), *path);
    if (!header.ok()) return header.status();
    if (header->key != key) return Corrupt(*path, "holds a different key");
    return header;
  }

  const std::shared_ptr<FileStoreState> state_;
};

// The listing index of one bucket directory, from the headers of its object files. Files that do
// not decode, or whose name is not the hash of the key they hold, are left out.
absl::StatusOr<BucketIndex> BuildIndex(const FileStoreState& state, const std::string& bucket) {
  BucketIndex index;
  struct stat st;
  const std::string dir = state.BucketDir(bucket);
  if (::stat(dir.c_str(), &st) != 0) return IoError("stat", dir, errno);
  // o/ and tmp/ are made with the bucket and never change, so the bucket directory's mtime is
  // its creation time (or the repair time of a bucket cut short by a crash).
  index.creation_time_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 +
                           static_cast<int64_t>(st.st_mtim.tv_nsec) / 1000000;
  std::vector<std::string> names;
  const std::string objects = state.ObjectDir(bucket);
  if (absl::Status s = ListDir(objects, &names); !s.ok()) return s;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(objects, "/", name);
    // Never blocks (a FIFO) and never follows a link (issue 16): only regular files are objects.
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid() && errno == ELOOP) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat(path, " is a symbolic link, not an object file; remove it"));
    }
    if (!fd.valid()) return IoError("open", path, errno);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return IoError("fstat", path, errno);
    if (!S_ISREG(st.st_mode)) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat(path, " is not a regular file (a directory, FIFO, socket or "
                                          "device), so it cannot be an object; remove it"));
    }
    absl::StatusOr<Header> header = ReadHeader(fd.get(), path);
    if (!header.ok()) {
      if (IsCorrupt(header.status())) continue;  // unreadable by key too; OpenRead reports it
      return header.status();
    }
    if (HexEncode(Sha256(header->key)) != name) continue;
    index.objects.insert_or_assign(
        std::move(header->key),
        IndexEntry{header->info.size, std::move(header->info.etag), header->info.last_modified_ms});
  }
  return index;
}

// Removes crash leftovers, repairs buckets whose CreateBucket was cut short, and builds the
// listing index.
absl::Status Recover(FileStoreState& state) {
  std::vector<std::string> names;
  if (absl::Status s = ListDir(state.root, &names, /*follow_link=*/true); !s.ok()) return s;
  std::map<std::string, BucketIndex, std::less<>> index;
  for (const std::string& name : names) {
    if (!CheckBucketName(name).ok()) continue;
    const std::string dir = absl::StrCat(state.root, "/", name);
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) return IoError("lstat", dir, errno);
    if (S_ISLNK(st.st_mode)) return CheckNoLink(dir);  // reported: never followed
    if (!S_ISDIR(st.st_mode)) continue;  // LOCK and anything else that is not a bucket
    for (const std::string& sub : {state.ObjectDir(name), state.TmpDir(name)}) {
      if (absl::Status s = CheckNoLink(sub); !s.ok()) return s;
    }
    if (absl::Status s = MakeDir(state.ObjectDir(name), true); !s.ok()) return s;
    if (absl::Status s = MakeDir(state.TmpDir(name), true); !s.ok()) return s;
    if (absl::Status s = RemoveAllFilesIn(state.TmpDir(name)); !s.ok()) return s;
    absl::StatusOr<BucketIndex> bucket_index = BuildIndex(state, name);
    if (!bucket_index.ok()) return bucket_index.status();
    index.emplace(name, *std::move(bucket_index));
  }
  absl::MutexLock lock(&state.index_mu);
  state.index = std::move(index);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectStore>> OpenFileStore(const std::string& root) {
  if (root.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty store root");
  auto state = std::make_shared<FileStoreState>();
  state->root = root;
  while (state->root.size() > 1 && state->root.back() == '/') state->root.pop_back();
  if (absl::Status s = MakeDirs(state->root); !s.ok()) return s;

  const std::string lock_path = absl::StrCat(state->root, "/LOCK");
  // Never through a link: O_CREAT alone would create a link's target, wherever it points
  // (eleventh hostile probe N3).
  state->lock_fd = ScopedFd(
      ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, kFileMode));
  if (!state->lock_fd.valid()) return OpenRegularError(lock_path, errno);
  while (::flock(state->lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat("store root ", state->root, " is in use by another store"));
    }
    return IoError("flock", lock_path, errno);
  }
  if (absl::Status s = Recover(*state); !s.ok()) return s;
  return std::make_unique<FileStore>(std::move(state));
}

}  // namespace aobj
