#include "cli_s3.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <system_error>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "cli_retry.h"
#include "client/range_spec.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tool_util.h"
#include "wire/checksum.h"
#include "wire/error_registry.h"
#include "wire/protocol.h"
#include "wire/range.h"

namespace aobj::cli {
namespace {

namespace fs = std::filesystem;

// Local failures (files, directories) are plain statuses without an AOBJ code.
absl::Status LocalError(const std::string& what, int err) {
  return absl::FailedPreconditionError(absl::StrCat(what, ": ", std::strerror(err)));
}

bool IsProtocolError(const absl::Status& st) {
  return st.GetPayload(kErrorCodePayloadUrl).has_value();
}

std::string FailureLine(const std::string& what, const absl::Status& st) {
  const bool described = IsProtocolError(st) || !ControlChannelFailure(st).empty();
  return absl::StrCat("aobj: ", what, ": ",
                      described ? tools::DescribeError(st) : tools::Printable(st.message()));
}

std::string FormatTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(ms), absl::LocalTimeZone());
}

// The last component of a key or path ("a/b/c" -> "c").
std::string BaseName(const std::string& s) {
  const size_t slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

absl::Status WriteAt(int fd, const uint8_t* data, uint64_t n, uint64_t offset, bool sequential,
                     const std::string& path) {
  while (n > 0) {
    const ssize_t w =
        sequential ? ::write(fd, data, n) : ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return LocalError(absl::StrCat("write ", path), w < 0 ? errno : EIO);
    data += w;
    n -= static_cast<uint64_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

// One attempt at DownloadFile, from resume->done on when resume->etag is set (the version the
// octets already written belong to; the GETs are pinned to it). *changed is set when a GET found
// another version than the one pinned (PreconditionFailed). resume->done advances as chunks are
// written in order.
absl::StatusOr<uint64_t> DownloadOnce(Client& client, const std::string& bucket,
                                      const std::string& key, const std::string& path, int fd,
                                      bool to_stdout, const CliSettings& settings,
                                      Progress* progress, bool* changed, Scratch* scratch,
                                      const ObjectSummary* listed, DownloadResume* resume) {
  auto note = [changed](const absl::Status& s) {
    if (ErrorCodeOf(s) == ErrorCode::kPreconditionFailed) *changed = true;
    return s;
  };
  const uint64_t chunk = std::max<uint64_t>(settings.chunk_size, 1);
  absl::StatusOr<ObjectInfo> head;
  if (!resume->etag.empty()) {
    // Resuming: the version and size are the ones the first attempt found.
    ObjectInfo info;
    info.size = resume->object_size;
    info.etag = resume->etag;
    head = info;
  } else if (listed != nullptr && !settings.range.has_value() &&
             settings.get_conditions.if_match.empty() &&
             settings.get_conditions.if_none_match.empty() && listed->size <= chunk) {
    // What the listing said stands in for a HEAD; the GET's If-Match proves it still holds.
    ObjectInfo info;
    info.size = listed->size;
    info.etag = listed->etag;
    head = info;
  } else {
    head = client.Head(bucket, key, settings.get_conditions);
  }
  if (!head.ok()) return head.status();
  resume->etag = head->etag;
  resume->object_size = head->size;
  uint64_t first = 0;
  uint64_t length = head->size;
  if (settings.range.has_value()) {
    absl::StatusOr<ResolvedRange> r = ResolveRange(ToSpec(*settings.range), head->size);
    if (!r.ok()) return r.status();
    first = r->first;
    length = r->length;
  }
  if (progress) progress->SetTotalIfUnknown(length);
  const size_t want = static_cast<size_t>(std::max<uint64_t>(std::min(length, chunk), 1));
  std::unique_ptr<Buffer> own;
  absl::StatusOr<Buffer*> buf = [&]() -> absl::StatusOr<Buffer*> {
    if (scratch != nullptr) return scratch->Get(want);
    absl::StatusOr<std::unique_ptr<Buffer>> b = client.AllocateBuffer(want);
    if (!b.ok()) return b.status();
    own = std::move(*b);
    return own.get();
  }();
  if (!buf.ok()) return buf.status();
  // Every GET is pinned to the version HEAD saw, so the file never mixes versions.
  GetOptions options;
  options.conditions.if_match = head->etag;
  if (!settings.range.has_value() && length <= chunk) {
    if (resume->done == length && length > 0) return length;
    absl::StatusOr<TransferResult> got =
        client.Get(bucket, key, {{*buf, 0, std::max<uint64_t>(length, 1)}}, options);
    if (!got.ok()) return note(got.status());
    if (got->bytes_transferred != length) {
      return MakeError(ErrorCode::kIncompleteTransfer, "the object changed size");
    }
    if (absl::Status s = WriteAt(fd, (*buf)->data(), length, 0, to_stdout, path); !s.ok()) {
      return s;
    }
    resume->done = length;
    if (progress) progress->Add(length);
    return length;
  }
  // Chunks in order from where an earlier attempt stopped (a whole number of chunks).
  for (uint64_t off = resume->done; off < length; off += chunk) {
    const uint64_t n = std::min(chunk, length - off);
    options.range = ByteRange::FirstLast(first + off, first + off + n - 1);
    absl::StatusOr<TransferResult> got = client.Get(bucket, key, {{*buf, 0, n}}, options);
    if (!got.ok()) return note(got.status());
    if (got->bytes_transferred != n) {
      return MakeError(ErrorCode::kIncompleteTransfer, "a chunk came back short");
    }
    if (absl::Status s = WriteAt(fd, (*buf)->data(), n, off, to_stdout, path); !s.ok()) return s;
    resume->done = off + n;
    if (progress) progress->Add(n);
  }
  return length;
}

// The objects under options.prefix, page by page: calls fn(page); stops on error. With
// `settings`, a page that fails in a way that may pass (a restart, a busy server) is asked for
// again (AOBJ-ERR-011 lets a client repeat a listing), through a new session where the old one
// was lost. A restarted server's continuation tokens differ, so the listing then resumes after
// the greatest key or common prefix delivered, and what the resumed pages repeat is left out.
template <class Fn>
absl::Status ForEachPage(Client& client, const std::string& bucket, ListObjectsOptions options,
                         Fn fn, const CliSettings* settings = nullptr) {
  std::string last;  // the greatest key or common prefix delivered
  bool resumed = false;
  auto before_retry = [&](const absl::Status& failure, int next, absl::Duration pause) {
    std::cerr << FailureLine(absl::StrCat("list ", Uri(bucket, options.prefix)), failure)
              << "; attempt " << next << " of " << settings->retry.max_attempts << " in "
              << absl::StrFormat("%.1f", absl::ToDoubleSeconds(pause)) << " s\n";
    if (last.empty()) return;  // the first page: nothing to resume after
    options.continuation_token.clear();
    options.start_after = std::max(options.start_after, last);
    resumed = true;
  };
  for (;;) {
    absl::StatusOr<ObjectListing> page = absl::UnknownError("not listed");
    auto call = [&](Client& c) {
      page = c.ListObjects(bucket, options);
      return page.status();
    };
    const absl::Status st =
        settings == nullptr
            ? call(client)
            : RetryRepeatable(settings->retry, settings->sessions, client, call, before_retry);
    if (!st.ok()) return st;
    if (resumed) {
      std::erase_if(page->objects, [&](const ObjectSummary& o) { return o.key <= last; });
      std::erase_if(page->common_prefixes, [&](const std::string& p) { return p <= last; });
    }
    for (const ObjectSummary& o : page->objects) last = std::max(last, o.key);
    for (const std::string& p : page->common_prefixes) last = std::max(last, p);
    if (absl::Status s = fn(*page); !s.ok()) return s;
    if (!page->is_truncated) return absl::OkStatus();
    options.continuation_token = page->next_continuation_token;
  }
}

// The bucket of "aobj://bucket", "aobj://bucket/" or "bucket".
absl::StatusOr<std::string> BucketArg(const std::string& arg) {
  absl::StatusOr<Location> loc = ParseLocation(arg, /*bare_is_remote=*/true);
  if (!loc.ok()) return loc.status();
  if (!loc->key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("expected a bucket, got ", arg));
  }
  return loc->bucket;
}

// Deletes every object under `prefix`; prints each. Returns the number that failed.
absl::StatusOr<int> DeletePrefix(Client& client, const std::string& bucket,
                                 const std::string& prefix, bool quiet) {
  int failed = 0;
  ListObjectsOptions options;
  options.prefix = prefix;
  for (;;) {
    // Always from the start: the keys of the previous page are gone.
    absl::StatusOr<ObjectListing> page = client.ListObjects(bucket, options);
    if (!page.ok()) return page.status();
    if (page->objects.empty()) return failed;
    std::vector<std::string> keys;
    for (const ObjectSummary& o : page->objects) keys.push_back(o.key);
    absl::StatusOr<DeleteObjectsResult> result = client.DeleteObjects(bucket, keys, quiet);
    if (!result.ok()) return result.status();
    for (const std::string& k : result->deleted) std::cout << "delete: " << Uri(bucket, k) << "\n";
    for (const auto& [k, st] : result->errors) {
      Fail(absl::StrCat("delete ", Uri(bucket, k)), st);
      ++failed;
    }
    if (!page->is_truncated) return failed;
    // Failed keys stay; skip past them rather than listing them again forever.
    if (!result->errors.empty()) options.start_after = keys.back();
  }
}

}  // namespace

int Fail(const std::string& what, const absl::Status& st) {
  std::cerr << FailureLine(what, st) << "\n";
  return 1;
}

int Usage(const std::string& msg) {
  std::cerr << "aobj: " << msg << "\n(run aobj --help for usage)\n";
  return 2;
}

std::string Uri(const std::string& bucket, const std::string& key) {
  // For messages only: a hostile server's names must not reach the terminal raw (issue 16).
  return absl::StrCat(kScheme, tools::Printable(bucket), "/", tools::Printable(key));
}

// A listing prefix that names a "directory": empty, or ending in '/'.
std::string AsDirectory(std::string prefix) {
  if (!prefix.empty() && prefix.back() != '/') prefix.push_back('/');
  return prefix;
}

absl::StatusOr<std::vector<ObjectSummary>> ListAll(Client& client, const std::string& bucket,
                                                   const std::string& prefix,
                                                   const CliSettings* settings) {
  ListObjectsOptions options;
  options.prefix = prefix;
  std::vector<ObjectSummary> out;
  absl::Status s = ForEachPage(
      client, bucket, options,
      [&](ObjectListing& page) {
        for (ObjectSummary& o : page.objects) out.push_back(std::move(o));
        return absl::OkStatus();
      },
      settings);
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Location> ParseLocation(const std::string& arg, bool bare_is_remote) {
  Location loc;
  std::string rest;
  if (absl::StartsWith(arg, kScheme)) {
    rest = arg.substr(std::strlen(kScheme));
  } else if (bare_is_remote) {
    rest = arg;
  } else {
    if (arg.empty()) return absl::InvalidArgumentError("empty local path");
    loc.path = arg;
    return loc;
  }
  loc.remote = true;
  const size_t slash = rest.find('/');
  loc.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) loc.key = rest.substr(slash + 1);
  if (loc.bucket.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no bucket in ", arg));
  }
  return loc;
}

std::string SafeRelativePath(const std::string& key, const std::string& prefix) {
  if (!absl::StartsWith(key, prefix)) return "";
  const std::string rel = key.substr(prefix.size());
  if (rel.empty() || rel.front() == '/') return "";
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    if (part.empty() || part == "." || part == "..") return "";
    if (part.find('\0') != absl::string_view::npos) return "";
  }
  return rel;
}

