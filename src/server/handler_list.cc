// ListBuckets and ListObjectsV2 (spec sections 9.11 and 9.12).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "wire/listing.h"
#include "wire/names.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

// AOBJ-OBJ-105: prefix, delimiter and start_after are UTF-8 of at most a key's length.
absl::Status CheckListString(absl::string_view field, const std::string& value) {
  if (value.size() > kMaxKeyBytes) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        absl::StrCat(field, " is ", value.size(), " bytes; the limit is ", kMaxKeyBytes));
  }
  if (!IsValidUtf8(value)) {
    return MakeError(ErrorCode::kInvalidArgument, absl::StrCat(field, " is not valid UTF-8"));
  }
  return absl::OkStatus();
}

// A page size from the request: 0 means `fallback`; more than `max` is refused rather than
// silently clamped (AOBJ-OBJ-104, AOBJ-OBJ-112).
absl::StatusOr<uint32_t> PageSize(absl::string_view field, uint32_t requested, uint32_t fallback,
                                  uint32_t max) {
  if (requested == 0) return fallback;
  if (requested > max) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(field, " is ", requested, "; the limit is ", max));
  }
  return requested;
}

}  // namespace

absl::StatusOr<std::string> RequestHandler::ListBuckets(const SessionState& s,
                                                        absl::string_view body) {
  aobj::v1::ListBucketsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(CheckListString("prefix", req.prefix()));
  auto max = PageSize("max_buckets", req.max_buckets(), kDefaultMaxBuckets, kMaxMaxBuckets);
  if (!max.ok()) return max.status();
  const std::string scope = ListScope("ListBuckets", "", req.prefix(), "");
  ListPosition start;
  if (!req.continuation_token().empty()) {
    auto decoded =
        DecodeListToken(list_token_key_, scope, req.continuation_token());  // AOBJ-OBJ-107
    if (!decoded.ok()) return decoded.status();
    if (decoded->kind != ListPosition::Kind::kAfterKey) {
      return MakeError(ErrorCode::kInvalidContinuationToken,
                       "the continuation token is invalid: wrong kind for ListBuckets");
    }
    start = *std::move(decoded);
  }
  auto buckets = store_->ListBuckets();
  if (!buckets.ok()) return buckets.status();
  aobj::v1::ListBucketsResponse resp;
  for (const BucketSummary& b : *buckets) {
    // AOBJ-OBJ-110: ascending by name; only names after the resume point with the prefix.
    if (!(b.name > start.position) || !absl::StartsWith(b.name, req.prefix())) continue;
    // Names the server could not have created (a store's private directories) are not buckets.
    if (!ValidateBucketName(b.name).ok()) continue;
    // AOBJ-SEC-010: only the buckets this principal may read.
    if (authz_ != nullptr && !authz_->Check(s.access_key_id, b.name, BucketAccess::kRead).ok()) {
      continue;
    }
    if (static_cast<uint32_t>(resp.buckets_size()) == *max) {
      resp.set_is_truncated(true);
      resp.set_next_continuation_token(EncodeListToken(
          list_token_key_, scope,
          {ListPosition::Kind::kAfterKey, resp.buckets(resp.buckets_size() - 1).name()}));
      break;
    }
    aobj::v1::BucketEntry* e = resp.add_buckets();
    e->set_name(b.name);
    e->set_creation_time_ms(b.creation_time_ms);  // AOBJ-OBJ-111
  }
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::ListObjectsV2(const SessionState& s,
                                                          absl::string_view body) {
  aobj::v1::ListObjectsV2Request req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  AOBJ_RETURN_IF_ERROR(CheckListString("prefix", req.prefix()));
  AOBJ_RETURN_IF_ERROR(CheckListString("delimiter", req.delimiter()));
  AOBJ_RETURN_IF_ERROR(CheckListString("start_after", req.start_after()));
  // AOBJ-OBJ-159: this server's page limit, at most S3's 1000.
  auto max_keys = PageSize("max_keys", req.max_keys(), std::min(kDefaultMaxKeys, config_.max_list_page),
                           std::min(kMaxMaxKeys, config_.max_list_page));
  if (!max_keys.ok()) return max_keys.status();
  const std::string scope = ListScope("ListObjectsV2", req.bucket(), req.prefix(), req.delimiter());
  ListPosition start{ListPosition::Kind::kAfterKey, req.start_after()};
  if (!req.continuation_token().empty()) {
    // AOBJ-OBJ-107: hostile input, checked before use; AOBJ-OBJ-108: it wins over start_after.
    auto decoded = DecodeListToken(list_token_key_, scope, req.continuation_token());
    if (!decoded.ok()) return decoded.status();
    start = *std::move(decoded);
  }
  const std::string& bucket = req.bucket();
  const std::string& prefix = req.prefix();
  ObjectScan scan = [this, &bucket, &prefix](absl::string_view after, size_t limit) {
    return store_->ListObjects(bucket, prefix, std::string_view(after.data(), after.size()), limit);
  };
  // AOBJ-OBJ-100..103
  auto page = ListObjectsPage(scan, prefix, req.delimiter(), start, *max_keys);
  if (!page.ok()) return page.status();
  aobj::v1::ListObjectsV2Response resp;
  for (const ObjectSummary& o : page->objects) ObjectEntryToProto(o, resp.add_objects());
  for (const std::string& p : page->common_prefixes) resp.add_common_prefixes(p);
  resp.set_is_truncated(page->truncated);
  if (page->truncated) {
    resp.set_next_continuation_token(EncodeListToken(list_token_key_, scope, page->next));
  }
  return Serialize(resp);
}

}  // namespace aobj
