#include "store/posix_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {
namespace {

absl::Status LinkError(const std::string& path) {
  return MakeError(ErrorCode::kStorageError,
                   absl::StrCat(path,
                                " is a symbolic link; the filesystem store never follows "
                                "links inside its root: remove it, or move the data in"));
}

}  // namespace

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
int OpenRegularForRead(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

absl::Status OpenRegularError(const std::string& path, int err) {
  if (err == EINVAL) {
    return MakeError(ErrorCode::kStorageError, absl::StrCat(path, " is not a regular file"));
  }
  if (err == ELOOP) {
    return MakeError(ErrorCode::kStorageError,
                     absl::StrCat(path, " is a symbolic link (never followed)"));
  }
  return IoError("open", path, err);
}

absl::StatusOr<bool> IsDir(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return IoError("stat", path, errno);
  }
  return S_ISDIR(st.st_mode);
}

absl::Status CheckNoLink(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return IoError("lstat", path, errno);
  }
  if (S_ISLNK(st.st_mode)) return LinkError(path);
  if (!S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kStorageError, absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> IsRealDir(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return IoError("lstat", path, errno);
  }
  if (S_ISLNK(st.st_mode)) return LinkError(path);
  return S_ISDIR(st.st_mode);
}

absl::Status ListDir(const std::string& dir, std::vector<std::string>* names, bool follow_link) {
  names->clear();
  const int fd =
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow_link ? 0 : O_NOFOLLOW));
  if (fd < 0) return errno == ELOOP ? LinkError(dir) : IoError("open", dir, errno);
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
    const absl::string_view name(e->d_name);
    if (name != "." && name != "..") names->emplace_back(name);
  }
  ::closedir(d);  // closes fd
  return status;
}

}  // namespace aobj