// ---- progress ----------------------------------------------------------------------------------

Progress::Progress(bool enabled, uint64_t total_bytes, uint64_t total_files)
    : enabled_(enabled),
      total_bytes_(total_bytes),
      total_files_(total_files),
      start_(absl::Now()),
      last_draw_(absl::InfinitePast()) {}

Progress::~Progress() { Finish(); }

void Progress::SetLabel(const std::string& label) {
  absl::MutexLock l(&mu_);
  label_ = label;
  Draw(false);
}

void Progress::SetTotalIfUnknown(uint64_t total_bytes) {
  absl::MutexLock l(&mu_);
  if (total_bytes_ == 0) total_bytes_ = total_bytes;
}

void Progress::ClearLocked() {
  if (enabled_ && !finished_) std::cerr << "\r\033[K" << std::flush;
}

void Progress::Clear() {
  absl::MutexLock l(&mu_);
  ClearLocked();
}

void Progress::Print(const std::string& line) {
  absl::MutexLock l(&mu_);
  ClearLocked();
  std::cout << line << "\n" << std::flush;
  if (enabled_ && !finished_) Draw(true);
}

void Progress::PrintError(const std::string& line) {
  absl::MutexLock l(&mu_);
  ClearLocked();
  std::cerr << line << "\n" << std::flush;  // the next update redraws the bar, if one comes
}

void Progress::Add(uint64_t bytes) {
  absl::MutexLock l(&mu_);
  bytes_ += bytes;
  Draw(false);
}

void Progress::TakeBack(uint64_t bytes) {
  absl::MutexLock l(&mu_);
  bytes_ -= std::min(bytes, bytes_);
  Draw(false);
}

void Progress::FileDone() {
  absl::MutexLock l(&mu_);
  ++files_;
  Draw(false);
}

uint64_t Progress::bytes() const {
  absl::MutexLock l(&mu_);
  return bytes_;
}

void Progress::Finish() {
  absl::MutexLock l(&mu_);
  if (!enabled_ || finished_) return;
  finishing_ = true;
  Draw(true);
  std::cerr << "\n";
  finished_ = true;
}

void Progress::Draw(bool force) {
  if (!enabled_ || finished_) return;
  const absl::Time now = absl::Now();
  if (!force && now - last_draw_ < absl::Milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  // An unknown (or zero) total shows 0% until the end.
  const double fraction = total_bytes_ == 0
                              ? (finishing_ ? 1.0 : 0.0)
                              : std::min(1.0, static_cast<double>(bytes_) / total_bytes_);
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::string files;
  if (total_files_ > 1) files = absl::StrCat("  ", files_, "/", total_files_, " files");
  const double seconds = absl::ToDoubleSeconds(now - start_);
  std::string eta;
  if (!finishing_ && total_bytes_ > bytes_ && bytes_ > 0 && seconds > 1) {
    const double left = static_cast<double>(total_bytes_ - bytes_) * seconds / bytes_;
    eta = absl::StrCat("  ETA ", absl::FormatDuration(absl::Seconds(std::ceil(left))));
  }
  std::string label = label_;
  if (label.size() > 40) label = "..." + label.substr(label.size() - 37);
  std::cerr << "\r\033[K[" << bar << "] "
            << absl::StrFormat("%3d%%", static_cast<int>(fraction * 100)) << "  "
            << tools::HumanBytes(bytes_) << " / " << tools::HumanBytes(total_bytes_) << "  "
            << tools::HumanRate(bytes_, seconds) << files << eta << "  " << label << std::flush;
}

// ---- --json ------------------------------------------------------------------------------------

struct JsonRecord::Impl {
  google::protobuf::Struct fields;
};

JsonRecord::JsonRecord() : impl_(std::make_unique<Impl>()) {}
JsonRecord::~JsonRecord() = default;

JsonRecord& JsonRecord::Text(const std::string& name, const std::string& value) {
  (*impl_->fields.mutable_fields())[name].set_string_value(value);
  return *this;
}

JsonRecord& JsonRecord::Number(const std::string& name, double value) {
  (*impl_->fields.mutable_fields())[name].set_number_value(value);
  return *this;
}

JsonRecord& JsonRecord::Flag(const std::string& name, bool value) {
  (*impl_->fields.mutable_fields())[name].set_bool_value(value);
  return *this;
}

JsonRecord& JsonRecord::Texts(const std::string& name, const std::vector<std::string>& values) {
  auto* list = (*impl_->fields.mutable_fields())[name].mutable_list_value();
  for (const std::string& v : values) list->add_values()->set_string_value(v);
  return *this;
}

JsonRecord& JsonRecord::Object(const std::string& name,
                               const std::map<std::string, std::string>& values) {
  auto* object = (*impl_->fields.mutable_fields())[name].mutable_struct_value();
  for (const auto& [k, v] : values) (*object->mutable_fields())[k].set_string_value(v);
  return *this;
}

JsonRecord& JsonRecord::Record(const std::string& name, const JsonRecord& value) {
  *(*impl_->fields.mutable_fields())[name].mutable_struct_value() = value.impl_->fields;
  return *this;
}

std::string JsonRecord::Line() const {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(impl_->fields, &out, options).ok()) {
    return "{}";  // only for strings that are not UTF-8, which protobuf never hands us
  }
  return out;
}

