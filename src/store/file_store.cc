// FileStore: the directory-backed ObjectStore (include/aobj/store.h).
//
// On-disk layout under the root directory:
//
//   <root>/LOCK                   flock()ed while a store has the root open (one store per root)
//   <root>/<bucket>/              one directory per bucket (names are never "", ".", ".." and
//                                 hold no '/')
//   <root>/<bucket>/o/<name>      one file per object; <name> = lower-case hex SHA-256 of the
//                                 key, because keys (up to 1024 bytes, any characters) cannot be
//                                 file names
//   <root>/<bucket>/tmp/<rand>.tmp  objects being written; removed on abort and at open
//
// An object file is a header followed by the content. Header, all integers little-endian,
// encoded and decoded field by field (never a struct cast):
//
//   offset  size  field
//        0     8  magic "AOBJOBJ1"
//        8     4  format version (kFormatVersion)
//       12     4  header_len: offset of the first content byte
//       16     8  content size
//       24     8  last_modified_ms (int64, two's complement)
//       32     4  CRC32C of the content (recorded, supplied by the caller)
//       36     4  key_len
//       40     4  content_type_len
//       44     4  etag_len
//       48     .  key, content_type, etag bytes; then zero padding
//  hl - 4      4  CRC32C of header bytes [0, header_len - 4)
//
// header_len is fixed at BeginPut (the etag, known only at Commit, gets kEtagCapacity bytes), so
// content goes straight to its final offset and the header is written last, at Commit. The file
// size must equal header_len + content size; anything else reads as a truncated/corrupt object.
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
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

