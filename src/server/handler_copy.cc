// CopyObject (spec section 9.14): a server-side copy through the store, never through the data
// channel (AOBJ-OBJ-158: no client memory is touched and no in-flight slot is taken). The bytes
// stream from an ObjectReader into an ObjectWriter while their MD5 (the new ETag) and CRC32C
// (checked against the source's recorded one) are computed.
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "server/staged_transfer.h"
#include "wire/checksum.h"
#include "wire/conditions.h"
#include "wire/crypto.h"
#include "wire/names.h"
#include "wire/user_metadata.h"

namespace aobj {

absl::StatusOr<std::string> RequestHandler::CopyObject(const SessionState& s,
                                                       absl::string_view body) {
  aobj::v1::CopyObjectRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.source_bucket()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.source_key()));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
  bool replace = false;
  switch (req.metadata_directive()) {
    case aobj::v1::METADATA_DIRECTIVE_UNSPECIFIED:
    case aobj::v1::METADATA_DIRECTIVE_COPY:
      // AOBJ-OBJ-154: attributes that COPY would silently drop are refused.
      if (!req.content_type().empty() || !req.user_metadata().empty()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "content_type and user_metadata need metadata_directive REPLACE");
      }
      break;
    case aobj::v1::METADATA_DIRECTIVE_REPLACE:
      replace = true;
      break;
    default:
      return MakeError(
          ErrorCode::kInvalidArgument,
          absl::StrCat("unknown metadata_directive ", static_cast<int>(req.metadata_directive())));
  }
  // AOBJ-OBJ-151: S3 refuses a copy onto itself that changes nothing.
  if (!replace && req.source_bucket() == req.bucket() && req.source_key() == req.key()) {
    return MakeError(ErrorCode::kInvalidRequest,
                     "copying an object onto itself needs metadata_directive REPLACE");
  }
  auto source_conditions = ConditionsFromProto(req.source_preconditions());  // AOBJ-OBJ-131
  if (!source_conditions.ok()) return source_conditions.status();

  auto reader = store_->OpenRead(req.source_bucket(), req.source_key());
  if (!reader.ok()) return reader.status();
  const ObjectInfo& source = (*reader)->info();
  // AOBJ-OBJ-152: on the version being copied.
  AOBJ_RETURN_IF_ERROR(
      EvaluateCopySourceConditions(*source_conditions, source.etag, source.last_modified_ms));
  // AOBJ-OBJ-156
  if (source.size > s.limits.max_transfer_bytes) {
    return MakeError(
        ErrorCode::kEntityTooLarge,
        absl::StrCat("source of ", source.size, " bytes exceeds the session's limit of ",
                     s.limits.max_transfer_bytes));
  }
  google::protobuf::Map<std::string, std::string> source_metadata;
  if (!replace) UserMetadataToProto(source.user_metadata, &source_metadata);
  // AOBJ-OBJ-150, AOBJ-OBJ-153
  auto options =
      PrepareWrite(req.bucket(), req.key(), replace ? req.content_type() : source.content_type,
                   replace ? req.user_metadata() : source_metadata, req.preconditions());
  if (!options.ok()) return options.status();
  auto writer = store_->BeginPut(req.bucket(), req.key(), source.size, *options);
  if (!writer.ok()) return writer.status();

  Md5 md5;
  uint32_t crc = 0;
  const uint64_t size = source.size;
  absl::Span<const uint8_t> view = (*reader)->ContiguousView();
  absl::Span<uint8_t> direct = (*writer)->DirectBuffer();
  if (size == 0) {
    // Nothing to move.
  } else if (!view.empty() && !direct.empty()) {
    std::memcpy(direct.data(), view.data(), size);
    md5.Update(direct.data(), size);
    crc = Crc32c(0, direct.data(), size);
  } else if (!view.empty()) {
    md5.Update(view.data(), size);
    crc = Crc32c(0, view.data(), size);
    AOBJ_RETURN_IF_ERROR((*writer)->Append(view));
  } else {
    // Staged (server/staged_transfer.h), store to store: the next chunk is read and hashed on a
    // helper thread while this one is appended (into the writer's own buffer when it has one).
    auto read = [&](uint8_t* to, uint64_t off, uint64_t n) -> absl::Status {
      auto got = (*reader)->ReadAt(off, {to, static_cast<size_t>(n)});
      if (!got.ok()) return got.status();
      if (*got != n)
        return MakeError(ErrorCode::kStorageError, "source object shorter than recorded");
      md5.Update(to, n);
      crc = Crc32c(crc, to, n);
      return absl::OkStatus();
    };
    auto append = [&](uint8_t* from, uint64_t, uint64_t n) -> absl::Status {
      if (!direct.empty()) return absl::OkStatus();  // already in place
      return (*writer)->Append({from, static_cast<size_t>(n)});
    };
    // On an error the writer is dropped; nothing is committed.
    AOBJ_RETURN_IF_ERROR(RunStaged(staging_, size, StageOrder::kIoFirst, direct, append, read));
  }
  // AOBJ-OBJ-157: the bytes read are the bytes the source's PUT recorded.
  if (crc != source.crc32c) {
    return MakeError(ErrorCode::kStorageError,
                     "the source object's content does not match its recorded CRC32C; nothing "
                     "was copied");
  }
  ObjectInfo info;
  info.size = size;
  info.etag = absl::StrCat("\"", HexEncode(md5.Finish()), "\"");  // AOBJ-OBJ-150
  info.crc32c = crc;
  auto committed = (*writer)->Commit(info);  // AOBJ-OBJ-010, AOBJ-OBJ-134
  if (!committed.ok()) return committed.status();
  aobj::v1::CopyObjectResponse resp;
  ObjectInfoToProto(*committed, resp.mutable_metadata());
  return Serialize(resp);
}

}  // namespace aobj