std::string Rfc3339(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

// ---- transfers ---------------------------------------------------------------------------------

namespace {

// The multipart path of UploadFile (spec section 9.15): the file is read part by part into a few
// registered buffers, one per part in flight, so memory stays at lanes x part_size whatever the
// file's size. Any failure aborts the upload (AOBJ-OBJ-229).
absl::StatusOr<ObjectInfo> UploadFileInParts(Client& client, int fd, uint64_t size,
                                             const std::string& path, const std::string& bucket,
                                             const std::string& key, const PutOptions& options,
                                             uint64_t part_size, Progress* progress) {
  // As `aws s3 cp` does: a larger part size when the file would need more than 10000 parts;
  // and never below the server's minimum part size (AOBJ-OBJ-235), which would fail only at
  // Complete, after every part was sent.
  part_size =
      std::max<uint64_t>({part_size, size / kMaxPartNumber + (size % kMaxPartNumber != 0 ? 1 : 0),
                          client.session().limits.min_part_size, 1});
  const uint64_t count = std::max<uint64_t>(1, size / part_size + (size % part_size != 0));
  absl::StatusOr<UploadInfo> upload = client.CreateMultipartUpload(bucket, key, options);
  if (!upload.ok()) return upload.status();
  const std::string& id = upload->upload_id;
  const uint64_t lanes =
      std::clamp<uint64_t>(std::min<uint64_t>(client.session().limits.max_in_flight, 4), 1, count);

  absl::Mutex mu;
  uint64_t next = 0;                      // guarded by mu
  absl::Status first_error;               // guarded by mu
  std::vector<std::string> etags(count);  // each written by the lane that uploads the part
  std::vector<uint32_t> crcs(count);      // likewise: the parts' CRC32C (AOBJ-OBJ-260)
  uint64_t added = 0;                     // octets counted in `progress`, guarded by mu
  auto lane = [&](Buffer* buf) {
    for (;;) {
      uint64_t i;
      {
        absl::MutexLock l(&mu);
        if (!first_error.ok() || next == count) return;
        i = next++;
      }
      const uint64_t off = i * part_size;
      const uint64_t len = std::min(part_size, size - off);
      absl::Status st;
      for (uint64_t done = 0; done < len && st.ok();) {
        const ssize_t r =
            ::pread(fd, buf->data() + done, len - done, static_cast<off_t>(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) st = LocalError(absl::StrCat("read ", path), r < 0 ? errno : EIO);
        if (r > 0) done += static_cast<uint64_t>(r);
      }
      absl::StatusOr<UploadPartResult> part =
          st.ok() ? absl::StatusOr<UploadPartResult>(UploadPartResult()) : st;
      if (st.ok()) {  // a busy server's refusals are retried by the client library
        part = client.UploadPart(bucket, key, id, static_cast<uint32_t>(i + 1), *buf, 0, len);
      }
      absl::MutexLock l(&mu);
      if (!part.ok()) {
        if (first_error.ok()) first_error = part.status();
        return;
      }
      etags[i] = part->etag;
      crcs[i] = part->crc32c;
      added += len;
      if (progress) progress->Add(len);  // under mu: Progress is not thread-safe
    }
  };
  // A failed upload is sent again whole by the retry, so its parts are not counted twice.
  auto fail = [&](absl::Status st) -> absl::Status {
    client.AbortMultipartUpload(bucket, key, id).IgnoreError();
    if (progress) progress->TakeBack(added);
    return st;
  };
  std::vector<std::unique_ptr<Buffer>> buffers;
  for (uint64_t l = 0; l < lanes; ++l) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf =
        client.AllocateBuffer(static_cast<size_t>(std::min(part_size, size) + (size == 0)));
    if (!buf.ok()) return fail(buf.status());
    buffers.push_back(*std::move(buf));
  }
  std::vector<std::thread> threads;
  for (uint64_t l = 1; l < lanes; ++l) threads.emplace_back(lane, buffers[l].get());
  lane(buffers[0].get());
  for (std::thread& t : threads) t.join();
  if (!first_error.ok()) return fail(first_error);
  std::vector<CompletedPart> parts(count);
  uint32_t whole = 0;  // the whole file's CRC32C, for the server to check (AOBJ-OBJ-259)
  for (uint64_t i = 0; i < count; ++i) {
    parts[i] = {static_cast<uint32_t>(i + 1), etags[i]};
    whole = Crc32cCombine(whole, crcs[i], std::min(part_size, size - i * part_size));
  }
  absl::StatusOr<ObjectInfo> info =
      client.CompleteMultipartUpload(bucket, key, id, parts, options.conditions, whole);
  if (!info.ok()) return fail(info.status());
  return info;
}

}  // namespace

absl::StatusOr<ObjectInfo> UploadFile(Client& client, const std::string& path,
                                      const std::string& bucket, const std::string& key,
                                      const PutOptions& options, Progress* progress,
                                      uint64_t multipart_threshold, uint64_t part_size,
                                      Scratch* scratch) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LocalError(absl::StrCat("open ", path), errno);
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    return LocalError(absl::StrCat("stat ", path), err);
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(sb.st_size);
  if (multipart_threshold > 0 && size >= multipart_threshold) {
    if (progress) progress->SetLabel(path);
    absl::StatusOr<ObjectInfo> info =
        UploadFileInParts(client, fd, size, path, bucket, key, options, part_size, progress);
    ::close(fd);
    return info;
  }
  // Below the threshold: one PutObject moves the whole file.
  std::unique_ptr<Buffer> own;
  absl::StatusOr<Buffer*> buf = [&]() -> absl::StatusOr<Buffer*> {
    const size_t n = static_cast<size_t>(std::max<uint64_t>(size, 1));
    if (scratch != nullptr) return scratch->Get(n);
    absl::StatusOr<std::unique_ptr<Buffer>> b = client.AllocateBuffer(n);
    if (!b.ok()) return b.status();
    own = std::move(*b);
    return own.get();
  }();
  if (!buf.ok()) {
    ::close(fd);
    return buf.status();
  }
  for (uint64_t off = 0; off < size;) {
    const ssize_t r = ::pread(fd, (*buf)->data() + off, size - off, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int err = r < 0 ? errno : EIO;
      ::close(fd);
      return LocalError(absl::StrCat("read ", path), err);
    }
    off += static_cast<uint64_t>(r);
  }
  ::close(fd);
  if (progress) progress->SetLabel(path);
  absl::StatusOr<TransferResult> put = client.Put(bucket, key, **buf, size, options);
  if (!put.ok()) return put.status();
  if (progress) progress->Add(size);
  return put->info;
}

absl::StatusOr<Buffer*> Scratch::Get(size_t n) {
  n = std::max<size_t>(n, 1);
  if (n > kKeepBytes) {
    large_.reset();
    absl::StatusOr<std::unique_ptr<Buffer>> b = client_.AllocateBuffer(n);
    if (!b.ok()) return b.status();
    large_ = std::move(*b);
    return large_.get();
  }
  if (kept_ == nullptr || kept_->size() < n) {
    kept_.reset();
    absl::StatusOr<std::unique_ptr<Buffer>> b =
        client_.AllocateBuffer(std::max<size_t>(n, size_t{64} << 10));
    if (!b.ok()) return b.status();
    kept_ = std::move(*b);
  }
  return kept_.get();
}

DownloadResume::~DownloadResume() {
  if (!partial.empty()) ::unlink(partial.c_str());
}

absl::StatusOr<uint64_t> DownloadFile(Client& client, const std::string& bucket,
                                      const std::string& key, const std::string& path,
                                      const CliSettings& settings, Progress* progress,
                                      Scratch* scratch, const ObjectSummary* listed,
                                      DownloadResume* resume) {
  const bool to_stdout = path == "-";
  const std::string tmp = path + ".aobj-partial";
  DownloadResume own;
  if (resume == nullptr) resume = &own;
  if (progress) progress->SetLabel(Uri(bucket, key));
  for (int attempt = 0;; ++attempt) {
    // A partial file an earlier attempt kept is continued, not truncated.
    const bool continuing = !to_stdout && resume->partial == tmp && resume->done > 0;
    const int fd = to_stdout
                       ? 1
                       : ::open(tmp.c_str(),
                                O_WRONLY | O_CREAT | O_CLOEXEC | (continuing ? 0 : O_TRUNC), 0644);
    if (fd < 0) return LocalError(absl::StrCat("create ", tmp), errno);
    if (!to_stdout) resume->partial = tmp;
    if (!continuing && !to_stdout) resume->done = 0;
    bool changed = false;
    absl::StatusOr<uint64_t> n =
        DownloadOnce(client, bucket, key, path, fd, to_stdout, settings, progress, &changed,
                     scratch, attempt == 0 ? listed : nullptr, resume);
    if (to_stdout) return n;  // what went out cannot be taken back (a retry continues after it)
    if (n.ok()) {
      // The file appears whole or not at all.
      // Whole or not at all comes from the rename; durability against a power cut (fsync) only
      // with --fsync: aws s3 and s5cmd do not sync either, and it halves the rate of a download
      // of many small files.
      if ((settings.fsync && ::fsync(fd) != 0) || ::close(fd) != 0 ||
          std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        return LocalError(absl::StrCat("write ", path), err);  // ~DownloadResume removes tmp
      }
      resume->partial.clear();
      return n;
    }
    ::close(fd);
    if (!changed && Retryable(n.status())) return n.status();  // kept for the next attempt
    // The object was overwritten after the HEAD: start again on the new version.
    resume->etag.clear();
    resume->done = 0;
    if (!changed || attempt >= 3) return n.status();
  }
}