constexpr char kMagic[8] = {'A', 'O', 'B', 'J', 'O', 'B', 'J', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kFixedHeaderBytes = 48;  // through etag_len
constexpr size_t kHeaderCrcBytes = 4;
constexpr size_t kPreambleBytes = 16;  // magic, version, header_len: enough to size the header
constexpr size_t kEtagCapacity = 256;
// Bounds what a (possibly corrupt) header can make us allocate, and what a writer may record.
constexpr size_t kMaxKeyBytes = 16 * 1024;
constexpr size_t kMaxContentTypeBytes = 16 * 1024;
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
static_assert(kFixedHeaderBytes + kMaxKeyBytes + kMaxContentTypeBytes + kEtagCapacity +
                  kHeaderCrcBytes <=
              kMaxHeaderBytes);

constexpr mode_t kDirMode = 0700;
constexpr mode_t kFileMode = 0600;

// absl::string_view is its own type in some absl builds (Debian's), not std::string_view.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// ---- little-endian encoding --------------------------------------------------------------

class LeWriter {
 public:
  explicit LeWriter(std::string* out) : out_(out) {}
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void Bytes(std::string_view b) { out_->append(b); }

 private:
  std::string* out_;  // not owned
};

// Every read checks bounds first; false once the input is exhausted.
class LeReader {
 public:
  explicit LeReader(std::string_view in) : in_(in) {}
  bool U32(uint32_t* v) {
    if (in_.size() - pos_ < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= uint32_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (in_.size() - pos_ < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (in_.size() - pos_ < n) return false;
    *out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

uint32_t HeaderLength(size_t key_len, size_t content_type_len) {
  return static_cast<uint32_t>(kFixedHeaderBytes + key_len + content_type_len + kEtagCapacity +
                               kHeaderCrcBytes);
}

// Precondition: the fields fit header_len (checked at BeginPut/Commit).
std::string EncodeHeader(uint32_t header_len, std::string_view key, const ObjectInfo& info) {
  std::string out;
  out.reserve(header_len);
  LeWriter w(&out);
  w.Bytes(std::string_view(kMagic, sizeof(kMagic)));
  w.U32(kFormatVersion);
  w.U32(header_len);
  w.U64(info.size);
  w.U64(static_cast<uint64_t>(info.last_modified_ms));
  w.U32(info.crc32c);
  w.U32(static_cast<uint32_t>(key.size()));
  w.U32(static_cast<uint32_t>(info.content_type.size()));
  w.U32(static_cast<uint32_t>(info.etag.size()));
  w.Bytes(key);
  w.Bytes(info.content_type);
  w.Bytes(info.etag);
  out.resize(header_len - kHeaderCrcBytes, '\0');
  w.U32(Crc32c(0, out.data(), out.size()));
  return out;
}

struct Header {
  uint32_t header_len = 0;
  std::string key;
  ObjectInfo info;
};

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return MakeError(ErrorCode::kStorageError,
                   absl::StrCat("corrupt object file ", path, ": ", what));
}

// Reads magic, version and header_len; returns header_len.
absl::StatusOr<uint32_t> DecodePreamble(std::string_view bytes, const std::string& path) {
  LeReader r(bytes);
  std::string_view magic;
  uint32_t version = 0;
  uint32_t header_len = 0;
  if (!r.Bytes(sizeof(kMagic), &magic) || !r.U32(&version) || !r.U32(&header_len)) {
    return Corrupt(path, "shorter than the header");
  }
  if (magic != std::string_view(kMagic, sizeof(kMagic))) return Corrupt(path, "bad magic");
  if (version != kFormatVersion) {
    return Corrupt(path, absl::StrCat("unsupported format version ", version));
  }
  if (header_len < kFixedHeaderBytes + kHeaderCrcBytes || header_len > kMaxHeaderBytes) {
    return Corrupt(path, absl::StrCat("header length ", header_len, " out of range"));
  }
  return header_len;
}

// `bytes` is exactly the header_len bytes announced by the preamble.
absl::StatusOr<Header> DecodeHeader(std::string_view bytes, const std::string& path) {
  absl::StatusOr<uint32_t> header_len = DecodePreamble(bytes, path);
  if (!header_len.ok()) return header_len.status();
  if (bytes.size() != *header_len) return Corrupt(path, "shorter than the header");
  const size_t body = bytes.size() - kHeaderCrcBytes;
  LeReader crc_reader(bytes.substr(body));
  uint32_t stored_crc = 0;
  crc_reader.U32(&stored_crc);
  if (stored_crc != Crc32c(0, bytes.data(), body)) return Corrupt(path, "header checksum mismatch");

  LeReader r(bytes.substr(kPreambleBytes, body - kPreambleBytes));
  Header h;
  h.header_len = *header_len;
  uint64_t last_modified = 0;
  uint32_t key_len = 0, content_type_len = 0, etag_len = 0;
  if (!r.U64(&h.info.size) || !r.U64(&last_modified) || !r.U32(&h.info.crc32c) ||
      !r.U32(&key_len) || !r.U32(&content_type_len) || !r.U32(&etag_len)) {
    return Corrupt(path, "header fields truncated");
  }
  h.info.last_modified_ms = static_cast<int64_t>(last_modified);
  std::string_view key, content_type, etag;
  // Each Bytes() checks its length against what remains, so no sum can overflow.
  if (!r.Bytes(key_len, &key) || !r.Bytes(content_type_len, &content_type) ||
      !r.Bytes(etag_len, &etag)) {
    return Corrupt(path, "header strings overrun the header");
  }
  h.key = std::string(key);
  h.info.content_type = std::string(content_type);
  h.info.etag = std::string(etag);
  return h;
}

// ---- POSIX helpers -------------------------------------------------------------------------

// Owns a file descriptor. Move-only.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes and reports the error close() may carry (deferred write errors on some filesystems).
  int Close() {
    const int fd = std::exchange(fd_, -1);
    return fd >= 0 ? ::close(fd) : 0;
  }

 private:
  int fd_ = -1;
};

absl::Status IoError(absl::string_view op, const std::string& path, int err) {
  if (err == ENOSPC) return MakeError(ErrorCode::kStorageError, "no space left on device");
  return MakeError(ErrorCode::kStorageError, absl::StrCat(op, " ", path, ": ", std::strerror(err)));
}

absl::Status PwriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset,
                       const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return IoError("write", path, errno);
    }
    if (w == 0) return IoError("write", path, EIO);
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

// Reads until `n` bytes or end of file; returns the count read.
absl::StatusOr<size_t> PreadFull(int fd, uint8_t* data, size_t n, uint64_t offset,
                                 const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, data + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError("read", path, errno);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

absl::Status FsyncDir(const std::string& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return IoError("open", dir, errno);
  if (::fsync(fd.get()) != 0) return IoError("fsync", dir, errno);
  return absl::OkStatus();
}

// True when `path` is a directory, false when it does not exist.
absl::StatusOr<bool> IsDir(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return IoError("stat", path, errno);
  }
  return S_ISDIR(st.st_mode);
}

// The entry names of `dir`, without "." and "..".
absl::Status ListDir(const std::string& dir, std::vector<std::string>* names) {
  names->clear();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("open", dir, errno);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    return IoError("opendir", dir, err);
  }
  absl::Status status;
  for (;;) {
    errno = 0;
    const struct dirent* e = ::readdir(d);
    if (e == nullptr) {
      if (errno != 0) status = IoError("readdir", dir, errno);
      break;
    }
    const std::string_view name(e->d_name);
    if (name != "." && name != "..") names->emplace_back(name);
  }
  ::closedir(d);  // closes fd
  return status;
}

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
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError("unlink", path, errno);
  }
  return absl::OkStatus();
}

// ---- store ---------------------------------------------------------------------------------

