// The two part areas of the MultipartManager: in memory, and a directory.
//
// Directory layout (all integers little-endian, encoded field by field):
//
//   <dir>/uploads/<bucket>/<upload-id>/MANIFEST        the upload (below); its presence makes
//                                                      the upload exist
//   <dir>/uploads/<bucket>/<upload-id>/part-NNNNN      one installed part (NNNNN: 5 decimal digits)
//   <dir>/uploads/<bucket>/<upload-id>/*.tmp           a manifest or part being written
//   <dir>/trash/<upload-id>.<rand>/                    an upload that was detached (completed or
//                                                      aborted) and is being deleted
//
// MANIFEST and the part files' header: store/multipart_format.h.
//
// Crash safety (AOBJ-OBJ-226, AOBJ-OBJ-227):
//   * Create: mkdir the upload directory, write MANIFEST.tmp, fsync, rename to MANIFEST, fsync
//     the upload and bucket directories. A directory without MANIFEST is a Create that never
//     answered; Load() deletes it.
//   * UploadPart: write part-NNNNN.<rand>.tmp (header last), fsync, then (under the manager's
//     lock) rename over part-NNNNN and fsync the directory. A part is there whole or not at all;
//     Load() deletes *.tmp.
//   * Complete/Abort: one rename moves the whole upload directory into trash/ (fsync'ed on both
//     sides), so an upload disappears atomically, never part by part; trash/ is emptied
//     afterwards and at Load().
#include "store/multipart_area.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/status.h"
#include "store/multipart_format.h"
#include "store/posix_util.h"
#include "store/store_rules.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/le_codec.h"
#include "wire/status_macros.h"

namespace aobj {
namespace {

using multipart_format::DecodeManifest;
using multipart_format::DecodePartHeader;
using multipart_format::EncodeManifest;
using multipart_format::EncodePartHeader;
using multipart_format::kMaxManifestBytes;
using multipart_format::kPartHeaderBytes;

// ---- memory area ---------------------------------------------------------------------------

class MemoryBlob final : public PartBlob {
 public:
  MemoryBlob(std::unique_ptr<uint8_t[]> data, uint64_t size)
      : data_(std::move(data)), size_(size) {}
  absl::Span<const uint8_t> ContiguousView() const override {
    return {data_.get(), static_cast<size_t>(size_)};
  }
  absl::StatusOr<std::unique_ptr<BlobReader>> Open() const override {
    class Reader final : public BlobReader {
     public:
      explicit Reader(const MemoryBlob* blob) : blob_(blob) {}
      absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
        if (offset >= blob_->size_) return 0;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), blob_->size_ - offset));
        std::memcpy(out.data(), blob_->data_.get() + offset, n);
        return n;
      }

     private:
      const MemoryBlob* blob_;  // the caller keeps the blob alive while reading
    };
    return std::unique_ptr<BlobReader>(new Reader(this));
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t size_;
};

class MemoryPendingPart final : public PendingPart {
 public:
  MemoryPendingPart(std::unique_ptr<uint8_t[]> data, uint64_t size)
      : data_(std::move(data)), size_(size) {}
  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (data.size() > size_ - written_) {
      return MakeError(ErrorCode::kInvalidArgument, "append past the part's size");
    }
    if (!data.empty()) std::memcpy(data_.get() + written_, data.data(), data.size());
    written_ += data.size();
    return absl::OkStatus();
  }
  absl::Span<uint8_t> DirectBuffer() override {
    direct_ = true;
    return {data_.get(), static_cast<size_t>(size_)};
  }
  absl::Status Seal(const PartInfo& info) override {
    return CheckWriteComplete(direct_ ? size_ : written_, size_, info.size, "part");
  }
  absl::StatusOr<std::shared_ptr<const PartBlob>> Install() override {
    if (data_ == nullptr) return MakeError(ErrorCode::kInvalidArgument, "part installed twice");
    return std::shared_ptr<const PartBlob>(new MemoryBlob(std::move(data_), size_));
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  const uint64_t size_;
  uint64_t written_ = 0;
  bool direct_ = false;
};