// Runs task(i, w) for i in [0, n) on `workers` threads (the caller's one of them; w, below
// `workers`, names the thread, e.g. for its Scratch buffer). Task i holds
// weight(i) of `capacity` slots while it runs (at most all of them), so that the data requests
// in flight stay within the session's max_in_flight (AOBJ-SES-012) whatever mix of one-request
// files and multipart uploads (several parts at once) runs together.
void RunParallel(size_t n, int workers, uint32_t capacity,
                 const std::function<uint32_t(size_t)>& weight,
                 const std::function<void(size_t, size_t)>& task) {
  if (n == 0) return;
  absl::Mutex mu;
  size_t next = 0;           // guarded by mu
  uint32_t free = capacity;  // guarded by mu
  auto worker = [&](size_t self) {
    for (;;) {
      size_t i;
      uint32_t w;
      {
        absl::MutexLock l(&mu);
        if (next == n) return;
        i = next++;
        w = std::clamp<uint32_t>(weight(i), 1, std::max<uint32_t>(capacity, 1));
        struct Enough {
          const uint32_t* free;
          uint32_t need;
          static bool Check(Enough* e) { return *e->free >= e->need; }
        } enough{&free, w};
        mu.Await(absl::Condition(&Enough::Check, &enough));
        free -= w;
      }
      task(i, self);
      absl::MutexLock l(&mu);
      free += w;
    }
  };
  std::vector<std::thread> threads;
  const size_t extra = std::min<size_t>(n, static_cast<size_t>(std::max(workers, 1))) - 1;
  for (size_t t = 0; t < extra; ++t) threads.emplace_back(worker, t + 1);
  worker(0);
  for (std::thread& t : threads) t.join();
}

// How many transfers `cp` runs at once: --jobs, else the session's max_in_flight (at most 16).
int Workers(Client& client, const CliSettings& settings) {
  if (settings.jobs > 0) return settings.jobs;
  return static_cast<int>(std::clamp<uint32_t>(client.session().limits.max_in_flight, 1, 16));
}

namespace {

bool HasCapability(const Client& client, uint32_t capability) {
  const std::vector<uint32_t>& caps = client.session().capabilities;
  return std::find(caps.begin(), caps.end(), capability) != caps.end();
}

// Reads the whole regular file `path` into [data, data + size): FAILED_PRECONDITION when it no
// longer has `size` octets (it changed since it was listed).
absl::Status ReadWholeFile(const std::string& path, uint8_t* data, uint64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LocalError(absl::StrCat("open ", path), errno);
  struct stat sb {};
  absl::Status st;
  if (::fstat(fd, &sb) != 0) {
    st = LocalError(absl::StrCat("stat ", path), errno);
  } else if (!S_ISREG(sb.st_mode) || static_cast<uint64_t>(sb.st_size) != size) {
    st = absl::FailedPreconditionError(absl::StrCat(path, " changed since it was listed"));
  }
  for (uint64_t off = 0; st.ok() && off < size;) {
    const ssize_t r = ::pread(fd, data + off, size - off, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) st = LocalError(absl::StrCat("read ", path), r < 0 ? errno : EIO);
    if (r > 0) off += static_cast<uint64_t>(r);
  }
  ::close(fd);
  return st;
}

// Writes `n` octets as the whole file `path`: into path.aobj-partial, then renamed over it, so
// the file appears whole or not at all (fsync first with `sync`).
absl::Status WriteWholeFile(const std::string& path, const uint8_t* data, uint64_t n, bool sync) {
  const std::string tmp = path + ".aobj-partial";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return LocalError(absl::StrCat("create ", tmp), errno);
  absl::Status st = WriteAt(fd, data, n, 0, /*sequential=*/true, tmp);
  if (st.ok() && ((sync && ::fsync(fd) != 0) || ::close(fd) != 0)) {
    st = LocalError(absl::StrCat("write ", path), errno);
  } else if (!st.ok()) {
    ::close(fd);
  }
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = LocalError(absl::StrCat("rename ", tmp), errno);
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

// "upload: 320 of 320 files, 12.3 MiB in 0.41 s (31.5 MB/s, 780 files/s); 2 failed".
void Summary(const CliSettings& settings, const std::string& verb, size_t files, size_t failed,
             const Progress& progress, const std::string& extra = "") {
  if (settings.quiet || (files < 2 && extra.empty())) return;
  if (files == 0) {
    std::cerr << verb << ": nothing to copy" << extra << "\n";
    return;
  }
  const double secs = absl::ToDoubleSeconds(progress.elapsed());
  std::cerr << verb << ": " << files - failed << " of " << files << " files, "
            << tools::HumanBytes(progress.bytes()) << " in " << absl::StrFormat("%.2f", secs)
            << " s (" << tools::HumanRate(progress.bytes(), secs) << ", "
            << absl::StrFormat("%.0f", secs > 0 ? (files - failed) / secs : 0.0) << " files/s)"
            << (failed ? absl::StrCat("; ", failed, " failed") : std::string()) << extra << "\n";
}

// The CRC32C of a local file's content (what the server records for an object, HEAD's crc32c).
absl::StatusOr<uint32_t> FileCrc32c(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return LocalError(absl::StrCat("read ", path), errno);
  std::vector<char> buf(size_t{1} << 20);
  uint32_t crc = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return LocalError(absl::StrCat("read ", path), err);
    }
    if (n == 0) break;
    crc = Crc32c(crc, buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return crc;
}

// The object's LastModified as the downloaded file's mtime, as `aws s3` does: sync compares it.
void SetModified(const std::string& path, int64_t unix_ms) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;  // atime as it is
  times[1].tv_sec = static_cast<time_t>(unix_ms / 1000);
  times[1].tv_nsec = static_cast<long>(unix_ms % 1000) * 1000000;
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);  // best effort: the bytes are what matter
}

// The files to upload for a local source: a file, a directory (--recursive) or, when the path
// does not exist and holds a wildcard the shell left alone (quoted, or matching nothing), what
// glob(3) finds. Keys are dst_prefix + the name relative to the source's directory; the
// filters see that relative name. *usage is set on a usage error.
absl::Status PlanUploads(const std::string& source, const Location& dst,
                         const CliSettings& settings, Plan* plan, std::string* usage) {
  std::vector<std::string> roots;
  std::error_code ec;
  const bool wildcard = !fs::exists(source, ec) && HasWildcard(source);
  if (wildcard) {
    glob_t g{};
    const int rc = ::glob(source.c_str(), GLOB_NOSORT, nullptr, &g);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) roots.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (roots.empty()) {
      return absl::NotFoundError("no file matches the wildcard");
    }
    std::sort(roots.begin(), roots.end());
  } else {
    roots.push_back(source);
  }
  // Several sources, or a directory, go below the destination "directory".
  const bool many = wildcard || settings.recursive;
  for (const std::string& root : roots) {
    if (fs::is_directory(root, ec)) {
      if (!settings.recursive) {
        if (!wildcard) {
          *usage = root + " is a directory (use --recursive)";
          return absl::OkStatus();
        }
        std::cerr << "aobj: skipping directory " << tools::Printable(root)
                  << " (use --recursive)\n";
        continue;
      }
      // With a wildcard, a matched directory keeps its name: logs/* -> PREFIX/2026-11/a.gz.
      const std::string under =
          wildcard ? BaseName(fs::path(root).lexically_normal().string()) : std::string();
      std::vector<Transfer> found;
      for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        // Lexically: fs::relative resolves symbolic links with a readlink per component.
        std::string rel = it->path().lexically_relative(root).generic_string();
        if (!under.empty()) rel = under + "/" + rel;
        if (!settings.filters.Selects(rel)) continue;
        found.push_back({it->path().string(), AsDirectory(dst.key) + rel, it->file_size(ec), {}});
      }
      if (ec) return LocalError(absl::StrCat("walk ", root), ec.value());
      std::sort(found.begin(), found.end(),
                [](const Transfer& a, const Transfer& b) { return a.to < b.to; });
      for (Transfer& t : found) plan->transfers.push_back(std::move(t));
      continue;
    }
    if (!fs::exists(root, ec)) {
      return LocalError(absl::StrCat("read ", root), ENOENT);
    }
    const std::string name = BaseName(root);
    if (!settings.filters.Selects(name)) continue;
    std::string key = many ? AsDirectory(dst.key) + name : dst.key;
    if (key.empty() || key.back() == '/') key += name;
    plan->transfers.push_back({root, key, fs::file_size(root, ec), {}});
  }
  return absl::OkStatus();
}