// Defence in depth: the server validates bucket names to S3 rules before they reach a store.
absl::Status CheckBucketName(std::string_view bucket) {
  if (bucket.empty() || bucket == "." || bucket == ".." ||
      bucket.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "invalid bucket name");
  }
  return absl::OkStatus();
}

absl::Status CheckKey(std::string_view bucket, std::string_view key) {
  if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
  if (key.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty object key");
  if (key.size() > kMaxKeyBytes) return MakeError(ErrorCode::kInvalidArgument, "key too long");
  return absl::OkStatus();
}

absl::Status NoSuchBucket() { return MakeError(ErrorCode::kNoSuchBucket, "no such bucket"); }

// Shared by the store and its writers, so writers may outlive the store object.
struct FileStoreState {
  std::string root;
  ScopedFd lock_fd;  // holds the flock on <root>/LOCK
  // Orders bucket creation/deletion (exclusive) against the object operations that need the
  // bucket directory to stay (shared). Guards the directory tree, not a member.
  absl::Mutex bucket_mu;

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
};

// Writes one object into a temp file. Used by one thread at a time.
class FileWriter final : public ObjectWriter {
 public:
  FileWriter(std::shared_ptr<FileStoreState> state, std::string bucket, std::string key,
             uint64_t size, std::string content_type, uint32_t header_len, ScopedFd fd,
             std::string tmp_path)
      : state_(std::move(state)),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        size_(size),
        content_type_(std::move(content_type)),
        header_len_(header_len),
        fd_(std::move(fd)),
        tmp_path_(std::move(tmp_path)) {}
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  ~FileWriter() override {
    if (!renamed_) {
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
    if (absl::Status s = CheckUsable(); !s.ok()) return s;
    if (written_ != size_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("only ", written_, " of ", size_, " bytes were written"));
    }
    if (info.size != size_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("commit size ", info.size, " differs from the size ", size_,
                                    " given to BeginPut"));
    }
    if (info.etag.size() > kEtagCapacity) {
      return MakeError(ErrorCode::kInvalidArgument, "etag too long");
    }
    failed_ = true;  // any early return below leaves the writer unusable
    ObjectInfo stored;
    stored.size = size_;
    stored.etag = info.etag;
    stored.crc32c = info.crc32c;
    stored.content_type = content_type_;
    stored.last_modified_ms = absl::ToUnixMillis(absl::Now());
    const std::string header = EncodeHeader(header_len_, key_, stored);
    if (absl::Status s = PwriteAll(fd_.get(), reinterpret_cast<const uint8_t*>(header.data()),
                                   header.size(), 0, tmp_path_);
        !s.ok()) {
      return s;
    }
    if (::fsync(fd_.get()) != 0) return IoError("fsync", tmp_path_, errno);
    if (fd_.Close() != 0) return IoError("close", tmp_path_, errno);

    absl::ReaderMutexLock lock(&state_->bucket_mu);
    absl::StatusOr<bool> exists = IsDir(state_->BucketDir(bucket_));
    if (!exists.ok()) return exists.status();
    if (!*exists) return NoSuchBucket();
    const std::string final_path = state_->ObjectPath(bucket_, key_);
    if (::rename(tmp_path_.c_str(), final_path.c_str()) != 0) {
      // Our temp file is gone: the bucket was deleted (and re-created) while we wrote.
      if (errno == ENOENT) return NoSuchBucket();
      return IoError("rename", final_path, errno);
    }
    renamed_ = true;
    // The object is visible now; without this fsync its name may not survive a crash.
    if (absl::Status s = FsyncDir(state_->ObjectDir(bucket_)); !s.ok()) return s;
    return stored;
  }

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
  const std::string content_type_;
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

  absl::Status CreateBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->bucket_mu);
    const std::string dir = state_->BucketDir(bucket);
    if (::mkdir(dir.c_str(), kDirMode) != 0) {
      if (errno == EEXIST) {
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
    }
    return s;
  }

  absl::Status DeleteBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::MutexLock lock(&state_->bucket_mu);
    const std::string dir = state_->BucketDir(bucket);
    absl::StatusOr<bool> exists = IsDir(dir);
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
    if (!names.empty()) return MakeError(ErrorCode::kBucketNotEmpty, "bucket is not empty");
    // Writers still in flight lose their temp files; their Commit fails with kNoSuchBucket.
    const std::string tmp = state_->TmpDir(bucket);
    if (absl::Status s = RemoveAllFilesIn(tmp); !s.ok()) return s;
    for (const std::string& d : {tmp, objects, dir}) {
      if (::rmdir(d.c_str()) != 0 && errno != ENOENT) return IoError("rmdir", d, errno);
    }
    return FsyncDir(state_->root);
  }

  absl::Status HeadBucket(std::string_view bucket) override {
    if (absl::Status s = CheckBucketName(bucket); !s.ok()) return s;
    absl::StatusOr<bool> exists = IsDir(state_->BucketDir(bucket));
    if (!exists.ok()) return exists.status();
    return *exists ? absl::OkStatus() : NoSuchBucket();
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view bucket,
                                                         std::string_view key, uint64_t size,
                                                         std::string_view content_type) override {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    if (content_type.size() > kMaxContentTypeBytes) {
      return MakeError(ErrorCode::kInvalidArgument, "content type too long");
    }
    const uint32_t header_len = HeaderLength(key.size(), content_type.size());
    if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) - header_len) {
      return MakeError(ErrorCode::kInvalidArgument, "object too large");
    }
    const std::string tmp_path =
        absl::StrCat(state_->TmpDir(bucket), "/", HexEncode(RandomBytes(16)), ".tmp");
    ScopedFd fd;
    {
      absl::ReaderMutexLock lock(&state_->bucket_mu);
      absl::StatusOr<bool> exists = IsDir(state_->BucketDir(bucket));
      if (!exists.ok()) return exists.status();
      if (!*exists) return NoSuchBucket();
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
                                        std::string(content_type), header_len, std::move(fd),
                                        tmp_path);
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
    absl::StatusOr<bool> exists = IsDir(state_->BucketDir(bucket));
    if (!exists.ok()) return exists.status();
    if (!*exists) return NoSuchBucket();
    const std::string path = state_->ObjectPath(bucket, key);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return absl::OkStatus();
      return IoError("unlink", path, errno);
    }
    return FsyncDir(state_->ObjectDir(bucket));
  }

 private:
  // Opens and validates the object file of bucket/key; *fd stays open on success.
  absl::StatusOr<Header> Open(std::string_view bucket, std::string_view key, std::string* path,
                              ScopedFd* fd) {
    if (absl::Status s = CheckKey(bucket, key); !s.ok()) return s;
    *path = state_->ObjectPath(bucket, key);
    *fd = ScopedFd(::open(path->c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd->valid()) {
      const int err = errno;
      if (err != ENOENT) return IoError("open", *path, err);
      absl::StatusOr<bool> exists = IsDir(state_->BucketDir(bucket));
      if (!exists.ok()) return exists.status();
      if (!*exists) return NoSuchBucket();
      return MakeError(ErrorCode::kNoSuchKey, "no such key");
    }
    std::string bytes(kPreambleBytes, '\0');
    absl::StatusOr<size_t> got =
        PreadFull(fd->get(), reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), 0, *path);
    if (!got.ok()) return got.status();
    bytes.resize(*got);
    absl::StatusOr<uint32_t> header_len = DecodePreamble(bytes, *path);
    if (!header_len.ok()) return header_len.status();
    bytes.resize(*header_len);
    got = PreadFull(fd->get(), reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), 0, *path);
    if (!got.ok()) return got.status();
    bytes.resize(*got);
    absl::StatusOr<Header> header = DecodeHeader(bytes, *path);
    if (!header.ok()) return header.status();
    if (header->key != key) return Corrupt(*path, "holds a different key");
    struct stat st;
    if (::fstat(fd->get(), &st) != 0) return IoError("fstat", *path, errno);
    const uint64_t expected = header->header_len + header->info.size;
    if (header->info.size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) ||
        static_cast<uint64_t>(st.st_size) != expected) {
      return Corrupt(
          *path, absl::StrCat("file has ", st.st_size, " bytes, header says ", header->info.size,
                              " of content after ", header->header_len, " of header"));
    }
    return header;
  }

  const std::shared_ptr<FileStoreState> state_;
};

// Removes crash leftovers and repairs buckets whose CreateBucket was cut short.
absl::Status Recover(const FileStoreState& state) {
  std::vector<std::string> names;
  if (absl::Status s = ListDir(state.root, &names); !s.ok()) return s;
  for (const std::string& name : names) {
    if (!CheckBucketName(name).ok()) continue;
    const std::string dir = absl::StrCat(state.root, "/", name);
    absl::StatusOr<bool> is_dir = IsDir(dir);
    if (!is_dir.ok()) return is_dir.status();
    if (!*is_dir) continue;  // LOCK and anything else that is not a bucket
    if (absl::Status s = MakeDir(state.ObjectDir(name), true); !s.ok()) return s;
    if (absl::Status s = MakeDir(state.TmpDir(name), true); !s.ok()) return s;
    if (absl::Status s = RemoveAllFilesIn(state.TmpDir(name)); !s.ok()) return s;
  }
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
  state->lock_fd = ScopedFd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, kFileMode));
  if (!state->lock_fd.valid()) return IoError("open", lock_path, errno);
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
