#include "server/authz.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "aobj/status.h"
#include "store/posix_util.h"
#include "wire/names.h"
#include "wire/printable.h"

namespace aobj {
namespace {

const char* AccessName(BucketAccess a) {
  switch (a) {
    case BucketAccess::kRead:
      return "read";
    case BucketAccess::kWrite:
      return "write to";
    case BucketAccess::kOwner:
      return "delete";
  }
  return "use";
}

}  // namespace

absl::StatusOr<std::unique_ptr<BucketAuthorizer>> BucketAuthorizer::Create(
    AuthorizationPolicy policy, std::vector<BucketGrant> grants, std::string state_file,
    BucketOwnerStore* owner_store) {
  for (const BucketGrant& g : grants) {
    if (g.principal.empty() || !ValidateBucketName(g.bucket).ok()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("grant for '", g.principal, "' on '", g.bucket,
                                    "' names no principal or an invalid bucket"));
    }
  }
  std::unique_ptr<BucketAuthorizer> a(
      new BucketAuthorizer(policy, std::move(grants), std::move(state_file), owner_store));
  if (a->owner_store_ == nullptr && !a->state_file_.empty()) {
    // A regular file only: a FIFO there hung the start (seventh probe F5); missing is empty.
    std::string text;
    ScopedFd fd(OpenRegularForRead(a->state_file_));
    if (fd.valid()) {
      char buf[1 << 16];
      for (ssize_t n; (n = ::read(fd.get(), buf, sizeof(buf))) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return IoError("read", a->state_file_, errno);
        text.append(buf, static_cast<size_t>(n));
      }
    } else if (errno != ENOENT) {
      return OpenRegularError(a->state_file_, errno);
    }
    std::istringstream in(text);
    std::string line;
    int n = 0;
    absl::MutexLock l(&a->mu_);
    while (std::getline(in, line)) {
      ++n;
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.empty()) continue;
      if (f.size() != 2) {
        return MakeError(ErrorCode::kStorageError,
                         absl::StrCat(a->state_file_, ":", n, ": expected `BUCKET PRINCIPAL`"));
      }
      // A bucket named twice (a bad merge or a hand edit) is refused, never settled by order
      // (tenth hostile probe, INFO: the last line won, and another principal got the bucket).
      auto [it, inserted] = a->owners_.try_emplace(f[0], f[1]);
      if (!inserted && it->second != f[1]) {
        return MakeError(ErrorCode::kStorageError,
                         absl::StrCat(a->state_file_, ":", n, ": bucket ", PrintableAscii(f[0]),
                                      " has another owner on an earlier line; keep one"));
      }
    }
  }
  return a;
}

absl::Status BucketAuthorizer::Check(absl::string_view principal, absl::string_view bucket,
                                     BucketAccess access) {
  if (open()) return absl::OkStatus();
  if (owner_store_ != nullptr) {
    // Read where every server reads it, each time: another server may have deleted the bucket
    // and another principal created the name since (an error reads as no owner).
    absl::StatusOr<std::string> owner =
        owner_store_->OwnerOf(std::string_view(bucket.data(), bucket.size()));
    if (owner.ok() && !owner->empty() && *owner == principal) return absl::OkStatus();
  } else {
    absl::MutexLock l(&mu_);
    auto it = owners_.find(std::string(bucket));
    if (it != owners_.end() && it->second == principal) return absl::OkStatus();
  }
  for (const BucketGrant& g : grants_) {
    if (g.principal != principal || g.bucket != bucket) continue;
    if (g.access == GrantAccess::kOwner) return absl::OkStatus();
    if (g.access == GrantAccess::kWrite && access != BucketAccess::kOwner) return absl::OkStatus();
    if (g.access == GrantAccess::kRead && access == BucketAccess::kRead) return absl::OkStatus();
  }
  // AOBJ-SEC-008, AOBJ-OBJ-008: the same answer whether or not the bucket exists.
  return MakeError(ErrorCode::kAccessDenied,
                   absl::StrCat("this access key may not ", AccessName(access), " bucket ",
                                bucket.substr(0, 63)));
}