// The objects to download or copy for a remote source: one key, every key under a prefix
// (--recursive), or the keys a wildcard matches (which implies many). Targets are the name
// relative to the source's "directory" below the destination (a local directory or a prefix);
// a key that cannot be written safely below a local directory is refused and counted.
absl::Status PlanFromRemote(Client& client, const Location& src, const Location& dst,
                            const CliSettings& settings, Plan* plan, std::string* usage) {
  const bool wildcard = HasWildcard(src.key);
  if (!wildcard && !settings.recursive) {
    if (src.key.empty()) {
      *usage = "need a key in " + Uri(src.bucket, src.key) + " (or --recursive)";
      return absl::OkStatus();
    }
    if (!settings.filters.Selects(BaseName(src.key))) return absl::OkStatus();
    std::string target = dst.remote ? dst.key : dst.path;
    std::error_code ec;
    if (dst.remote ? (target.empty() || target.back() == '/')
                   : (target.back() == '/' || fs::is_directory(target, ec))) {
      target =
          dst.remote ? target + BaseName(src.key) : (fs::path(target) / BaseName(src.key)).string();
    }
    plan->transfers.push_back({src.key, target, 0, std::nullopt});
    return absl::OkStatus();
  }
  if (!dst.remote && dst.path == "-") {
    *usage = "standard output takes one object, not several";
    return absl::OkStatus();
  }
  WildcardKey w;
  if (wildcard) {
    w = SplitWildcard(src.key);
  } else {
    w.list_prefix = w.base = AsDirectory(src.key);
  }
  absl::StatusOr<std::vector<ObjectSummary>> objects =
      ListAll(client, src.bucket, w.list_prefix, &settings);
  if (!objects.ok()) return objects.status();
  size_t matched = 0;
  for (ObjectSummary& o : *objects) {
    if (wildcard && !WildcardMatches(w.pattern, o.key)) continue;
    ++matched;
    const std::string rel = o.key.substr(w.base.size());
    if (!settings.filters.Selects(rel)) continue;
    if (dst.remote) {
      plan->transfers.push_back({o.key, AsDirectory(dst.key) + rel, o.size, std::nullopt});
      continue;
    }
    if (o.key.back() == '/' && o.size == 0) continue;  // a "directory" marker
    // Keys are the server's to choose: never let one write outside the target directory.
    const std::string safe = SafeRelativePath(o.key, w.base);
    if (safe.empty()) {
      std::cerr << "aobj: skipping " << Uri(src.bucket, o.key)
                << ": not a safe relative path below " << tools::Printable(dst.path) << "\n";
      ++plan->refused;
      continue;
    }
    const uint64_t size = o.size;
    plan->transfers.push_back({o.key, (fs::path(dst.path) / safe).string(), size, std::move(o)});
  }
  if (wildcard && matched == 0) {
    return absl::NotFoundError("no object matches the wildcard");
  }
  return absl::OkStatus();
}

int CopyOrMove(Client& client, const std::vector<std::string>& args, const CliSettings& settings,
               bool move) {
  const std::string name = move ? "mv" : "cp";
  if (args.size() != 2) return Usage("usage: aobj " + name + " SRC DST [--recursive]");
  absl::StatusOr<Location> src = ParseLocation(args[0], false);
  absl::StatusOr<Location> dst = ParseLocation(args[1], false);
  if (!src.ok()) return Usage(std::string(src.status().message()));
  if (!dst.ok()) return Usage(std::string(dst.status().message()));
  if (!src->remote && !dst->remote) {
    return Usage(name + " needs an aobj://BUCKET/KEY source or destination (use " + name +
                 " for local files)");
  }
  if (move && !dst->remote && dst->path == "-") {
    return Usage("mv cannot move an object to standard output (use cp)");
  }
  Plan plan = PlanBetween(*src, *dst);
  std::string usage;
  absl::Status st = src->remote ? PlanFromRemote(client, *src, *dst, settings, &plan, &usage)
                                : PlanUploads(src->path, *dst, settings, &plan, &usage);
  if (!usage.empty()) return Usage(usage);
  if (!st.ok()) return Fail(name + " " + tools::Printable(args[0]), st);
  if (plan.transfers.empty() && plan.refused == 0 && !settings.quiet) {
    std::cerr << "aobj: " << name << ": nothing to " << (move ? "move" : "copy") << " in "
              << tools::Printable(args[0]) << (settings.filters.empty() ? "" : " (after filters)")
              << "\n";
  }
  return ExecutePlan(client, plan, settings, move);
}

}  // namespace

Plan PlanBetween(const Location& src, const Location& dst) {
  Plan plan;
  plan.kind = !src.remote  ? TransferKind::kUpload
              : dst.remote ? TransferKind::kCopy
                           : TransferKind::kDownload;
  plan.src_bucket = src.bucket;
  plan.dst_bucket = dst.bucket;
  return plan;
}

