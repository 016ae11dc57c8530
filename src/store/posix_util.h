// Small POSIX helpers shared by the filesystem store and the multipart part area: an owned file
// descriptor, loops over short reads and writes, directory fsync and listing. Every error is a
// STORAGE_ERROR naming the operation and the path ("no space left on device" for ENOSPC).
// Thread-safe (no shared state).
#ifndef AOBJ_STORE_POSIX_UTIL_H_
#define AOBJ_STORE_POSIX_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace aobj {

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

absl::Status IoError(absl::string_view op, const std::string& path, int err);

// Writes all `n` bytes at `offset`, looping over short writes and EINTR.
absl::Status PwriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset,
                       const std::string& path);

// Reads until `n` bytes or end of file; returns the count read.
absl::StatusOr<size_t> PreadFull(int fd, uint8_t* data, size_t n, uint64_t offset,
                                 const std::string& path);

absl::Status FsyncDir(const std::string& dir);

// Opens `path` for reading only if it is a regular file, or returns -1 with errno set: never
// follows a symbolic link (ELOOP), never blocks on a FIFO or a device (EINVAL; see
// NotRegularFileError). Whoever can write in a store root must not be able to hang or steer the
// server's start (issue 16, finding 6; seventh probe F5).
int OpenRegularForRead(const std::string& path);
// The error for `path` when OpenRegularForRead failed with `err`.
absl::Status OpenRegularError(const std::string& path, int err);

// True when `path` is a directory, false when it does not exist. Follows a symbolic link: for
// the store root and the directories above it, which are the operator's.
absl::StatusOr<bool> IsDir(const std::string& path);

// Inside a store root nothing is followed (issue 16; tenth hostile probe F1: a link in the
// multipart area's trash made the server's start empty the link's target). CheckNoLink: OK when
// `path` is a real directory or does not exist; an error naming it when it is a symbolic link
// or something else. IsRealDir: true for a directory, false when it does not exist or is not a
// directory, an error naming it when it is a symbolic link.
absl::Status CheckNoLink(const std::string& path);
absl::StatusOr<bool> IsRealDir(const std::string& path);

// The entry names of `dir`, without "." and "..". `dir` itself is never followed if it is a
// symbolic link (an error names it) unless `follow_link` (the store root, the operator's).
absl::Status ListDir(const std::string& dir, std::vector<std::string>* names,
                     bool follow_link = false);

}  // namespace aobj

#endif  // AOBJ_STORE_POSIX_UTIL_H_
