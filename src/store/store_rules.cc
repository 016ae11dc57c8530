#include "store/store_rules.h"

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"

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

absl::Status CheckStoreBucket(std::string_view bucket, const StoreNameRules& rules) {
  if (bucket.empty() || bucket == "." || bucket == ".." ||
      (rules.reserve_dot_names && bucket.front() == '.') ||
      bucket.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidArgument, "invalid bucket name");
  }
  return absl::OkStatus();
}

absl::Status CheckStoreKey(std::string_view bucket, std::string_view key,
                           const StoreNameRules& rules) {
  if (absl::Status s = CheckStoreBucket(bucket, rules); !s.ok()) return s;
  if (key.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty object key");
  if (key.size() > rules.max_key_bytes) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        absl::StrCat("key of ", key.size(), " octets; this store holds keys of at most ",
                     rules.max_key_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckFullObjectCrc32c(std::optional<uint32_t> expected, uint32_t assembled) {
  if (!expected.has_value() || *expected == assembled) return absl::OkStatus();
  return MakeError(ErrorCode::kBadDigest,
                   absl::StrCat("the parts assemble to content whose CRC32C is ",
                                absl::Hex(assembled, absl::kZeroPad8), ", not the ",
                                absl::Hex(*expected, absl::kZeroPad8),
                                " the request names; nothing was stored and the upload is still "
                                "in progress"));
}

absl::Status CheckWriteComplete(uint64_t written, uint64_t size, uint64_t committed_size,
                                std::string_view what) {
  if (written != size) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("only ", written, " of ", size, " ", std::string(what),
                                  " bytes were written"));
  }
  if (committed_size != size) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(std::string(what), " committed with size ", committed_size,
                                  ", not the size ", size, " given when it began"));
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

std::string NewUploadId(absl::Time now) {
  std::string raw(8, '\0');
  const uint64_t micros = static_cast<uint64_t>(absl::ToUnixMicros(now));
  for (int i = 0; i < 8; ++i) raw[i] = static_cast<char>(micros >> (56 - 8 * i));
  raw += RandomBytes(8);
  return HexEncode(raw);
}

}  // namespace aobj
