// The multipart-upload requests of RequestHandler (spec section 9.15): request checks and
// conversion between messages and the MultipartManager, which holds the rules and the state.
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "store/multipart.h"
#include "wire/convert.h"
#include "wire/names.h"
#include "wire/user_metadata.h"

namespace aobj {
namespace {

namespace pb = aobj::v1;

// Longest prefix or key marker accepted in a listing: a key's own bound (AOBJ-OBJ-002).
constexpr size_t kMaxListStringBytes = 1024;

// AOBJ-OBJ-201, AOBJ-OBJ-203: an upload ID the server cannot have issued names no upload. Also
// bounds the string before it is used anywhere.
absl::Status CheckUploadId(absl::string_view id) {
  if (!IsWellFormedUploadId(id)) {
    return MakeError(
        ErrorCode::kNoSuchUpload,
        absl::StrCat("upload ID of ", id.size(), " characters is not one this server issued"));
  }
  return absl::OkStatus();
}

absl::Status CheckNames(absl::string_view bucket, absl::string_view key) {
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(bucket));
  return ValidateObjectKey(key);
}

// AOBJ-OBJ-205
absl::Status CheckPartNumber(uint32_t n) {
  if (n == 0) return MakeError(ErrorCode::kInvalidArgument, "part numbers start at 1");
  if (n > kMaxPartNumber) {
    return MakeError(ErrorCode::kTooManyParts,
                     absl::StrCat("part number ", n, " is above ", kMaxPartNumber));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MultipartManager*> RequestHandler::Multipart() {
  if (multipart_ == nullptr) {
    return MakeError(ErrorCode::kInternal, "this server has no multipart upload support");
  }
  return multipart_;
}

absl::StatusOr<MultipartManager*> RequestHandler::UploadScope(const std::string& bucket,
                                                              const std::string& key,
                                                              const std::string& upload_id) {
  AOBJ_RETURN_IF_ERROR(CheckNames(bucket, key));
  AOBJ_RETURN_IF_ERROR(CheckKey(key));
  AOBJ_RETURN_IF_ERROR(CheckUploadId(upload_id));
  return Multipart();
}

absl::StatusOr<std::string> RequestHandler::CreateMultipartUpload(const SessionState& s,
                                                                  absl::string_view body) {
  pb::CreateMultipartUploadRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(CheckNames(req.bucket(), req.key()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
  auto mp = Multipart();
  if (!mp.ok()) return mp.status();
  // The new object's attributes are checked now, as PutObject checks them (AOBJ-OBJ-121).
  auto metadata = NormalizeUserMetadata(req.user_metadata());
  if (!metadata.ok()) return metadata.status();
  WriteOptions attributes;
  attributes.content_type = req.content_type();
  attributes.user_metadata = *std::move(metadata);
  auto upload =
      (*mp)->Create(req.bucket(), req.key(), attributes, s.access_key_id);  // AOBJ-OBJ-200
  if (!upload.ok()) return upload.status();
  if (KeyLogLine(s.access_key_id)) {  // within the key's budget (AOBJ-OPS-010)
    Log(absl::StrCat("event=upload_created bucket=", req.bucket(), " upload=", upload->upload_id));
  }
  pb::CreateMultipartUploadResponse resp;
  resp.set_bucket(upload->bucket);
  resp.set_key(upload->key);
  resp.set_upload_id(upload->upload_id);
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::UploadPart(const SessionState& s,
                                                       absl::string_view body,
                                                       const ActiveCall& call) {
  pb::UploadPartRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  auto mp = UploadScope(req.bucket(), req.key(), req.upload_id());
  if (!mp.ok()) return mp.status();
  AOBJ_RETURN_IF_ERROR(CheckPartNumber(req.part_number()));
  // AOBJ-OBJ-209
  if (req.size() > (*mp)->limits().max_part_size) {
    return MakeError(
        ErrorCode::kEntityTooLarge,
        absl::StrCat("part of ", req.size(), " bytes exceeds the maximum part size of ",
                     (*mp)->limits().max_part_size));
  }
  // AOBJ-OBJ-206: the part's body follows PutObject's rules, checked before anything is admitted.
  const BodyRequest upload = BodyRequest::Of(req);
  auto plan = PlanBody(s, upload);
  if (!plan.ok()) return plan.status();
  // AOBJ-OBJ-254
  if (s.HasCapability(kCapOpaquePartEtag)) plan->etag = BodyPlan::Etag::kOpaquePart;
  auto slot = sessions_->Admit(s.id_hex);  // AOBJ-SES-012: UploadPart is a data request
  if (!slot.ok()) return slot.status();

  // The bucket and the upload exist before any byte is read (AOBJ-OBJ-013).
  auto writer =
      (*mp)->BeginPart(req.bucket(), req.key(), req.upload_id(), req.part_number(), req.size());
  if (!writer.ok()) return writer.status();
  // AOBJ-DAT-150: moved from this request's own descriptors and verified before it is stored.
  auto got = ReceiveBody(s, upload, *plan, writer->get(), call);
  if (!got.ok()) return got.status();
  ObjectInfo info;
  info.size = req.size();
  info.etag = got->etag;  // AOBJ-OBJ-207, AOBJ-OBJ-254
  info.crc32c = got->crc32c;
  auto stored = (*writer)->Commit(info);
  if (!stored.ok()) return stored.status();
  counters_.bytes_in.fetch_add(req.size(), std::memory_order_relaxed);

  pb::UploadPartResponse resp;
  resp.set_bytes_transferred(req.size());  // AOBJ-DAT-151
  resp.set_checksum_algorithm(req.checksum_algorithm());
  resp.set_checksum(got->checksum);
  resp.set_path(plan->path);
  resp.set_etag(stored->etag);
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::CompleteMultipartUpload(const SessionState& s,
                                                                    absl::string_view body) {
  pb::CompleteMultipartUploadRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  auto mp = UploadScope(req.bucket(), req.key(), req.upload_id());
  if (!mp.ok()) return mp.status();
  // AOBJ-OBJ-210: bounded before the list is copied.
  if (static_cast<uint64_t>(req.parts_size()) > kMaxPartNumber) {
    return MakeError(ErrorCode::kTooManyParts, absl::StrCat("the part list has ", req.parts_size(),
                                                            " entries; at most ", kMaxPartNumber));
  }
  std::vector<CompletedPart> parts;
  parts.reserve(req.parts_size());
  for (const pb::CompletedPart& p : req.parts()) parts.push_back({p.part_number(), p.etag()});
  // AOBJ-OBJ-231: PutObject's write conditions, checked early here (AOBJ-OBJ-136) and
  // atomically at the commit (AOBJ-OBJ-134).
  auto conditions =
      PrepareWrite(req.bucket(), req.key(), "", google::protobuf::Map<std::string, std::string>(),
                   req.preconditions());
  if (!conditions.ok()) return conditions.status();
  // AOBJ-OBJ-258: a full-object checksum is CRC32C, the one every part has on record.
  std::optional<uint32_t> expected_crc32c;
  if (req.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_UNSPECIFIED || !req.checksum().empty()) {
    if (req.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_CRC32C) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("the full-object checksum of CompleteMultipartUpload is "
                                    "CRC32C (algorithm 1), not algorithm ",
                                    static_cast<int>(req.checksum_algorithm()),
                                    "; send no checksum to complete without one"));
    }
    if (req.checksum().size() != 4) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("the full-object CRC32C is ", req.checksum().size(),
                                    " octets; it must be 4"));
    }
    expected_crc32c = FromBigEndian32(req.checksum());
  }
  auto info = (*mp)->Complete(req.bucket(), req.key(), req.upload_id(), parts, *conditions,
                              expected_crc32c);  // AOBJ-OBJ-259
  if (!info.ok()) return info.status();
  if (KeyLogLine(s.access_key_id)) {
    Log(absl::StrCat("event=upload_completed bucket=", req.bucket(), " upload=", req.upload_id(),
                     " parts=", parts.size(), " size=", info->size));
  }
  pb::CompleteMultipartUploadResponse resp;
  ObjectInfoToProto(*info, resp.mutable_metadata());
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::AbortMultipartUpload(const SessionState& s,
                                                                 absl::string_view body) {
  pb::AbortMultipartUploadRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  auto mp = UploadScope(req.bucket(), req.key(), req.upload_id());
  if (!mp.ok()) return mp.status();
  AOBJ_RETURN_IF_ERROR((*mp)->Abort(req.bucket(), req.key(), req.upload_id()));  // AOBJ-OBJ-220
  if (KeyLogLine(s.access_key_id)) {
    Log(absl::StrCat("event=upload_aborted bucket=", req.bucket(), " upload=", req.upload_id()));
  }
  return Serialize(pb::AbortMultipartUploadResponse());
}

absl::StatusOr<std::string> RequestHandler::ListParts(const SessionState& s,
                                                      absl::string_view body) {
  pb::ListPartsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  auto mp = UploadScope(req.bucket(), req.key(), req.upload_id());
  if (!mp.ok()) return mp.status();
  // AOBJ-OBJ-221: max_parts is capped by the manager.
  auto page = (*mp)->ListParts(req.bucket(), req.key(), req.upload_id(), req.part_number_marker(),
                               req.max_parts());
  if (!page.ok()) return page.status();
  pb::ListPartsResponse resp;
  for (const PartInfo& p : page->parts) PartEntryToProto(p, resp.add_parts());
  resp.set_is_truncated(page->truncated);
  if (page->truncated) resp.set_next_part_number_marker(page->next_part_number_marker);
  resp.set_content_type(page->upload.content_type);
  resp.set_initiated_ms(page->upload.initiated_ms);
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::ListMultipartUploads(const SessionState& s,
                                                                 absl::string_view body) {
  pb::ListMultipartUploadsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  if (req.prefix().size() > kMaxListStringBytes || req.key_marker().size() > kMaxListStringBytes) {
    return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("prefix and key_marker are at most ",
                                                               kMaxListStringBytes, " bytes"));
  }
  // S3 ignores upload_id_marker without key_marker; a present one must be well formed.
  const std::string id_marker = req.key_marker().empty() ? "" : req.upload_id_marker();
  if (!id_marker.empty() && !IsWellFormedUploadId(id_marker)) {
    return MakeError(ErrorCode::kInvalidArgument, "upload_id_marker is not an upload ID");
  }
  auto mp = Multipart();
  if (!mp.ok()) return mp.status();
  // AOBJ-OBJ-223, AOBJ-OBJ-224
  auto page = (*mp)->ListUploads(req.bucket(), req.prefix(), req.key_marker(), id_marker,
                                 req.max_uploads());
  if (!page.ok()) return page.status();
  pb::ListMultipartUploadsResponse resp;
  for (const UploadInfo& u : page->uploads) UploadEntryToProto(u, resp.add_uploads());
  resp.set_is_truncated(page->truncated);
  if (page->truncated) {
    resp.set_next_key_marker(page->next_key_marker);
    resp.set_next_upload_id_marker(page->next_upload_id_marker);
  }
  return Serialize(resp);
}

}  // namespace aobj
