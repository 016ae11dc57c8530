// MultipartUploader (uploader.h).
#include "client/uploader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/client_impl.h"
#include "exec/helpers.h"
#include "wire/checksum.h"
#include "wire/etag.h"

namespace aobj::client_internal {

absl::StatusOr<UploadPlan> UploadPlan::Make(uint64_t buffer_size, uint64_t size, uint64_t part_size,
                                            uint32_t parallelism, uint32_t max_in_flight) {
  if (part_size == 0) return MakeError(ErrorCode::kInvalidArgument, "part size 0");
  if (size > buffer_size) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("size ", size, " exceeds the buffer's ", buffer_size));
  }
  UploadPlan plan;
  plan.size = size;
  plan.part_size = part_size;
  plan.parts = size == 0 ? 1 : size / part_size + (size % part_size != 0 ? 1 : 0);
  if (plan.parts > kMaxPartNumber) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(size, " bytes in parts of ", part_size, " make ", plan.parts,
                                  " parts; at most ", kMaxPartNumber));
  }
  const uint32_t lanes = parallelism != 0 ? parallelism : std::min<uint32_t>(max_in_flight, 16);
  plan.lanes = static_cast<uint32_t>(
      std::clamp<uint64_t>(std::min<uint64_t>(lanes, max_in_flight), 1, plan.parts));
  return plan;
}

absl::Status UploadPlan::CheckAgainst(const Limits& announced) const {
  const uint64_t largest = parts == 1 ? size : part_size;
  if (announced.max_part_size != 0 && largest > announced.max_part_size) {
    return MakeError(
        ErrorCode::kEntityTooLarge,
        absl::StrCat("parts of ", largest, " octets; the server takes parts of at most ",
                     announced.max_part_size, " (Limits.max_part_size)"));
  }
  if (announced.min_part_size != 0 && parts > 1 && part_size < announced.min_part_size) {
    return MakeError(ErrorCode::kEntityTooSmall,
                     absl::StrCat("parts of ", part_size,
                                  " octets; every part but the last must "
                                  "hold at least ",
                                  announced.min_part_size, " (Limits.min_part_size)"));
  }
  if (announced.max_object_size != 0 && size > announced.max_object_size) {
    return MakeError(ErrorCode::kEntityTooLarge,
                     absl::StrCat("an object of ", size, " octets; the server takes at most ",
                                  announced.max_object_size, " (Limits.max_object_size)"));
  }
  return absl::OkStatus();
}

uint64_t UploadPlan::length(uint64_t index) const {
  return size == 0 ? 0 : std::min(part_size, size - offset(index));
}

absl::StatusOr<ObjectInfo> MultipartUploader::Run() {
  auto upload = client_->CreateMultipartUpload(ctx_, bucket_, key_, put_);
  if (!upload.ok()) return upload.status();
  const std::string& id = upload->upload_id;
  std::vector<uint32_t> crcs;
  absl::StatusOr<std::vector<std::string>> etags = UploadParts(id, &crcs);
  if (!etags.ok()) {
    client_->AbortOutsideOperation(bucket_, key_, id).IgnoreError();  // AOBJ-OBJ-229
    return etags.status();
  }
  return Complete(id, *etags, crcs);
}

absl::StatusOr<std::vector<std::string>> MultipartUploader::UploadParts(
    const std::string& upload_id, std::vector<uint32_t>* crcs) {
  std::vector<std::string> etags(plan_.parts);
  crcs->assign(plan_.parts, 0);
  absl::Mutex mu;
  uint64_t next = 0;         // guarded by mu
  uint64_t done_bytes = 0;   // guarded by mu
  absl::Status first_error;  // guarded by mu
  auto lane = [&] {
    for (;;) {
      uint64_t i;
      {
        absl::MutexLock l(&mu);
        if (!first_error.ok() || next == plan_.parts) return;
        i = next++;
      }
      const uint64_t len = plan_.length(i);
      absl::StatusOr<UploadPartResult> r =
          client_->UploadPart(ctx_, bucket_, key_, upload_id, static_cast<uint32_t>(i + 1), buffer_,
                              plan_.offset(i), len);
      absl::MutexLock l(&mu);
      if (!r.ok()) {
        if (first_error.ok()) first_error = r.status();
        return;
      }
      etags[i] = r->etag;
      (*crcs)[i] = r->crc32c;
      done_bytes += len;
      if (options_.progress) options_.progress(done_bytes, plan_.size);
    }
  };
  RunInParallel(plan_.lanes, [&](size_t) { lane(); });
  if (!first_error.ok()) return first_error;
  return etags;
}

absl::StatusOr<ObjectInfo> MultipartUploader::Complete(const std::string& upload_id,
                                                       const std::vector<std::string>& etags,
                                                       const std::vector<uint32_t>& crcs) {
  std::vector<CompletedPart> parts(etags.size());
  uint32_t whole = 0;
  for (uint64_t i = 0; i < etags.size(); ++i) {
    parts[i] = {static_cast<uint32_t>(i + 1), etags[i]};
    whole = Crc32cCombine(whole, crcs[i], plan_.length(i));
  }
  auto completed = client_->CompleteMultipartUpload(ctx_, bucket_, key_, upload_id, parts,
                                                    put_.conditions, whole);
  if (completed.ok()) return completed;
  // The outcome may be unknown (no reply): an abort that finds no upload means the upload
  // was completed, and the object then carries the ETag we expect (AOBJ-ERR-121).
  absl::Status aborted = client_->AbortOutsideOperation(bucket_, key_, upload_id);
  if (ErrorCodeOf(aborted) == ErrorCode::kNoSuchUpload) {
    auto expected = MultipartEtag(etags);
    auto head = client_->Head(ctx_, bucket_, key_);
    if (expected.ok() && head.ok() && head->etag == *expected) return *head;
  }
  return completed.status();
}

}  // namespace aobj::client_internal
