// The S3-style commands of the aobj CLI, in the habits of `aws s3`: cp and mv (upload,
// download, server-side copy; --recursive, wildcards, filters), sync (cli_sync.cc), ls, rm
// (--recursive, wildcards, filters), mb, rb (--force), stat. aobj_main.cc parses the flags and
// opens the session; these functions do the work. --dryrun prints what would be done.
//
// Remote locations are written aobj://BUCKET/KEY (cp needs the scheme to tell them from local
// paths; ls, rm, mb, rb and stat also take the older BUCKET/KEY form).
//
// Threading: one thread. Output: results on stdout, progress and errors on stderr.
#ifndef AOBJ_TOOLS_CLI_S3_H_
#define AOBJ_TOOLS_CLI_S3_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/client.h"
#include "cli_retry.h"
#include "cli_select.h"

namespace aobj::cli {

inline constexpr char kScheme[] = "aobj://";

// What a command was given besides its positional arguments.
struct CliSettings {
  bool quiet = false;
  bool progress = false;  // draw progress on stderr (set when stderr is a TTY and not quiet)
  bool recursive = false;
  bool force = false;                        // rb: delete the bucket's objects first
  bool summarize = false;                    // ls: totals at the end
  PutOptions put;                            // uploads: content type, user metadata, conditions
  Preconditions get_conditions;              // downloads (and copy sources)
  std::optional<ByteRange> range;            // downloads of one object
  bool replace_metadata = false;             // server-side copies: S3's REPLACE directive
  uint64_t chunk_size = uint64_t{64} << 20;  // downloads move in ranged GETs of this size
  uint64_t multipart_threshold = uint64_t{64} << 20;  // uploads from this size are multipart
  uint64_t part_size = uint64_t{16} << 20;            // the part size of those uploads
  int jobs = 0;  // cp: files moved at once (0: the session's max_in_flight, at most 16)
  bool fsync = false;  // downloads: fsync each file before it is renamed into place
  // Downloads and uploads of many small objects: up to kBatchItems of them (each at most
  // kBatchObjectBytes, together at most Scratch::kKeepBytes) in one GetObjects or PutObjects
  // request (spec 9.16, 9.17), where the session negotiated BATCH_GET or BATCH_PUT; --no-batch
  // sends one GetObject or PutObject per file.
  bool batch = true;
  bool json = false;  // ls, stat, head, session: one JSON object per record (as s5cmd --json)
  Filters filters;    // --exclude / --include: which names below the source a command takes
  bool dryrun = false;        // cp, mv, rm, sync: print what would be done, do nothing
  bool delete_extra = false;  // sync --delete: remove what the source does not have
  SyncRules sync;             // sync: --size-only, --exact-timestamps, --compare-etag
  RetryPolicy retry;          // cp, mv, sync: --max-attempts
  Sessions* sessions = nullptr;  // where a lost session is replaced (null: it is not)
};

// One record of --json output: a JSON object on one line, printed by protobuf's JSON printer
// (google.protobuf.Struct), so that quoting and escaping are a maintained library's, not ours.
// Numbers are JSON numbers (exact up to 2^53). Not thread-safe.
class JsonRecord {
 public:
  JsonRecord();
  ~JsonRecord();
  JsonRecord& Text(const std::string& name, const std::string& value);
  JsonRecord& Number(const std::string& name, double value);
  JsonRecord& Flag(const std::string& name, bool value);
  JsonRecord& Texts(const std::string& name, const std::vector<std::string>& values);
  JsonRecord& Object(const std::string& name, const std::map<std::string, std::string>& values);
  JsonRecord& Record(const std::string& name, const JsonRecord& value);
  // The object on one line, without a newline.
  std::string Line() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "2026-11-26T05:21:30.123Z" (RFC 3339, UTC), the time format of --json.
std::string Rfc3339(int64_t unix_ms);

// A command-line location: remote (bucket, key) or a local path.
struct Location {
  bool remote = false;
  std::string bucket;
  std::string key;   // may be empty ("aobj://bucket" or "aobj://bucket/")
  std::string path;  // local
};

// "aobj://bucket/key" is remote; with `bare_is_remote`, "bucket/key" and "bucket" are too.
// INVALID_ARGUMENT for an empty bucket.
absl::StatusOr<Location> ParseLocation(const std::string& arg, bool bare_is_remote);

// A progress bar on stderr: "[=====>    ]  45%  1.2 GiB / 2.6 GiB  1.10 GB/s  ETA 3s  name",
// redrawn at most ten times a second. Does nothing when disabled. Thread-safe: the transfers of
// one `cp` report to one Progress from several threads.
class Progress {
 public:
  Progress(bool enabled, uint64_t total_bytes, uint64_t total_files);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void SetLabel(const std::string& label);
  // When the total was not known at construction (0), sets it once it is.
  void SetTotalIfUnknown(uint64_t total_bytes);
  void Add(uint64_t bytes);
  // Uncounts octets of an attempt that failed and will be sent again (a retried upload).
  void TakeBack(uint64_t bytes);
  void FileDone();
  // Prints `line` on stdout above the bar (the bar is cleared and redrawn around it).
  void Print(const std::string& line);
  // Prints `line` on stderr above the bar.
  void PrintError(const std::string& line);
  // Clears the bar's line, e.g. before an error message; the next update redraws it.
  void Clear();
  void Finish();  // the final line, then a newline
  uint64_t bytes() const;
  absl::Duration elapsed() const { return absl::Now() - start_; }