int ExecutePlan(Client& client, const Plan& plan, const CliSettings& settings, bool move,
                const std::string& verb) {
  const bool up = plan.kind == TransferKind::kUpload;
  const bool down = plan.kind == TransferKind::kDownload;
  const char* kind_verb = up ? "upload" : down ? "download" : "copy";
  const std::string line_verb = move ? "move" : kind_verb;
  auto from_name = [&](const Transfer& t) {
    return up ? tools::Printable(t.from) : Uri(plan.src_bucket, t.from);
  };
  auto to_name = [&](const Transfer& t) {
    return down ? tools::Printable(t.to) : Uri(plan.dst_bucket, t.to);
  };
  auto deletion_name = [&](const std::string& d) {
    return down ? tools::Printable(d) : Uri(plan.dst_bucket, d);
  };
  if (settings.dryrun) {
    for (const Transfer& t : plan.transfers) {
      std::cout << "(dryrun) " << line_verb << ": " << from_name(t) << " to " << to_name(t)
                << (t.why.empty() ? "" : " (" + t.why + ")") << "\n";
    }
    for (const std::string& d : plan.deletions) {
      std::cout << "(dryrun) delete: " << deletion_name(d) << "\n";
    }
    return plan.refused == 0 ? 0 : 1;
  }
  uint64_t total = 0;
  for (const Transfer& t : plan.transfers) total += t.size;
  const bool to_stdout = down && plan.transfers.size() == 1 && plan.transfers[0].to == "-";
  Progress progress(settings.progress && !to_stdout, total, plan.transfers.size());
  std::atomic<size_t> failed{0};
  // Small files moved by GetObjects or PutObjects, and those requests.
  std::atomic<size_t> batched_files{0}, batch_requests{0};
  const int workers = to_stdout ? 1 : Workers(client, settings);
  const uint32_t capacity = std::max<uint32_t>(client.session().limits.max_in_flight, 1);
  // Each worker thread: the session it last used and a registered buffer of that session.
  struct WorkerState {
    uint64_t generation = 0;
    std::unique_ptr<Scratch> scratch;
  };
  std::vector<WorkerState> state(static_cast<size_t>(workers));
  // Each thread's first buffer is registered here, one after another: a registration holds
  // UCX's context lock, and threads registering at once spin on it, on the cores the server and
  // the transfers need (a third of the CPU of a 1,000-file upload went there).
  // Only for the threads RunParallel will start (no more than there are transfers).
  const size_t threads = std::min(state.size(), plan.transfers.size());
  if (threads > 1) {
    uint64_t smallest = ~uint64_t{0};
    for (const Transfer& t : plan.transfers) smallest = std::min(smallest, t.size);
    for (size_t w = 0; w < threads; ++w) {
      state[w].scratch = std::make_unique<Scratch>(client);
      if (smallest <= Scratch::kKeepBytes) state[w].scratch->Get(smallest).IgnoreError();
    }
  }
  auto session = [&](size_t w, uint64_t* generation) -> Client& {
    Client* c = &client;
    *generation = 0;
    if (settings.sessions != nullptr) c = &settings.sessions->ForLane(w, generation);
    if (state[w].scratch == nullptr || state[w].generation != *generation) {
      state[w].scratch = std::make_unique<Scratch>(*c);
      state[w].generation = *generation;
    }
    return *c;
  };
  // fn(session, scratch) up to settings.retry.max_attempts times while it fails Retryable, a
  // new session first where the old one is lost (cli_retry.h). When an attempt's outcome is
  // unknown (no reply), the request is not sent again before learn(now, then) has told what
  // became of it (AOBJ-ERR-011): true, it took effect (done); false, it did not or has ended
  // (send it again); an error, not learned yet (that error is the attempt's). Without `learn`,
  // such a failure is final.
  using Learn = std::function<absl::StatusOr<bool>(Client & now, Client & then)>;
  auto with_retries = [&](size_t w, const std::string& what,
                          const std::function<absl::Status(Client&, Scratch&)>& fn,
                          const Learn& learn, const DownloadResume* resume = nullptr) {
    absl::BitGen rng;
    std::optional<uint64_t> unknown;  // the generation of an attempt whose outcome is unknown
    for (int attempt = 1;; ++attempt) {
      uint64_t generation = 0;
      Client& c = session(w, &generation);
      absl::Status st;
      if (unknown.has_value()) {
        Client& then = settings.sessions != nullptr ? settings.sessions->At(*unknown) : client;
        absl::StatusOr<bool> done = learn(c, then);
        if (done.ok() && *done) return absl::OkStatus();
        if (done.ok()) unknown.reset();
        st = done.ok() ? fn(c, *state[w].scratch) : done.status();
      } else {
        st = fn(c, *state[w].scratch);
      }
      if (st.ok() && settings.sessions != nullptr) settings.sessions->Served(generation);
      if (st.ok() || attempt >= settings.retry.max_attempts || !Retryable(st)) return st;
      if (!unknown.has_value() && UnknownOutcome(st)) {
        if (!learn) return st;
        unknown = generation;
      }
      const absl::Duration pause = settings.retry.Pause(attempt, rng);
      std::string resuming;
      if (resume != nullptr && resume->done > 0) {
        resuming = absl::StrCat(", resuming after ", tools::HumanBytes(resume->done), " of ",
                                tools::HumanBytes(resume->object_size));
      }
      progress.PrintError(absl::StrCat(
          FailureLine(what, st), "; attempt ", attempt + 1, " of ", settings.retry.max_attempts,
          " in ", absl::StrFormat("%.1f", absl::ToDoubleSeconds(pause)), " s", resuming,
          unknown.has_value() ? " (the outcome is unknown: learned from the server first)" : ""));
      absl::SleepFor(pause);
      if (settings.sessions != nullptr && SessionLost(st)) {
        settings.sessions->Renew(generation).IgnoreError();  // the next attempt says why
      }
    }
  };
  // What became of a transfer whose outcome is unknown (with_retries' `learn`).
  auto learn_transfer = [&](const Transfer& t) -> Learn {
    if (up) {
      // The upload took effect if the object now holds the file's octets.
      return [&, t](Client& now, Client&) -> absl::StatusOr<bool> {
        absl::StatusOr<ObjectInfo> info = now.Head(plan.dst_bucket, t.to);
        if (ErrorCodeOf(info.status()) == ErrorCode::kNoSuchKey) return false;
        if (!info.ok()) return info.status();
        if (info->size != t.size) return false;
        absl::StatusOr<uint32_t> crc = FileCrc32c(t.from);
        if (!crc.ok()) return crc.status();
        return info->crc32c == *crc;
      };
    }
    if (!down) {
      // The copy took effect if the destination holds the source's octets.
      return [&, t](Client& now, Client&) -> absl::StatusOr<bool> {
        absl::StatusOr<ObjectInfo> to = now.Head(plan.dst_bucket, t.to);
        if (ErrorCodeOf(to.status()) == ErrorCode::kNoSuchKey) return false;
        if (!to.ok()) return to.status();
        absl::StatusOr<ObjectInfo> from = now.Head(plan.src_bucket, t.from);
        if (!from.ok()) return from.status();
        return to->size == from->size && to->crc32c == from->crc32c;
      };
    }
    // A GET changes nothing, but AOBJ-ERR-011 lets it be sent again only once its outcome is
    // known: it has ended when the session it ran in is gone (the server restarted or expired
    // it). Its windows are fenced already (the client destroyed that worker, AOBJ-MEM-014).
    return [&](Client&, Client& then) -> absl::StatusOr<bool> {
      absl::Status st = then.HeadBucket(plan.src_bucket);
      const ErrorCode code = ErrorCodeOf(st);
      if (code == ErrorCode::kNoSuchSession || code == ErrorCode::kSessionExpired) return false;
      if (st.ok()) {
        return MakeError(ErrorCode::kDeadlineExceeded,
                         "the GET ended without a reply while its session lives on: its outcome "
                         "is unknown, so it is not repeated (AOBJ-ERR-011)");
      }
      return st;
    };
  };
  auto transfer = [&](Client& c, Scratch& scratch, const Transfer& t,
                      DownloadResume* resume) -> absl::Status {
    if (up) {
      return UploadFile(c, t.from, plan.dst_bucket, t.to, settings.put, &progress,
                        settings.multipart_threshold, settings.part_size, &scratch)
          .status();
    }
    if (down) {
      // As `aws s3 cp` does, a download creates the directories its target names
      // (`cp aobj://b/k ./newdir/` makes newdir).
      std::error_code ec;
      const fs::path parent = fs::path(t.to).parent_path();
      if (t.to != "-" && !parent.empty()) fs::create_directories(parent, ec);
      absl::Status st = DownloadFile(c, plan.src_bucket, t.from, t.to, settings, &progress,
                                     &scratch, t.listed ? &*t.listed : nullptr, resume)
                            .status();
      if (st.ok() && t.listed && t.to != "-") SetModified(t.to, t.listed->last_modified_ms);
      return st;
    }
    CopyOptions options;
    options.replace_metadata = settings.replace_metadata;
    options.content_type = settings.put.content_type;
    options.user_metadata = settings.put.user_metadata;
    options.source_conditions = settings.get_conditions;
    options.conditions = settings.put.conditions;
    progress.SetLabel(from_name(t));
    absl::StatusOr<ObjectInfo> info =
        c.Copy(plan.src_bucket, t.from, plan.dst_bucket, t.to, options);
    if (info.ok()) progress.Add(info->size);
    return info.status();
  };
  // After a transfer succeeded: mv deletes its source.
  auto remove_source = [&](Client& c, const Transfer& t) -> absl::Status {
    if (up) {
      return ::unlink(t.from.c_str()) == 0 ? absl::OkStatus()
                                           : LocalError(absl::StrCat("remove ", t.from), errno);
    }
    return c.Delete(plan.src_bucket, t.from);
  };
  // After transfer i ended with `st`: mv deletes its source; the outcome is reported.
  auto finish = [&](size_t i, size_t w, absl::Status st) {
    const Transfer& t = plan.transfers[i];
    const std::string what = absl::StrCat(line_verb, " ", from_name(t), " to ", to_name(t));
    progress.FileDone();
    if (st.ok() && move) {
      // A deletion took effect when the source is gone.
      Learn deleted;
      if (!up) {
        deleted = [&](Client& now, Client&) -> absl::StatusOr<bool> {
          absl::StatusOr<ObjectInfo> info = now.Head(plan.src_bucket, t.from);
          if (ErrorCodeOf(info.status()) == ErrorCode::kNoSuchKey) return true;
          if (!info.ok()) return info.status();
          return false;
        };
      }
      st = with_retries(
          w, "remove the source of " + what,
          [&](Client& c, Scratch&) { return remove_source(c, t); }, deleted);
    }
    if (!st.ok()) {
      progress.PrintError(FailureLine(what, st));
      ++failed;
      return;
    }
    if (settings.quiet) return;
    const std::string line = absl::StrCat(line_verb, ": ", from_name(t), " to ", to_name(t));
    if (t.to == "-") {
      std::cerr << line << "\n";
    } else {
      progress.Print(line);
    }
  };
  auto one = [&](size_t i, size_t w) {
    const Transfer& t = plan.transfers[i];
    const std::string what = absl::StrCat(line_verb, " ", from_name(t), " to ", to_name(t));
    DownloadResume resume;  // a download's partial file, kept between attempts
    absl::Status st = with_retries(
        w, what, [&](Client& c, Scratch& scratch) { return transfer(c, scratch, t, &resume); },
        learn_transfer(t), &resume);
    finish(i, w, st);
  };
  // Small listed downloads, several at a time in one GetObjects request (spec 9.16): each object
  // that arrives is written as its file; whatever does not (an item's own error, the whole
  // request's failure) goes the single-file way above, with its retries and messages.
  auto batch = [&](const std::vector<size_t>& group, size_t w) {
    uint64_t generation = 0;
    Client& c = session(w, &generation);
    uint64_t total = 0;
    for (size_t i : group) total += plan.transfers[i].size;
    absl::StatusOr<Buffer*> buf = state[w].scratch->Get(static_cast<size_t>(total));
    absl::StatusOr<BatchGetResults> got =
        MakeError(ErrorCode::kInternal, "no buffer for the batch");
    std::vector<BatchGetItem> items;
    if (buf.ok()) {
      uint64_t at = 0;
      for (size_t i : group) {
        const Transfer& t = plan.transfers[i];
        items.push_back({t.from, std::nullopt, {*buf, at, t.size}});
        at += t.size;
      }
      progress.SetLabel(absl::StrCat(Uri(plan.src_bucket, plan.transfers[group[0]].from), " (+",
                                     group.size() - 1, " in one request)"));
      got = c.GetObjects(plan.src_bucket, items);
      if (got.ok()) ++batch_requests;
    }
    // What did not arrive goes the single way only after every object that did is written:
    // a single download reuses this worker's scratch buffer (and may replace it with a new
    // session's), which still holds the batch.
    std::vector<size_t> again;
    for (size_t k = 0; k < group.size(); ++k) {
      const size_t i = group[k];
      const Transfer& t = plan.transfers[i];
      if (!got.ok() || !(*got)[k].ok() || (*got)[k]->info.etag != t.listed->etag) {
        again.push_back(i);  // (another version than listed: the single way handles it)
        continue;
      }
      if (settings.sessions != nullptr) settings.sessions->Served(generation);
      std::error_code ec;
      const fs::path parent = fs::path(t.to).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
      absl::Status st = WriteWholeFile(t.to, (*buf)->data() + items[k].destination.offset,
                                       (*got)[k]->bytes_transferred, settings.fsync);
      if (st.ok()) {
        SetModified(t.to, t.listed->last_modified_ms);
        progress.Add((*got)[k]->bytes_transferred);
        ++batched_files;
      }
      finish(i, w, st);
    }
    for (size_t i : again) one(i, w);
  };
  // Small uploads, several at a time in one PutObjects request (spec 9.17), each file stored as
  // an object of its own; a file that changed since it was listed, an item's own error and the
  // whole request's failure (after which an item may or may not be stored: AOBJ-OBJ-253) go the
  // single-file way, whose PUT stores the file whatever the batch did.
  auto batch_up = [&](const std::vector<size_t>& group, size_t w) {
    uint64_t generation = 0;
    Client& c = session(w, &generation);
    uint64_t total = 0;
    for (size_t i : group) total += plan.transfers[i].size;
    absl::StatusOr<Buffer*> buf =
        state[w].scratch->Get(static_cast<size_t>(std::max<uint64_t>(total, 1)));
    absl::StatusOr<BatchPutResults> got =
        MakeError(ErrorCode::kInternal, "no buffer for the batch");
    std::vector<BatchPutItem> items;
    std::vector<size_t> sent;   // the transfer of each item
    std::vector<size_t> again;  // what goes the single way
    if (buf.ok()) {
      uint64_t at = 0;
      for (size_t i : group) {
        const Transfer& t = plan.transfers[i];
        if (!ReadWholeFile(t.from, (*buf)->data() + at, t.size).ok()) {
          again.push_back(i);  // the single way reports what is wrong with it
          continue;
        }
        items.push_back({t.to, {*buf, at, t.size}, settings.put.content_type});
        sent.push_back(i);
        at += t.size;
      }
      if (!items.empty()) {
        progress.SetLabel(absl::StrCat(plan.transfers[sent[0]].from, " (+", items.size() - 1,
                                       " in one request)"));
        got = c.PutObjects(plan.dst_bucket, items);
        if (got.ok()) ++batch_requests;
      }
    } else {
      sent = group;
    }
    for (size_t k = 0; k < sent.size(); ++k) {
      const size_t i = sent[k];
      if (!got.ok() || !(*got)[k].ok()) {
        again.push_back(i);
        continue;
      }
      if (settings.sessions != nullptr) settings.sessions->Served(generation);
      progress.Add(plan.transfers[i].size);
      ++batched_files;
      finish(i, w, absl::OkStatus());
    }
    for (size_t i : again) one(i, w);
  };
  // The units of work: batches of small listed downloads, or of small uploads, where the session
  // takes them, else one transfer each. An upload with user metadata or preconditions goes as a
  // PutObject: a batch item carries neither.
  std::vector<std::vector<size_t>> units;
  std::vector<bool> batched;  // per unit
  const bool batching_down =
      down && !to_stdout && settings.batch && HasCapability(client, kCapBatchGet);
  const bool batching_up =
      up && settings.batch && HasCapability(client, kCapBatchPut) &&
      settings.put.user_metadata.empty() && settings.put.conditions.if_match.empty() &&
      settings.put.conditions.if_none_match.empty() && settings.put.content_type.size() <= 256;
  const bool batching = batching_down || batching_up;
  {
    std::vector<size_t> open;
    uint64_t open_bytes = 0;
    for (size_t i = 0; i < plan.transfers.size(); ++i) {
      const Transfer& t = plan.transfers[i];
      if (!batching || (down && !t.listed) || t.size > kBatchObjectBytes) {
        units.push_back({i});
        batched.push_back(false);
        continue;
      }
      if (open.size() == kBatchItems || open_bytes + t.size > Scratch::kKeepBytes) {
        units.push_back(std::move(open));
        batched.push_back(true);
        open.clear();
        open_bytes = 0;
      }
      open.push_back(i);
      open_bytes += t.size;
    }
    if (!open.empty()) {
      units.push_back(std::move(open));
      batched.push_back(true);
    }
  }
  // An upload holds up to 4 of the session's slots while it is a multipart upload (4 parts in
  // flight, UploadFileInParts); a download moves one ranged GET at a time; a copy moves no data
  // by RMA (AOBJ-OBJ-158).
  // A batch is one data request.
  RunParallel(
      units.size(), workers, capacity,
      [&](size_t u) -> uint32_t {
        const size_t i = units[u][0];
        const bool parts = up && settings.multipart_threshold != 0 &&
                           plan.transfers[i].size >= settings.multipart_threshold;
        return parts ? std::min<uint32_t>(capacity, 4) : 1;
      },
      [&](size_t u, size_t w) {
        if (batched[u] && up) {
          batch_up(units[u], w);
        } else if (batched[u]) {
          batch(units[u], w);
        } else {
          one(units[u][0], w);
        }
      });
  progress.Finish();
  if (settings.sessions != nullptr && !settings.quiet) {
    // Which gateway served what, when there were several (spec 5.11).
    const auto served = settings.sessions->ServedByGateway();
    if (served.size() > 1) {
      std::string line = "gateways:";
      for (const auto& [gateway, n] : served) {
        absl::StrAppend(&line, " ", gateway, " ", n, n == 1 ? " file" : " files", ",");
      }
      line.pop_back();
      std::cerr << line << "\n";
    }
  }

  // sync --delete, after the copies, and only when every one of them succeeded (as rclone
  // does): a failed run must not leave the destination with less than before.
  size_t deleted = 0, delete_failed = 0;
  if (!plan.deletions.empty() && failed == 0 && plan.refused == 0) {
    if (down) {
      for (const std::string& path : plan.deletions) {
        if (::unlink(path.c_str()) != 0) {
          Fail(absl::StrCat("delete ", tools::Printable(path)), LocalError("unlink", errno));
          ++delete_failed;
          continue;
        }
        ++deleted;
        if (!settings.quiet) std::cout << "delete: " << tools::Printable(path) << "\n";
      }
    } else {
      absl::StatusOr<DeleteObjectsResult> result =
          client.DeleteObjects(plan.dst_bucket, plan.deletions, /*quiet=*/false);
      if (!result.ok()) {
        Fail(absl::StrCat("delete in ", Uri(plan.dst_bucket, "")), result.status());
        delete_failed = plan.deletions.size();
      } else {
        for (const std::string& k : result->deleted) {
          ++deleted;
          if (!settings.quiet) std::cout << "delete: " << Uri(plan.dst_bucket, k) << "\n";
        }
        for (const auto& [k, why] : result->errors) {
          Fail(absl::StrCat("delete ", Uri(plan.dst_bucket, k)), why);
          ++delete_failed;
        }
      }
    }
  } else if (!plan.deletions.empty()) {
    std::cerr << "aobj: deleted nothing: " << plan.deletions.size()
              << " deletion(s) skipped because a transfer failed\n";
  }
  std::string extra;
  if (!verb.empty()) {
    absl::StrAppend(&extra, "; ", plan.unchanged, " unchanged");
    if (!plan.deletions.empty()) absl::StrAppend(&extra, "; ", deleted, " deleted");
  }
  if (batched_files > 0) {
    absl::StrAppend(&extra, "; ", batched_files.load(), " small files in ", batch_requests.load(),
                    batch_requests.load() == 1 ? " batched request" : " batched requests");
  }
  Summary(settings, verb.empty() ? line_verb : verb, plan.transfers.size(), failed, progress,
          extra);
  const size_t total_failed = failed + plan.refused + delete_failed;
  return total_failed == 0 && (plan.deletions.empty() || failed == 0) ? 0 : 1;
}