class MemoryPartArea final : public PartArea {
 public:
  absl::Status Load(std::vector<LoadedUpload>* out) override {
    out->clear();
    return absl::OkStatus();
  }
  absl::Status AddUpload(const UploadInfo& upload) override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<PendingPart>> NewPart(const UploadInfo& upload,
                                                       uint32_t part_number,
                                                       uint64_t size) override {
    if (size > std::numeric_limits<size_t>::max() / 2) {
      return MakeError(ErrorCode::kEntityTooLarge, "part too large for this host");
    }
    // Never zero-filled: every byte is overwritten by Append or by the DirectBuffer user. One
    // byte at least, so that an empty part still has a buffer.
    std::unique_ptr<uint8_t[]> data(new (std::nothrow) uint8_t[std::max<uint64_t>(size, 1)]);
    if (data == nullptr) {
      return MakeError(ErrorCode::kStorageError,
                       absl::StrCat("cannot allocate ", size, " bytes for a part"));
    }
    return std::unique_ptr<PendingPart>(new MemoryPendingPart(std::move(data), size));
  }
  absl::StatusOr<std::string> DetachUpload(const UploadInfo& upload) override {
    return std::string();
  }
  void Purge(const std::string& token) override {}
};

// ---- directory area: POSIX helpers ---------------------------------------------------------

constexpr mode_t kDirMode = 0700;
constexpr mode_t kFileMode = 0600;
constexpr char kManifestName[] = "MANIFEST";

// POSIX helpers: store/posix_util.h.

// mkdir; true when it created the directory. An existing `path` must be a directory, and one
// that is not `follow_link`ed: only the part area's own directory and those above it may be
// links (the operator's).
absl::StatusOr<bool> MakeDir(const std::string& path, bool follow_link = false) {
  if (::mkdir(path.c_str(), kDirMode) == 0) return true;
  if (errno == EEXIST) {
    absl::StatusOr<bool> is_dir = follow_link ? IsDir(path) : IsRealDir(path);
    if (!is_dir.ok()) return is_dir.status();
    if (*is_dir) return false;
    return MakeError(ErrorCode::kStorageError, absl::StrCat(path, " is not a directory"));
  }
  return IoError("mkdir", path, errno);
}

absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    if (auto made = MakeDir(path.substr(0, pos), true); !made.ok()) return made.status();
  }
  return MakeDir(path, true).status();
}

// Deletes a directory that holds only files (an upload directory). A symbolic link (or anything
// else that is no directory) where one was expected goes itself, never what it points to
// (tenth hostile probe F1: a link in the trash made the server's start empty its target).
void RemoveFlatDir(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlink(dir.c_str());
    return;
  }
  std::vector<std::string> names;
  if (ListDir(dir, &names).ok()) {  // never follows `dir` itself
    for (const std::string& name : names) ::unlink(absl::StrCat(dir, "/", name).c_str());
  }
  ::rmdir(dir.c_str());
}

std::string PartFileName(uint32_t part_number) {
  char name[32];
  std::snprintf(name, sizeof(name), "part-%05u", part_number);
  return name;
}

// The part number of "part-NNNNN", or 0.
uint32_t ParsePartFileName(absl::string_view name) {
  if (name.size() != 10 || name.substr(0, 5) != "part-") return 0;
  uint32_t n = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  return n <= kMaxPartNumber ? n : 0;
}

// ---- directory area ------------------------------------------------------------------------

class FileBlob final : public PartBlob {
 public:
  FileBlob(std::string path, uint64_t size) : path_(std::move(path)), size_(size) {}
  absl::StatusOr<std::unique_ptr<BlobReader>> Open() const override {
    class Reader final : public BlobReader {
     public:
      Reader(ScopedFd fd, std::string path, uint64_t size)
          : fd_(std::move(fd)), path_(std::move(path)), size_(size) {}
      absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
        if (offset >= size_ || out.empty()) return 0;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size_ - offset));
        return PreadFull(fd_.get(), out.data(), n, kPartHeaderBytes + offset, path_);
      }

     private:
      ScopedFd fd_;
      const std::string path_;
      const uint64_t size_;
    };
    ScopedFd fd(OpenRegularForRead(path_));  // never a FIFO or a link planted since
    if (!fd.valid()) return OpenRegularError(path_, errno);
    return std::unique_ptr<BlobReader>(new Reader(std::move(fd), path_, size_));
  }

 private:
  const std::string path_;
  const uint64_t size_;
};

