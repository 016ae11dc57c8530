// `aobj sync SRC DST`: makes a destination directory or prefix hold what its source holds, as
// `aws s3 sync` does: a local directory to a prefix, a prefix to a local directory, or a prefix
// to another (server-side copies). What is copied is decided by SyncDecision (cli_select.h);
// with --delete, what the destination has and the source lacks goes, once every copy succeeded.
// Filters apply to both sides: an excluded name is neither copied nor deleted.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_s3.h"
#include "tool_util.h"
#include "wire/crypto.h"

namespace aobj::cli {
namespace {

namespace fs = std::filesystem;

// One file or object of either side, by its name relative to the side's directory or prefix.
struct Entry {
  SyncSide side;
  std::string name;                     // the local path, or the key
  std::optional<ObjectSummary> listed;  // objects: the listing entry
};
using Entries = std::map<std::string, Entry>;

// The regular files below `root` that the filters select; none when `root` does not exist.
absl::StatusOr<Entries> LocalEntries(const std::string& root, const Filters& filters) {
  Entries out;
  std::error_code ec;
  if (!fs::exists(root, ec)) return out;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (!filters.Selects(rel)) continue;
    struct stat sb {};
    if (::stat(it->path().c_str(), &sb) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("stat ", it->path().string(), ": ", std::strerror(errno)));
    }
    Entry e;
    e.name = it->path().string();
    e.side.size = static_cast<uint64_t>(sb.st_size);
    e.side.mtime_ms = static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000 + sb.st_mtim.tv_nsec / 1000000;
    out.emplace(rel, std::move(e));
  }
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat("walk ", root, ": ", ec.message()));
  }
  return out;
}

// The objects under `prefix` that the filters select, "directory" markers left out.
absl::StatusOr<Entries> RemoteEntries(Client& client, const std::string& bucket,
                                      const std::string& prefix, const CliSettings& settings) {
  const Filters& filters = settings.filters;
  absl::StatusOr<std::vector<ObjectSummary>> objects = ListAll(client, bucket, prefix, &settings);
  if (!objects.ok()) return objects.status();
  Entries out;
  for (ObjectSummary& o : *objects) {
    if (o.key.back() == '/' && o.size == 0) continue;
    const std::string rel = o.key.substr(prefix.size());
    if (!filters.Selects(rel)) continue;
    Entry e;
    e.name = o.key;
    e.side.size = o.size;
    e.side.mtime_ms = o.last_modified_ms;
    e.side.md5 = Md5OfEtag(o.etag);
    e.listed = std::move(o);
    out.emplace(rel, std::move(e));
  }
  return out;
}

// The MD5 of a local file in lower-case hex (--compare-etag), or "" when it cannot be read.
std::string FileMd5(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  Md5 md5;
  std::vector<char> buf(size_t{1} << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) md5.Update(buf.data(), n);
  const bool ok = std::ferror(f) == 0;
  std::fclose(f);
  return ok ? HexEncode(md5.Finish()) : "";
}

}  // namespace

int RunSync(Client& client, const std::vector<std::string>& args, const CliSettings& settings) {
  if (args.size() != 2) {
    return Usage("usage: aobj sync SRC DST [--delete] [--dryrun] [--size-only] [--exclude P]");
  }
  absl::StatusOr<Location> src = ParseLocation(args[0], false);
  absl::StatusOr<Location> dst = ParseLocation(args[1], false);
  if (!src.ok()) return Usage(std::string(src.status().message()));
  if (!dst.ok()) return Usage(std::string(dst.status().message()));
  if (!src->remote && !dst->remote) {
    return Usage("sync needs an aobj://BUCKET/PREFIX source or destination");
  }
  std::error_code ec;
  if (!src->remote && !fs::is_directory(src->path, ec)) {
    return Usage(src->path + " is not a directory (sync copies a directory's files)");
  }
  if (!dst->remote && dst->path == "-") return Usage("sync cannot write to standard output");
  if (HasWildcard(src->remote ? src->key : "")) {
    return Usage("sync takes a prefix, not a wildcard (use --exclude and --include)");
  }
  Plan plan = PlanBetween(*src, *dst);
  const std::string src_prefix = AsDirectory(src->key), dst_prefix = AsDirectory(dst->key);
  absl::StatusOr<Entries> from = src->remote
                                     ? RemoteEntries(client, src->bucket, src_prefix, settings)
                                     : LocalEntries(src->path, settings.filters);
  if (!from.ok()) return Fail("sync: list " + tools::Printable(args[0]), from.status());
  absl::StatusOr<Entries> to = dst->remote
                                   ? RemoteEntries(client, dst->bucket, dst_prefix, settings)
                                   : LocalEntries(dst->path, settings.filters);
  if (!to.ok()) return Fail("sync: list " + tools::Printable(args[1]), to.status());

  const SyncDirection direction = plan.kind == TransferKind::kUpload     ? SyncDirection::kUpload
                                  : plan.kind == TransferKind::kDownload ? SyncDirection::kDownload
                                                                         : SyncDirection::kCopy;
  for (auto& [rel, source] : *from) {
    auto there = to->find(rel);
    std::optional<SyncSide> existing;
    if (there != to->end()) {
      existing = there->second.side;
      // --compare-etag: the local side's MD5, only where it can decide (same size, an MD5 ETag
      // on the other side).
      if (settings.sync.compare_etag && existing->size == source.side.size) {
        if (!src->remote && !existing->md5.empty()) source.side.md5 = FileMd5(source.name);
        if (!dst->remote && !source.side.md5.empty()) existing->md5 = FileMd5(there->second.name);
      }
    }
    const SyncReason reason = SyncDecision(direction, source.side, existing, settings.sync);
    if (reason == SyncReason::kSame) {
      ++plan.unchanged;
      continue;
    }
    Transfer t;
    t.why = SyncReasonName(reason);
    t.from = source.name;
    t.size = source.side.size;
    if (dst->remote) {
      t.to = dst_prefix + rel;
    } else {
      // Keys are the server's to choose: never let one write outside the target directory.
      const std::string safe = SafeRelativePath(source.name, src_prefix);
      if (safe.empty()) {
        std::cerr << "aobj: skipping " << Uri(src->bucket, source.name)
                  << ": not a safe relative path below " << tools::Printable(dst->path) << "\n";
        ++plan.refused;
        continue;
      }
      t.to = (fs::path(dst->path) / safe).string();
      t.listed = source.listed;
    }
    plan.transfers.push_back(std::move(t));
  }
  if (settings.delete_extra) {
    for (const auto& [rel, extra] : *to) {
      if (from->count(rel) == 0) plan.deletions.push_back(extra.name);
    }
  }
  return ExecutePlan(client, plan, settings, /*move=*/false, "sync");
}

}  // namespace aobj::cli