absl::Status BucketAuthorizer::RecordOwner(absl::string_view bucket, absl::string_view principal) {
  if (open()) return absl::OkStatus();
  if (owner_store_ != nullptr) {  // recorded by the CreateBucket that follows, atomically
    owner_store_->SetCreator(std::string_view(bucket.data(), bucket.size()),
                             std::string_view(principal.data(), principal.size()));
    return absl::OkStatus();
  }
  // One writer at a time (owners change rarely); the map's lock only around the map, so that no
  // Check, which every request of the owner policy makes, waits while the file is written and
  // synced (with requests that run on the data channel's thread, that thread would wait too).
  absl::MutexLock writing(&save_mu_);
  std::string previous, text;
  {
    absl::MutexLock l(&mu_);
    std::string& owner = owners_[std::string(bucket)];
    previous = std::move(owner);
    owner = std::string(principal);
    text = Snapshot();
  }
  absl::Status saved = Write(text);
  if (!saved.ok()) {
    // Not recorded: memory says what the file says (AOBJ-SEC-016). Between the update and
    // here a Check could see this owner of a bucket that does not exist yet (it is created only
    // after this returns OK, under the handler's bucket lock), which lets nothing be read or
    // written.
    absl::MutexLock l(&mu_);
    if (previous.empty()) {
      owners_.erase(std::string(bucket));
    } else {
      owners_[std::string(bucket)] = previous;
    }
  }
  return saved;
}

absl::Status BucketAuthorizer::ForgetMissing(
    const std::function<bool(const std::string&)>& exists) {
  if (open() || owner_store_ != nullptr) return absl::OkStatus();
  absl::MutexLock writing(&save_mu_);
  std::string text;
  {
    absl::MutexLock l(&mu_);
    size_t dropped = 0;
    for (auto it = owners_.begin(); it != owners_.end();) {
      if (exists(it->first)) {
        ++it;
      } else {
        it = owners_.erase(it);
        ++dropped;
      }
    }
    if (dropped == 0) return absl::OkStatus();
    text = Snapshot();
  }
  return Write(text);
}

absl::Status BucketAuthorizer::ForgetOwner(absl::string_view bucket) {
  if (open()) return absl::OkStatus();
  if (owner_store_ != nullptr) {  // a deleted bucket's owner went with its record
    owner_store_->ClearCreator(std::string_view(bucket.data(), bucket.size()));
    return absl::OkStatus();
  }
  absl::MutexLock writing(&save_mu_);
  std::string text;
  {
    absl::MutexLock l(&mu_);
    owners_.erase(std::string(bucket));
    text = Snapshot();
  }
  return Write(text);
}

std::string BucketAuthorizer::Snapshot() {
  std::string text;
  for (const auto& [b, p] : owners_) absl::StrAppend(&text, b, " ", p, "\n");
  return text;
}

// AOBJ-SEC-011: owners outlive a restart with the store. The temporary file is always a new
// one: whatever sits at its name (a file left by a crash, or a FIFO or link that someone with
// access to the directory put there, which open() would block on or follow) is removed first,
// and the file is created exclusively, never through a link.
absl::Status BucketAuthorizer::Write(const std::string& text) {
  if (state_file_.empty()) return absl::OkStatus();
  const std::string tmp = state_file_ + ".tmp";
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT && errno != EISDIR) {
    return IoError("remove", tmp, errno);
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fsync(fd) == 0;
  if (fd >= 0) ok = close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), state_file_.c_str()) != 0) {
    return MakeError(ErrorCode::kStorageError,
                     absl::StrCat("cannot write the bucket owners file ", state_file_));
  }
  return absl::OkStatus();
}

}  // namespace aobj