 private:
  void ClearLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Draw(bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  const bool enabled_;
  uint64_t total_bytes_ ABSL_GUARDED_BY(mu_);
  const uint64_t total_files_;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t files_ ABSL_GUARDED_BY(mu_) = 0;
  std::string label_ ABSL_GUARDED_BY(mu_);
  const absl::Time start_;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_);
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

inline constexpr uint64_t kDefaultMultipartThreshold = uint64_t{64} << 20;
inline constexpr uint64_t kDefaultPartSize = uint64_t{16} << 20;

// One registered buffer reused from file to file by one thread of a `cp`, so that a copy of
// many small files registers memory once per thread rather than once per file. Requests up to
// kKeepBytes reuse (and grow) the kept buffer; larger ones get a buffer of their own, released
// by the next request. Not thread-safe: one per thread. Must not outlive its Client.
class Scratch {
 public:
  static constexpr size_t kKeepBytes = size_t{1} << 20;
  explicit Scratch(Client& client) : client_(client) {}
  // A registered buffer of at least `n` (>= 1) octets, valid until the next call.
  absl::StatusOr<Buffer*> Get(size_t n);

 private:
  Client& client_;
  std::unique_ptr<Buffer> kept_;
  std::unique_ptr<Buffer> large_;
};

// Batched downloads (CliSettings::batch).
inline constexpr size_t kBatchItems = 256;
inline constexpr uint64_t kBatchObjectBytes = uint64_t{256} << 10;

// Uploads the regular file at `path` as bucket/key and returns what the server stored. Every
// upload of `cp` goes through here. Below `multipart_threshold` bytes (0: never multipart) one
// PutObject moves the whole file from one registered buffer. From it on, the file moves as a
// multipart upload (spec section 9.15) of `part_size`-byte parts (larger when the file would need
// more than 10000), read part by part into one buffer per part in flight (at most 4, and the
// session's max_in_flight), each part reported to `progress`; content type, user metadata and
// conditions of `options` apply to the object as for a PUT, and a failure aborts the upload.
absl::StatusOr<ObjectInfo> UploadFile(Client& client, const std::string& path,
                                      const std::string& bucket, const std::string& key,
                                      const PutOptions& options, Progress* progress,
                                      uint64_t multipart_threshold = kDefaultMultipartThreshold,
                                      uint64_t part_size = kDefaultPartSize,
                                      Scratch* scratch = nullptr);

// What a download that failed part of the way keeps for its next attempt: the partial file,
// the version (ETag) and size its octets belong to, and how many it holds in order. The partial
// file is removed when this goes, unless the download completed.
struct DownloadResume {
  std::string partial;
  std::string etag;
  uint64_t object_size = 0;
  uint64_t done = 0;
  DownloadResume() = default;
  DownloadResume(const DownloadResume&) = delete;
  DownloadResume& operator=(const DownloadResume&) = delete;
  ~DownloadResume();
};

// Downloads bucket/key (or settings.range of it) into `path` ("-": standard output). Objects
// larger than settings.chunk_size move in ranged GETs pinned to one version with If-Match, so
// the file never mixes two versions; the file appears whole (renamed into place) or not at all.
// Returns the bytes written. `listed` (the object's listing entry, when the caller has one)
// spares the HEAD of a whole-object download without conditions: the GET is pinned to the
// listed ETag, and a changed object is read again from a HEAD. With `resume`, a failure that
// may pass (Retryable) keeps what was written there, and a call with the same `resume` (on
// this or another session) continues after the last whole chunk, on the same version.
absl::StatusOr<uint64_t> DownloadFile(Client& client, const std::string& bucket,
                                      const std::string& key, const std::string& path,
                                      const CliSettings& settings, Progress* progress,
                                      Scratch* scratch = nullptr,
                                      const ObjectSummary* listed = nullptr,
                                      DownloadResume* resume = nullptr);

// One file or object that cp, mv or sync moves: an upload (from: a local path, to: a key), a
// download (from: a key, to: a local path or "-") or a server-side copy (from a key to a key).
struct Transfer {
  std::string from;
  std::string to;
  uint64_t size = 0;
  // A download's listing entry, when the caller listed: spares the HEAD, and the file's mtime
  // becomes the object's LastModified (as `aws s3` sets it), which sync compares.
  std::optional<ObjectSummary> listed;
  std::string why;  // sync: why it is copied ("new", "size differs" ...), shown by --dryrun
};

enum class TransferKind { kUpload, kDownload, kCopy };

// What a command does, worked out before anything moves.
struct Plan {
  TransferKind kind = TransferKind::kUpload;
  std::string src_bucket;  // downloads and copies
  std::string dst_bucket;  // uploads and copies
  std::vector<Transfer> transfers;
  std::vector<std::string> deletions;  // sync --delete: destination keys, or local paths
  size_t unchanged = 0;                // sync: destinations already the same
  size_t refused = 0;                  // names refused while planning (counted as failures)
};

// An empty plan for copies from `src` to `dst`: an upload, a download or a server-side copy.
Plan PlanBetween(const Location& src, const Location& dst);

// Runs `plan`: the transfers several at once (--jobs) with one progress bar and a summary line
// on stderr, then (when no transfer failed) its deletions. With `move`, each source is deleted
// once its transfer succeeded (mv). With settings.dryrun, prints "(dryrun) upload: ..." lines
// and changes nothing. `verb` names the command in the summary ("sync"; empty: by the kind).
// Returns the exit status.
int ExecutePlan(Client& client, const Plan& plan, const CliSettings& settings, bool move,
                const std::string& verb = "");

// Every object under `prefix` (all pages). With `settings`, a page is asked for again as its
// retry policy says (a restart, a busy server), through a new session where the old one was lost.
absl::StatusOr<std::vector<ObjectSummary>> ListAll(Client& client, const std::string& bucket,
                                                   const std::string& prefix,
                                                   const CliSettings* settings = nullptr);

// "aobj://bucket/key" for messages (names made printable).
std::string Uri(const std::string& bucket, const std::string& key);
// A listing prefix that names a "directory": empty, or ending in '/'.
std::string AsDirectory(std::string prefix);
// Prints "aobj: <msg>" and the hint to --help on stderr; returns 2 (usage error).
int Usage(const std::string& msg);
// Prints "aobj: <what>: <error>" on stderr; returns 1.
int Fail(const std::string& what, const absl::Status& st);

// The commands; each returns the process exit status (0 ok, 1 failed, 2 usage).
int RunCp(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunLs(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunRm(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunMb(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunRb(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunStat(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunMv(Client& client, const std::vector<std::string>& args, const CliSettings& settings);
int RunSync(Client& client, const std::vector<std::string>& args, const CliSettings& settings);

// The key of a downloaded object relative to `prefix` as a safe relative path (no "..", ".",
// empty or absolute components), or "" when the key cannot be written safely below a directory.
std::string SafeRelativePath(const std::string& key, const std::string& prefix);

}  // namespace aobj::cli

#endif  // AOBJ_TOOLS_CLI_S3_H_
