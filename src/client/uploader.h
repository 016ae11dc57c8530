// MultipartUploader: one object uploaded in parts, several parts at once
// (Client::UploadMultipart). Its plan and its failure policy live here and nowhere else:
//
//   - a part the server refuses because it is busy (SLOW_DOWN, TOO_MANY_TRANSFERS) is sent
//     again by the session's BusyRetryPolicy (session_channel.h), within the operation's
//     deadline; the uploader itself never repeats a part;
//   - any other failure of a part stops the lanes (no new part starts) and aborts the upload
//     (AOBJ-OBJ-229), outside the operation, so that a cancelled or late upload is still
//     aborted (ClientImpl::AbortOutsideOperation);
//   - Complete is never repeated (AOBJ-ERR-122): when it fails the upload is aborted, and an
//     abort that finds no upload means that Complete took effect after all: the object is
//     reported when its ETag is the one these parts make (AOBJ-ERR-121).
#ifndef AOBJ_CLIENT_UPLOADER_H_
#define AOBJ_CLIENT_UPLOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "aobj/client.h"
#include "aobj/multipart.h"
#include "client/async.h"

namespace aobj::client_internal {

class ClientImpl;

// How an object of `size` octets is cut: parts of `part_size` (the last one shorter; an empty
// object is one empty part, as S3 allows), sent over `lanes` threads.
struct UploadPlan {
  uint64_t size = 0;
  uint64_t part_size = 0;
  uint64_t parts = 0;
  uint32_t lanes = 0;

  // INVALID_ARGUMENT for part size 0, a size past the buffer, or more parts than
  // kMaxPartNumber. `parallelism` 0 means the session's max_in_flight, at most 16; never more
  // lanes than the session allows in flight (AOBJ-FLO-001) or than there are parts.
  static absl::StatusOr<UploadPlan> Make(uint64_t buffer_size, uint64_t size, uint64_t part_size,
                                         uint32_t parallelism, uint32_t max_in_flight);
  // Whether the server will take this plan, by the bounds it announced (0: not announced): every
  // part but the last at least min_part_size (else ENTITY_TOO_SMALL, AOBJ-OBJ-235), none above
  // max_part_size and the object not above max_object_size (else ENTITY_TOO_LARGE,
  // AOBJ-OBJ-256). Checked before anything is sent, so no upload is created only to fail.
  absl::Status CheckAgainst(const Limits& announced) const;
  // Octets [offset, offset + length) of the object are part `index` + 1.
  uint64_t offset(uint64_t index) const { return index * part_size; }
  uint64_t length(uint64_t index) const;
};

class MultipartUploader {
 public:
  // Every call runs in `ctx`: its deadline, and (UploadMultipartAsync) its cancellation.
  MultipartUploader(ClientImpl* client, const CallContext& ctx, const std::string& bucket,
                    const std::string& key, const Buffer& buffer, const UploadPlan& plan,
                    const PutOptions& put, const MultipartUploadOptions& options)
      : client_(client),
        ctx_(ctx),
        bucket_(bucket),
        key_(key),
        buffer_(buffer),
        plan_(plan),
        put_(put),
        options_(options) {}

  absl::StatusOr<ObjectInfo> Run();

 private:
  // Every part, over the plan's lanes; the ETags in part order, or the first failure.
  // `crcs` receives each part's CRC32C, in part order.
  absl::StatusOr<std::vector<std::string>> UploadParts(const std::string& upload_id,
                                                       std::vector<uint32_t>* crcs);
  // Complete, with the recovery the policy above describes, naming the CRC32C of the whole
  // content (combined from the parts') for the server to check (AOBJ-OBJ-259, AOBJ-OBJ-260).
  absl::StatusOr<ObjectInfo> Complete(const std::string& upload_id,
                                      const std::vector<std::string>& etags,
                                      const std::vector<uint32_t>& crcs);

  ClientImpl* const client_;
  const CallContext& ctx_;
  const std::string& bucket_;
  const std::string& key_;
  const Buffer& buffer_;
  const UploadPlan plan_;
  const PutOptions& put_;
  const MultipartUploadOptions& options_;
};

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_UPLOADER_H_