// ---- commands ----------------------------------------------------------------------------------

int RunCp(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  return CopyOrMove(client, args, settings, /*move=*/false);
}

int RunMv(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  return CopyOrMove(client, args, settings, /*move=*/true);
}

int RunLs(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() > 1) return Usage("usage: aobj ls [aobj://BUCKET[/PREFIX]] [--recursive]");
  if (args.empty()) {
    absl::StatusOr<std::vector<BucketSummary>> buckets = client.ListBuckets();
    if (!buckets.ok()) return Fail("list buckets", buckets.status());
    for (const BucketSummary& b : *buckets) {
      if (settings.json) {
        std::cout << JsonRecord()
                         .Text("type", "bucket")
                         .Text("name", b.name)
                         .Text("created", Rfc3339(b.creation_time_ms))
                         .Line()
                  << "\n";
      } else {
        std::cout << FormatTime(b.creation_time_ms) << " " << tools::Printable(b.name) << "\n";
      }
    }
    return 0;
  }
  absl::StatusOr<Location> loc = ParseLocation(args[0], /*bare_is_remote=*/true);
  if (!loc.ok()) return Usage(std::string(loc.status().message()));
  ListObjectsOptions options;
  options.prefix = loc->key;
  if (!settings.recursive) options.delimiter = "/";
  // Like `aws s3 ls`: names relative to the "directory" part of the prefix, unless recursive.
  const size_t dir = settings.recursive ? 0 : loc->key.rfind('/') + 1;  // npos + 1 == 0
  uint64_t objects = 0, bytes = 0;
  absl::Status st = ForEachPage(
      client, loc->bucket, options,
      [&](const ObjectListing& page) {
        size_t i = 0, j = 0;  // merge objects and common prefixes back into byte order
        while (i < page.objects.size() || j < page.common_prefixes.size()) {
          if (j == page.common_prefixes.size() ||
              (i < page.objects.size() && page.objects[i].key < page.common_prefixes[j])) {
            const ObjectSummary& o = page.objects[i++];
            if (settings.json) {
              std::cout << JsonRecord()
                               .Text("type", "object")
                               .Text("key", o.key)
                               .Number("size", static_cast<double>(o.size))
                               .Text("etag", o.etag)
                               .Text("last_modified", Rfc3339(o.last_modified_ms))
                               .Line()
                        << "\n";
            } else {
              std::cout << FormatTime(o.last_modified_ms) << " " << absl::StrFormat("%10d", o.size)
                        << " " << tools::Printable(o.key.substr(dir)) << "\n";
            }
            ++objects;
            bytes += o.size;
          } else if (settings.json) {
            std::cout << JsonRecord()
                             .Text("type", "prefix")
                             .Text("prefix", page.common_prefixes[j++])
                             .Line()
                      << "\n";
          } else {
            std::cout << std::string(27, ' ') << "PRE "
                      << tools::Printable(page.common_prefixes[j++].substr(dir)) << "\n";
          }
        }
        return absl::OkStatus();
      },
      &settings);
  if (!st.ok()) return Fail(absl::StrCat("list ", Uri(loc->bucket, loc->key)), st);
  if (settings.summarize && settings.json) {
    std::cout << JsonRecord()
                     .Text("type", "summary")
                     .Number("objects", static_cast<double>(objects))
                     .Number("size", static_cast<double>(bytes))
                     .Line()
              << "\n";
  } else if (settings.summarize) {
    std::cout << "\nTotal Objects: " << objects << "\n   Total Size: " << bytes << " ("
              << tools::HumanBytes(bytes) << ")\n";
  }
  return 0;
}