class FilePendingPart final : public PendingPart {
 public:
  FilePendingPart(std::string dir, uint32_t part_number, uint64_t size, ScopedFd fd,
                  std::string tmp_path)
      : dir_(std::move(dir)),
        part_number_(part_number),
        size_(size),
        fd_(std::move(fd)),
        tmp_path_(std::move(tmp_path)) {}
  ~FilePendingPart() override {
    if (!installed_) {
      fd_.Reset();
      ::unlink(tmp_path_.c_str());  // ENOENT when the upload was detached meanwhile
    }
  }

  absl::Status Append(absl::Span<const uint8_t> data) override {
    if (failed_ || !fd_.valid()) return MakeError(ErrorCode::kStorageError, "part writer failed");
    if (data.size() > size_ - written_) {
      return MakeError(ErrorCode::kInvalidArgument, "append past the part's size");
    }
    absl::Status s =
        PwriteAll(fd_.get(), data.data(), data.size(), kPartHeaderBytes + written_, tmp_path_);
    if (!s.ok()) {
      failed_ = true;
      return s;
    }
    written_ += data.size();
    return absl::OkStatus();
  }

  absl::Status Seal(const PartInfo& info) override {
    if (failed_ || !fd_.valid()) return MakeError(ErrorCode::kStorageError, "part writer failed");
    AOBJ_RETURN_IF_ERROR(CheckWriteComplete(written_, size_, info.size, "part"));
    failed_ = true;  // any early return below leaves the writer unusable
    absl::string_view hex = info.etag;
    if (hex.size() == 34 && hex.front() == '"' && hex.back() == '"') hex = hex.substr(1, 32);
    std::string md5;
    if (hex.size() != 32 || !HexDecode(hex, &md5)) {
      return MakeError(ErrorCode::kInvalidArgument, "part etag is not a quoted hex MD5");
    }
    const std::string header = EncodePartHeader(info, md5);
    if (absl::Status s = PwriteAll(fd_.get(), reinterpret_cast<const uint8_t*>(header.data()),
                                   header.size(), 0, tmp_path_);
        !s.ok()) {
      return s;
    }
    if (::fsync(fd_.get()) != 0) return IoError("fsync", tmp_path_, errno);
    if (fd_.Close() != 0) return IoError("close", tmp_path_, errno);
    failed_ = false;
    sealed_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<const PartBlob>> Install() override {
    if (!sealed_ || installed_) {
      return MakeError(ErrorCode::kInvalidArgument, "part not sealed, or installed twice");
    }
    const std::string final_path = absl::StrCat(dir_, "/", PartFileName(part_number_));
    if (::rename(tmp_path_.c_str(), final_path.c_str()) != 0) {
      if (errno == ENOENT) return MakeError(ErrorCode::kNoSuchUpload, "no such upload");
      return IoError("rename", final_path, errno);
    }
    installed_ = true;
    // Without this fsync the part's name may not survive a crash (AOBJ-OBJ-227).
    if (absl::Status s = FsyncDir(dir_); !s.ok()) return s;
    return std::shared_ptr<const PartBlob>(new FileBlob(final_path, size_));
  }

 private:
  const std::string dir_;
  const uint32_t part_number_;
  const uint64_t size_;
  ScopedFd fd_;
  const std::string tmp_path_;
  uint64_t written_ = 0;
  bool failed_ = false;
  bool sealed_ = false;
  bool installed_ = false;
};

class DirectoryPartArea final : public PartArea {
 public:
  explicit DirectoryPartArea(std::string dir)
      : dir_(std::move(dir)), uploads_(dir_ + "/uploads"), trash_(dir_ + "/trash") {}

