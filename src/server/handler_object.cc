// HeadObject with conditions, DeleteObjects, and the attributes and conditions of writes
// (spec sections 9.8, 9.10 and 9.13).
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "wire/conditions.h"
#include "wire/names.h"
#include "wire/protocol.h"
#include "wire/user_metadata.h"

namespace aobj {
namespace {

// AOBJ-OBJ-140: S3's limit on the keys of one DeleteObjects.
constexpr int kMaxDeleteKeys = 1000;

}  // namespace

absl::StatusOr<WriteOptions> RequestHandler::PrepareWrite(
    const std::string& bucket, const std::string& key, const std::string& content_type,
    const google::protobuf::Map<std::string, std::string>& user_metadata,
    const aobj::v1::Preconditions& preconditions) {
  // AOBJ-OBJ-121 (size first), AOBJ-OBJ-120, AOBJ-OBJ-123
  auto metadata = NormalizeUserMetadata(user_metadata);
  if (!metadata.ok()) return metadata.status();
  // AOBJ-OBJ-131, AOBJ-OBJ-133
  auto conditions = ConditionsFromProto(preconditions);
  if (!conditions.ok()) return conditions.status();
  AOBJ_RETURN_IF_ERROR(ValidateWriteConditions(*conditions));
  WriteOptions options;
  options.content_type = content_type;
  options.user_metadata = *std::move(metadata);
  options.if_none_match_star = conditions->if_none_match == "*";
  if (!conditions->if_match.empty()) {
    options.if_match_etag = CanonicalEntityTag(conditions->if_match);
  }
  if (!options.if_none_match_star && options.if_match_etag.empty()) return options;

  // AOBJ-OBJ-136: fail early, before any body moves; the store decides at commit.
  auto current = store_->Head(bucket, key);
  if (!current.ok() && ErrorCodeOf(current.status()) != ErrorCode::kNoSuchKey) {
    return current.status();
  }
  if (options.if_none_match_star && current.ok()) {
    return MakeError(ErrorCode::kPreconditionFailed,
                     "precondition failed: If-None-Match \"*\" and the key holds an object");
  }
  if (!options.if_match_etag.empty()) {
    if (!current.ok()) {
      return MakeError(ErrorCode::kNoSuchKey, "If-Match given and the key holds no object");
    }
    if (options.if_match_etag != "*" && options.if_match_etag != current->etag) {
      return MakeError(ErrorCode::kPreconditionFailed,
                       absl::StrCat("precondition failed: If-Match ", options.if_match_etag,
                                    " and the key's etag is ", current->etag));
    }
  }
  return options;
}

absl::StatusOr<std::string> RequestHandler::HeadObject(const SessionState& s,
                                                       absl::string_view body) {
  aobj::v1::HeadObjectRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
  auto conditions = ConditionsFromProto(req.preconditions());  // AOBJ-OBJ-131
  if (!conditions.ok()) return conditions.status();
  // AOBJ-OBJ-138: a missing key is NO_SUCH_KEY before any condition is looked at.
  auto info = store_->Head(req.bucket(), req.key());
  if (!info.ok()) return info.status();
  // AOBJ-OBJ-130
  AOBJ_RETURN_IF_ERROR(EvaluateReadConditions(*conditions, info->etag, info->last_modified_ms));
  aobj::v1::HeadObjectResponse resp;
  ObjectInfoToProto(*info, resp.mutable_metadata());  // AOBJ-OBJ-012, AOBJ-OBJ-122
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::DeleteObjects(const SessionState& s,
                                                          absl::string_view body) {
  aobj::v1::DeleteObjectsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  // AOBJ-OBJ-140
  if (req.keys_size() == 0 || req.keys_size() > kMaxDeleteKeys) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("DeleteObjects takes 1 to ", kMaxDeleteKeys, " keys, not ",
                                  req.keys_size(), " (S3: MalformedXML)"));
  }
  // AOBJ-OBJ-142: a missing bucket fails the whole request.
  AOBJ_RETURN_IF_ERROR(store_->HeadBucket(req.bucket()));
  aobj::v1::DeleteObjectsResponse resp;
  for (const std::string& key : req.keys()) {
    // AOBJ-OBJ-141: each key as DeleteObject; a missing key counts as deleted.
    absl::Status st = CheckKey(key);
    if (st.ok()) st = store_->Delete(req.bucket(), key);
    if (st.ok()) {
      if (!req.quiet()) resp.add_deleted(key);  // AOBJ-OBJ-143
      continue;
    }
    // AOBJ-OBJ-142: a failed key is reported and the others go on. AOBJ-OBJ-144: an invalid key
    // is echoed at most kMaxKeyBytes long, so that the reply stays within the request's size.
    aobj::v1::DeleteObjectsError* e = resp.add_errors();
    e->set_key(TruncateUtf8(key, kMaxKeyBytes));
    FillError(st, e->mutable_error());
  }
  return Serialize(resp);
}

}  // namespace aobj