int RunRm(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() != 1) return Usage("usage: aobj rm aobj://BUCKET/KEY [--recursive]");
  absl::StatusOr<Location> loc = ParseLocation(args[0], /*bare_is_remote=*/true);
  if (!loc.ok()) return Usage(std::string(loc.status().message()));
  const bool wildcard = HasWildcard(loc->key);
  if (settings.recursive && !wildcard && settings.filters.empty() && !settings.dryrun) {
    absl::StatusOr<int> failed = DeletePrefix(client, loc->bucket, loc->key, settings.quiet);
    if (!failed.ok()) return Fail(absl::StrCat("rm ", Uri(loc->bucket, loc->key)), failed.status());
    return *failed == 0 ? 0 : 1;
  }
  if (settings.recursive || wildcard) {
    // The keys a wildcard matches, or those under the prefix, that the filters select.
    WildcardKey w;
    if (wildcard) {
      w = SplitWildcard(loc->key);
    } else {
      w.list_prefix = w.base = loc->key;
    }
    absl::StatusOr<std::vector<ObjectSummary>> objects =
        ListAll(client, loc->bucket, w.list_prefix, &settings);
    if (!objects.ok())
      return Fail(absl::StrCat("rm ", Uri(loc->bucket, loc->key)), objects.status());
    std::vector<std::string> keys;
    size_t matched = 0;
    for (const ObjectSummary& o : *objects) {
      if (wildcard && !WildcardMatches(w.pattern, o.key)) continue;
      ++matched;
      std::string rel = o.key.substr(w.base.size());
      if (!rel.empty() && rel[0] == '/') rel.erase(0, 1);  // "rm --recursive aobj://b/dir"
      if (settings.filters.Selects(rel)) keys.push_back(o.key);
    }
    if (wildcard && matched == 0) {
      return Fail(absl::StrCat("rm ", Uri(loc->bucket, loc->key)),
                  absl::NotFoundError("no object matches the wildcard"));
    }
    Plan plan;
    plan.kind = TransferKind::kCopy;  // deletions of keys in dst_bucket
    plan.dst_bucket = loc->bucket;
    plan.deletions = std::move(keys);
    if (settings.dryrun) return ExecutePlan(client, plan, settings, false);
    if (plan.deletions.empty()) return 0;
    absl::StatusOr<DeleteObjectsResult> result =
        client.DeleteObjects(loc->bucket, plan.deletions, settings.quiet);
    if (!result.ok()) return Fail(absl::StrCat("rm ", Uri(loc->bucket, loc->key)), result.status());
    for (const std::string& k : result->deleted)
      std::cout << "delete: " << Uri(loc->bucket, k) << "\n";
    for (const auto& [k, st] : result->errors)
      Fail(absl::StrCat("delete ", Uri(loc->bucket, k)), st);
    return result->errors.empty() ? 0 : 1;
  }
  if (loc->key.empty()) return Usage("rm needs a key (or --recursive)");
  if (!settings.filters.Selects(BaseName(loc->key))) return 0;
  if (settings.dryrun) {
    std::cout << "(dryrun) delete: " << Uri(loc->bucket, loc->key) << "\n";
    return 0;
  }
  absl::Status st = client.Delete(loc->bucket, loc->key);
  if (!st.ok()) return Fail(absl::StrCat("rm ", Uri(loc->bucket, loc->key)), st);
  if (!settings.quiet) std::cout << "delete: " << Uri(loc->bucket, loc->key) << "\n";
  return 0;
}

int RunMb(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() != 1) return Usage("usage: aobj mb aobj://BUCKET");
  absl::StatusOr<std::string> bucket = BucketArg(args[0]);
  if (!bucket.ok()) return Usage(std::string(bucket.status().message()));
  absl::Status st = client.CreateBucket(*bucket);
  if (!st.ok()) return Fail(absl::StrCat("mb ", *bucket), st);
  if (!settings.quiet) std::cout << "make_bucket: " << *bucket << "\n";
  return 0;
}

int RunRb(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() != 1) return Usage("usage: aobj rb aobj://BUCKET [--force]");
  absl::StatusOr<std::string> bucket = BucketArg(args[0]);
  if (!bucket.ok()) return Usage(std::string(bucket.status().message()));
  if (settings.force) {
    absl::StatusOr<int> failed = DeletePrefix(client, *bucket, "", settings.quiet);
    if (!failed.ok()) return Fail(absl::StrCat("rb ", *bucket), failed.status());
    if (*failed > 0) return 1;
  }
  absl::Status st = client.DeleteBucket(*bucket);
  if (!st.ok()) return Fail(absl::StrCat("rb ", *bucket), st);
  if (!settings.quiet) std::cout << "remove_bucket: " << *bucket << "\n";
  return 0;
}

int RunStat(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() != 1) return Usage("usage: aobj stat aobj://BUCKET/KEY");
  absl::StatusOr<Location> loc = ParseLocation(args[0], /*bare_is_remote=*/true);
  if (!loc.ok()) return Usage(std::string(loc.status().message()));
  if (loc->key.empty()) return Usage("stat needs a key");
  absl::StatusOr<ObjectInfo> info = client.Head(loc->bucket, loc->key, settings.get_conditions);
  if (!info.ok()) return Fail(absl::StrCat("stat ", Uri(loc->bucket, loc->key)), info.status());
  if (settings.json) {
    std::cout << JsonRecord()
                     .Text("bucket", loc->bucket)
                     .Text("key", loc->key)
                     .Number("size", static_cast<double>(info->size))
                     .Text("etag", info->etag)
                     .Text("last_modified", Rfc3339(info->last_modified_ms))
                     .Text("content_type", info->content_type)
                     .Text("crc32c", absl::StrFormat("%08x", info->crc32c))
                     .Object("metadata", info->user_metadata)
                     .Line()
              << "\n";
    return 0;
  }
  std::cout << "object:        " << Uri(loc->bucket, loc->key) << "\n"
            << "size:          " << info->size << " (" << tools::HumanBytes(info->size) << ")\n"
            << "etag:          " << tools::Printable(info->etag) << "\n"
            << "last-modified: "
            << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                                absl::FromUnixMillis(info->last_modified_ms), absl::UTCTimeZone())
            << "\n"
            << "content-type:  "
            << (info->content_type.empty() ? "-" : tools::Printable(info->content_type)) << "\n"
            << "crc32c:        " << absl::StrFormat("%08x", info->crc32c) << "\n";
  for (const auto& [name, value] : info->user_metadata) {
    std::cout << "metadata:      " << tools::Printable(name) << "=" << tools::Printable(value) << "\n";
  }
  return 0;
}

}  // namespace aobj::cli