  absl::Status Load(std::vector<LoadedUpload>* out) override {
    out->clear();
    for (const std::string& d : {uploads_, trash_}) {
      if (auto made = MakeDir(d); !made.ok()) return made.status();  // never a link
    }
    if (absl::Status s = FsyncDir(dir_); !s.ok()) return s;
    std::vector<std::string> names;
    if (absl::Status s = ListDir(trash_, &names); !s.ok()) return s;
    for (const std::string& name : names) RemoveFlatDir(absl::StrCat(trash_, "/", name));

    std::vector<std::string> buckets;
    if (absl::Status s = ListDir(uploads_, &buckets); !s.ok()) return s;
    for (const std::string& bucket : buckets) {
      const std::string bdir = absl::StrCat(uploads_, "/", bucket);
      absl::StatusOr<bool> is_dir = IsRealDir(bdir);  // a link is reported, never followed
      if (!is_dir.ok()) return is_dir.status();
      if (!*is_dir) continue;
      std::vector<std::string> ids;
      if (absl::Status s = ListDir(bdir, &ids); !s.ok()) return s;
      for (const std::string& id : ids) {
        if (!IsWellFormedUploadId(id)) continue;  // not ours: left alone
        absl::StatusOr<bool> loaded = LoadUpload(bucket, id, out);
        if (!loaded.ok()) return loaded.status();
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddUpload(const UploadInfo& upload) override {
    const std::string bdir = BucketDir(upload.bucket);
    absl::StatusOr<bool> made = MakeDir(bdir);
    if (!made.ok()) return made.status();
    if (*made) {
      if (absl::Status s = FsyncDir(uploads_); !s.ok()) return s;
    }
    const std::string udir = UploadDir(upload);
    if (::mkdir(udir.c_str(), kDirMode) != 0) return IoError("mkdir", udir, errno);
    absl::Status s = WriteManifest(udir, upload);
    if (s.ok()) s = FsyncDir(bdir);
    if (!s.ok()) RemoveFlatDir(udir);
    return s;
  }

  absl::StatusOr<std::unique_ptr<PendingPart>> NewPart(const UploadInfo& upload,
                                                       uint32_t part_number,
                                                       uint64_t size) override {
    if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) - kPartHeaderBytes) {
      return MakeError(ErrorCode::kEntityTooLarge, "part too large for this filesystem");
    }
    const std::string udir = UploadDir(upload);
    const std::string tmp =
        absl::StrCat(udir, "/", PartFileName(part_number), ".", HexEncode(RandomBytes(8)), ".tmp");
    ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kFileMode));
    if (!fd.valid()) {
      if (errno == ENOENT) return MakeError(ErrorCode::kNoSuchUpload, "no such upload");
      return IoError("create", tmp, errno);
    }
    // Reserve the space now so that a full disk fails before any data moves (where supported).
    if (::fallocate(fd.get(), FALLOC_FL_KEEP_SIZE, 0,
                    static_cast<off_t>(kPartHeaderBytes + size)) != 0) {
      const int err = errno;
      if (err != EOPNOTSUPP && err != ENOSYS && err != EINVAL) {
        fd.Reset();
        ::unlink(tmp.c_str());
        return IoError("fallocate", tmp, err);
      }
    }
    return std::unique_ptr<PendingPart>(
        new FilePendingPart(udir, part_number, size, std::move(fd), tmp));
  }

  absl::StatusOr<std::string> DetachUpload(const UploadInfo& upload) override {
    const std::string udir = UploadDir(upload);
    const std::string token =
        absl::StrCat(trash_, "/", upload.upload_id, ".", HexEncode(RandomBytes(8)));
    if (::rename(udir.c_str(), token.c_str()) != 0) return IoError("rename", udir, errno);
    // Both directories: the upload must not come back after a crash (AOBJ-OBJ-220).
    if (absl::Status s = FsyncDir(BucketDir(upload.bucket)); !s.ok()) return s;
    if (absl::Status s = FsyncDir(trash_); !s.ok()) return s;
    return token;
  }

  void Purge(const std::string& token) override {
    if (!token.empty()) RemoveFlatDir(token);
  }

 private:
  std::string BucketDir(absl::string_view bucket) const {
    return absl::StrCat(uploads_, "/", bucket);
  }
  std::string UploadDir(const UploadInfo& u) const {
    return absl::StrCat(uploads_, "/", u.bucket, "/", u.upload_id);
  }

