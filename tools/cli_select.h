// Which files and objects a command of the `aobj` CLI touches, and what `sync` does with each:
// --exclude/--include filters and wildcards as `aws s3` and s5cmd users know them, and sync's
// comparison of a source with its destination. Pure functions: no I/O, no client.
#ifndef AOBJ_TOOLS_CLI_SELECT_H_
#define AOBJ_TOOLS_CLI_SELECT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace aobj::cli {

// --exclude and --include in the order given on the command line. As in `aws s3`, everything is
// selected until a filter says otherwise, and the last filter that matches a name decides.
// Patterns are fnmatch(3) globs matched against the name relative to the command's source
// directory or prefix ("sub/a.txt"): '*' matches any run of characters, '/' included; '?' one
// character; "[...]" a class; '\' quotes the next character.
class Filters {
 public:
  void Exclude(std::string pattern) { rules_.emplace_back(false, std::move(pattern)); }
  void Include(std::string pattern) { rules_.emplace_back(true, std::move(pattern)); }
  bool Selects(const std::string& relative) const;
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<std::pair<bool, std::string>> rules_;  // (include, pattern)
};

// Whether `s` holds a wildcard character ('*', '?' or '[').
bool HasWildcard(absl::string_view s);

// A key with wildcards (s5cmd's "aobj://bucket/logs/2026-*/*.gz"): the prefix to list (what
// precedes the first wildcard character) and the base that names are relative to (the same,
// cut after its last '/'), so that "logs/2026-11/a.gz" lands at "2026-11/a.gz" below a target
// directory. The pattern is the whole key, matched with '*' across '/' as in Filters.
struct WildcardKey {
  std::string list_prefix;
  std::string base;
  std::string pattern;
};
WildcardKey SplitWildcard(const std::string& key);
bool WildcardMatches(const std::string& pattern, const std::string& name);

// What sync knows of one side of a pair: size, modification time in Unix milliseconds (a
// file's mtime, an object's LastModified), and the content's MD5 in lower-case hex when known
// (an object's single-part S3 ETag; a local file's, computed with --compare-etag).
struct SyncSide {
  uint64_t size = 0;
  int64_t mtime_ms = 0;
  std::string md5;
};

enum class SyncDirection { kUpload, kDownload, kCopy };

struct SyncRules {
  bool size_only = false;         // --size-only: equal sizes are the same file
  bool exact_timestamps = false;  // --exact-timestamps: downloads copy unless times are equal
  bool compare_etag = false;      // --compare-etag: contents by MD5 where both sides have one
};

// Why sync copies a source over its destination, or kSame when it leaves the destination.
enum class SyncReason { kSame, kMissing, kSize, kTime, kContent };

// The decision of `aws s3 sync`, which its users expect: copy when the destination is missing or
// differs in size; else, unless --size-only, when the source is newer (an upload or a copy), or
// for a download when the local file is newer than the object (its mtime is set to the
// object's LastModified when it is downloaded, so a file written by sync is left alone; with
// --exact-timestamps whenever the times differ). With --compare-etag and an MD5 on both sides,
// the contents decide instead of the times.
SyncReason SyncDecision(SyncDirection direction, const SyncSide& source,
                        const std::optional<SyncSide>& destination, const SyncRules& rules);
const char* SyncReasonName(SyncReason reason);

// The MD5 in lower-case hex of an S3 ETag that is one ("\"9e107d9d372bb6826bd81d3542a419d6\""),
// or "" for a multipart ETag ("...-3"), an opaque one ("...-0") or anything else.
std::string Md5OfEtag(absl::string_view etag);

}  // namespace aobj::cli

#endif  // AOBJ_TOOLS_CLI_SELECT_H_
