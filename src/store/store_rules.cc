#include "store/store_rules.h"

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

absl::Status CheckCommitConditions(const WriteOptions& options, const std::string* current_etag) {
  if (options.if_none_match_star && current_etag != nullptr) {
    return MakeError(ErrorCode::kPreconditionFailed,
                     "precondition failed: If-None-Match \"*\" and the key holds an object");
  }
  if (!options.if_match_etag.empty()) {
    if (current_etag == nullptr) {
      return MakeError(ErrorCode::kNoSuchKey, "If-Match given and the key holds no object");
    }
    if (options.if_match_etag != "*" && options.if_match_etag != *current_etag) {
      return MakeError(ErrorCode::kPreconditionFailed,
                       absl::StrCat("precondition failed: If-Match ", options.if_match_etag,
                                    " and the key's etag is ", *current_etag));
    }
  }
  return absl::OkStatus();
}

std::vector<absl::StatusOr<ObjectInfo>> ObjectStore::CommitBatch(
    absl::Span<ObjectWriter* const> writers, absl::Span<const ObjectInfo> infos) {
  std::vector<absl::StatusOr<ObjectInfo>> out;
  out.reserve(writers.size());
  for (size_t i = 0; i < writers.size(); ++i) {
    out.push_back(i < infos.size() ? writers[i]->Commit(infos[i])
                                   : MakeError(ErrorCode::kInvalidArgument, "no info to commit"));
  }
  return out;
}

absl::Status NoSuchBucket() { return MakeError(ErrorCode::kNoSuchBucket, "no such bucket"); }

}  // namespace aobj