  absl::Status WriteManifest(const std::string& udir, const UploadInfo& upload) {
    const std::string bytes = EncodeManifest(upload);
    const std::string tmp = absl::StrCat(udir, "/", kManifestName, ".tmp");
    const std::string path = absl::StrCat(udir, "/", kManifestName);
    ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kFileMode));
    if (!fd.valid()) return IoError("create", tmp, errno);
    if (absl::Status s = PwriteAll(fd.get(), reinterpret_cast<const uint8_t*>(bytes.data()),
                                   bytes.size(), 0, tmp);
        !s.ok()) {
      return s;
    }
    if (::fsync(fd.get()) != 0) return IoError("fsync", tmp, errno);
    if (fd.Close() != 0) return IoError("close", tmp, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return IoError("rename", path, errno);
    return FsyncDir(udir);
  }

  // Loads one upload directory; false when it was skipped. A directory without MANIFEST is a
  // Create that was cut short and is deleted; a corrupt one is left in place, not loaded.
  absl::StatusOr<bool> LoadUpload(const std::string& bucket, const std::string& id,
                                  std::vector<LoadedUpload>* out) {
    const std::string udir = absl::StrCat(uploads_, "/", bucket, "/", id);
    absl::StatusOr<bool> is_dir = IsRealDir(udir);  // a link is reported, never followed
    if (!is_dir.ok()) return is_dir.status();
    if (!*is_dir) return false;
    const std::string mpath = absl::StrCat(udir, "/", kManifestName);
    ScopedFd fd(OpenRegularForRead(mpath));  // a FIFO here hung the start (seventh probe F5)
    if (!fd.valid()) {
      if (errno != ENOENT) return OpenRegularError(mpath, errno);
      RemoveFlatDir(udir);
      return false;
    }
    std::string bytes(kMaxManifestBytes + 1, '\0');
    absl::StatusOr<size_t> got =
        PreadFull(fd.get(), reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), 0, mpath);
    if (!got.ok()) return got.status();
    if (*got > kMaxManifestBytes) return false;
    bytes.resize(*got);
    absl::StatusOr<UploadInfo> info = DecodeManifest(bytes, mpath);
    if (!info.ok() || info->bucket != bucket || info->upload_id != id) return false;

    LoadedUpload upload;
    upload.info = *std::move(info);
    std::vector<std::string> names;
    if (absl::Status s = ListDir(udir, &names); !s.ok()) return s;
    for (const std::string& name : names) {
      const std::string path = absl::StrCat(udir, "/", name);
      if (absl::string_view(name).size() > 4 &&
          absl::string_view(name).substr(name.size() - 4) == ".tmp") {
        ::unlink(path.c_str());  // a part or manifest that was never installed
        continue;
      }
      const uint32_t number = ParsePartFileName(name);
      if (number == 0) continue;
      absl::StatusOr<PartInfo> part = LoadPart(path, number);
      if (!part.ok()) continue;  // corrupt: not listed, so Complete answers INVALID_PART
      upload.parts.push_back(
          {*part, std::shared_ptr<const PartBlob>(new FileBlob(path, part->size))});
    }
    out->push_back(std::move(upload));
    return true;
  }

  static absl::StatusOr<PartInfo> LoadPart(const std::string& path, uint32_t number) {
    ScopedFd fd(OpenRegularForRead(path));
    if (!fd.valid()) return OpenRegularError(path, errno);
    std::string header(kPartHeaderBytes, '\0');
    absl::StatusOr<size_t> got =
        PreadFull(fd.get(), reinterpret_cast<uint8_t*>(header.data()), header.size(), 0, path);
    if (!got.ok()) return got.status();
    header.resize(*got);
    absl::StatusOr<PartInfo> info = DecodePartHeader(header);
    if (!info.ok()) return info.status();
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return IoError("fstat", path, errno);
    if (info->part_number != number ||
        info->size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) ||
        static_cast<uint64_t>(st.st_size) != kPartHeaderBytes + info->size) {
      return MakeError(ErrorCode::kStorageError, absl::StrCat("corrupt part file ", path));
    }
    return info;
  }

  const std::string dir_;
  const std::string uploads_;
  const std::string trash_;
};

}  // namespace

std::unique_ptr<PartArea> NewMemoryPartArea() { return std::make_unique<MemoryPartArea>(); }

absl::StatusOr<std::unique_ptr<PartArea>> OpenDirectoryPartArea(const std::string& dir) {
  if (dir.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty part area directory");
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (absl::Status s = MakeDirs(root); !s.ok()) return s;
  // The area's directory holds what start-up deletes: when it is in a store root
  // (ROOT/.multipart, as aobj-server has it), whoever can write there must not be able to point
  // it elsewhere. So it is never a link itself; the directories above it may be.
  if (absl::Status s = CheckNoLink(root); !s.ok()) return s;
  return std::unique_ptr<PartArea>(new DirectoryPartArea(root));
}

}  // namespace aobj
