#include "cli_select.h"

#include <fnmatch.h>

#include "absl/strings/ascii.h"

namespace aobj::cli {

bool Filters::Selects(const std::string& relative) const {
  bool selected = true;
  for (const auto& [include, pattern] : rules_) {
    if (::fnmatch(pattern.c_str(), relative.c_str(), 0) == 0) selected = include;
  }
  return selected;
}

bool HasWildcard(absl::string_view s) { return s.find_first_of("*?[") != absl::string_view::npos; }

WildcardKey SplitWildcard(const std::string& key) {
  WildcardKey w;
  w.pattern = key;
  w.list_prefix = key.substr(0, key.find_first_of("*?["));
  const size_t slash = w.list_prefix.rfind('/');
  w.base = slash == std::string::npos ? "" : w.list_prefix.substr(0, slash + 1);
  return w;
}

bool WildcardMatches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

SyncReason SyncDecision(SyncDirection direction, const SyncSide& source,
                        const std::optional<SyncSide>& destination, const SyncRules& rules) {
  if (!destination) return SyncReason::kMissing;
  if (destination->size != source.size) return SyncReason::kSize;
  if (rules.size_only) return SyncReason::kSame;
  if (rules.compare_etag && !source.md5.empty() && !destination->md5.empty()) {
    return source.md5 == destination->md5 ? SyncReason::kSame : SyncReason::kContent;
  }
  const int64_t src = source.mtime_ms, dst = destination->mtime_ms;
  switch (direction) {
    case SyncDirection::kUpload:
    case SyncDirection::kCopy:
      return src > dst ? SyncReason::kTime : SyncReason::kSame;
    case SyncDirection::kDownload:
      if (rules.exact_timestamps) return src != dst ? SyncReason::kTime : SyncReason::kSame;
      return dst > src ? SyncReason::kTime : SyncReason::kSame;
  }
  return SyncReason::kSame;
}

const char* SyncReasonName(SyncReason reason) {
  switch (reason) {
    case SyncReason::kSame:
      return "unchanged";
    case SyncReason::kMissing:
      return "new";
    case SyncReason::kSize:
      return "size differs";
    case SyncReason::kTime:
      return "time differs";
    case SyncReason::kContent:
      return "content differs";
  }
  return "?";
}

std::string Md5OfEtag(absl::string_view etag) {
  if (etag.size() != 34 || etag.front() != '"' || etag.back() != '"') return "";
  std::string hex(etag.substr(1, 32));
  for (char& c : hex) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return "";
    c = absl::ascii_tolower(static_cast<unsigned char>(c));
  }
  return hex;
}

}  // namespace aobj::cli
