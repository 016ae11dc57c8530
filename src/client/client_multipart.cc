#include "client/client_impl.h"
#include "client/uploader.h"
#include "wire/convert.h"

namespace aobj::client_internal {

absl::StatusOr<UploadInfo> ClientImpl::CreateMultipartUpload(const CallContext& ctx,
                                                             const std::string& bucket,
                                                             const std::string& key,
                                                             const PutOptions& options) {
  pb::CreateMultipartUploadRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_content_type(options.content_type);
  for (const auto& [name, value] : options.user_metadata) {
    (*req.mutable_user_metadata())[name] = value;
  }
  pb::CreateMultipartUploadResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kCreateMultipartUpload, req, &resp); !s.ok())
    return s;
  if (resp.upload_id().empty()) {
    return MakeError(ErrorCode::kInternal, "server sent an empty upload ID");
  }
  UploadInfo info;
  info.bucket = bucket;
  info.key = key;
  info.upload_id = resp.upload_id();
  info.content_type = options.content_type;
  info.user_metadata = options.user_metadata;
  return info;
}

absl::StatusOr<UploadPartResult> ClientImpl::UploadPart(const CallContext& ctx,
                                                        const std::string& bucket,
                                                        const std::string& key,
                                                        const std::string& upload_id,
                                                        uint32_t part_number, const Buffer& buffer,
                                                        uint64_t offset, uint64_t size) {
  if (offset > buffer.size() || size > buffer.size() - offset) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("part [", offset, ", +", size, ") exceeds the buffer's ",
                                  buffer.size(), " bytes"));
  }
  AOBJ_RETURN_IF_ERROR(buffers_.Issued(buffer).status());
  const std::string checksum = ChecksumOf(options_.checksum, {{&buffer, offset, size}}, size);
  pb::UploadPartRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_upload_id(upload_id);
  req.set_part_number(part_number);
  req.set_size(size);
  req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
  req.set_checksum(checksum);
  pb::UploadPartResponse resp;
  AOBJ_RETURN_IF_ERROR(
      SendBody(ctx, Method::kUploadPart, {{&buffer, offset, size}}, size, checksum, &req, &resp));
  UploadPartResult result;
  result.etag = resp.etag();
  result.bytes_transferred = resp.bytes_transferred();
  result.path = static_cast<TransferPath>(resp.path());
  // AOBJ-OBJ-260: the part's CRC32C for the full-object checksum (a second pass over the part
  // only when this client checksums its parts under another algorithm).
  result.crc32c = FromBigEndian32(
      options_.checksum == ChecksumAlgorithm::kCrc32c
          ? checksum
          : ChecksumOf(ChecksumAlgorithm::kCrc32c, {{&buffer, offset, size}}, size));
  return result;
}

absl::StatusOr<ObjectInfo> ClientImpl::CompleteMultipartUpload(
    const CallContext& ctx, const std::string& bucket, const std::string& key,
    const std::string& upload_id, const std::vector<CompletedPart>& parts,
    const Preconditions& conditions, std::optional<uint32_t> full_crc32c) {
  pb::CompleteMultipartUploadRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_upload_id(upload_id);
  SetPreconditions(conditions, &req);
  if (full_crc32c.has_value()) {  // AOBJ-OBJ-258
    req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
    req.set_checksum(BigEndian32(*full_crc32c));
  }
  for (const CompletedPart& p : parts) {
    pb::CompletedPart* c = req.add_parts();
    c->set_part_number(p.part_number);
    c->set_etag(p.etag);
  }
  pb::CompleteMultipartUploadResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kCompleteMultipartUpload, req, &resp); !s.ok())
    return s;
  return ObjectInfoFromProto(resp.metadata());
}

absl::Status ClientImpl::AbortMultipartUpload(const CallContext& ctx, const std::string& bucket,
                                              const std::string& key,
                                              const std::string& upload_id) {
  pb::AbortMultipartUploadRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_upload_id(upload_id);
  pb::AbortMultipartUploadResponse resp;
  return session_.Call(ctx, Method::kAbortMultipartUpload, req, &resp);
}

absl::StatusOr<PartsPage> ClientImpl::ListParts(const CallContext& ctx, const std::string& bucket,
                                                const std::string& key,
                                                const std::string& upload_id,
                                                uint32_t part_number_marker, uint32_t max_parts) {
  pb::ListPartsRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_upload_id(upload_id);
  req.set_part_number_marker(part_number_marker);
  req.set_max_parts(max_parts);
  pb::ListPartsResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kListParts, req, &resp); !s.ok()) return s;
  PartsPage page;
  page.upload.bucket = bucket;
  page.upload.key = key;
  page.upload.upload_id = upload_id;
  page.upload.content_type = resp.content_type();
  page.upload.initiated_ms = resp.initiated_ms();
  for (const pb::PartEntry& e : resp.parts()) page.parts.push_back(PartEntryFromProto(e));
  page.truncated = resp.is_truncated();
  page.next_part_number_marker = resp.next_part_number_marker();
  return page;
}

absl::StatusOr<UploadsPage> ClientImpl::ListMultipartUploads(const CallContext& ctx,
                                                             const std::string& bucket,
                                                             const ListUploadsOptions& options) {
  pb::ListMultipartUploadsRequest req;
  req.set_bucket(bucket);
  req.set_prefix(options.prefix);
  req.set_key_marker(options.key_marker);
  req.set_upload_id_marker(options.upload_id_marker);
  req.set_max_uploads(options.max_uploads);
  pb::ListMultipartUploadsResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kListMultipartUploads, req, &resp); !s.ok())
    return s;
  UploadsPage page;
  for (const pb::UploadEntry& e : resp.uploads()) {
    page.uploads.push_back(UploadEntryFromProto(e, bucket));
  }
  page.truncated = resp.is_truncated();
  page.next_key_marker = resp.next_key_marker();
  page.next_upload_id_marker = resp.next_upload_id_marker();
  return page;
}

absl::StatusOr<ObjectInfo> ClientImpl::UploadMultipart(const CallContext& ctx,
                                                       const std::string& bucket,
                                                       const std::string& key, const Buffer& buffer,
                                                       uint64_t size, uint64_t part_size,
                                                       const PutOptions& put,
                                                       const MultipartUploadOptions& options) {
  absl::StatusOr<UploadPlan> plan = UploadPlan::Make(
      buffer.size(), size, part_size, options.parallelism, session_.info().limits.max_in_flight);
  if (!plan.ok()) return plan.status();
  AOBJ_RETURN_IF_ERROR(plan->CheckAgainst(session_.info().limits));
  return MultipartUploader(this, ctx, bucket, key, buffer, *plan, put, options).Run();
}

absl::Status ClientImpl::AbortOutsideOperation(const std::string& bucket, const std::string& key,
                                               const std::string& upload_id) {
  return AbortMultipartUpload(CallContext(), bucket, key, upload_id);
}

}  // namespace aobj::client_internal
