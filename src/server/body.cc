// Receiving an uploaded body (PutObject, UploadPart): validation of the body fields, the transfer
// by RMA or inline into an ObjectWriter, and the checksum comparison (spec sections 8.3-8.6).
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "server/staged_transfer.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/descriptor.h"
#include "wire/etag.h"

namespace aobj {

absl::StatusOr<BodyPlan> RequestHandler::PlanBody(const SessionState& s, const BodyRequest& body) {
  const uint64_t size = body.size;
  // AOBJ-DAT-006
  if (size > s.limits.max_transfer_bytes) {
    return MakeError(ErrorCode::kEntityTooLarge,
                     absl::StrCat("object of ", size, " bytes exceeds the session's limit of ",
                                  s.limits.max_transfer_bytes));
  }
  BodyPlan plan;
  // AOBJ-DAT-020
  auto algo = SessionChecksum(s, body.checksum_algorithm, /*default_crc32c=*/false);
  if (!algo.ok()) return algo.status();
  plan.algo = *algo;
  if (body.checksum->size() != ChecksumSize(*algo)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("checksum is ", body.checksum->size(), " bytes; ",
                                  ChecksumName(*algo), " takes ", ChecksumSize(*algo)));
  }
  plan.path = aobj::v1::TRANSFER_PATH_RMA;
  if (size == 0) {
    plan.path = aobj::v1::TRANSFER_PATH_NONE;  // AOBJ-DAT-011
    if (!body.inline_data->empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "inline_data given for a zero-byte body");
    }
  } else if (!body.inline_data->empty()) {
    // AOBJ-DAT-007
    if (body.source->size() > 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "a request carries either inline_data or descriptors, not both");
    }
    if (!s.HasCapability(kCapInline)) {
      return MakeError(ErrorCode::kInvalidArgument, "inline bodies were not negotiated");
    }
    if (size > s.limits.inline_threshold) {
      return MakeError(ErrorCode::kEntityTooLarge,
                       absl::StrCat("inline body of ", size, " bytes exceeds the threshold of ",
                                    s.limits.inline_threshold));
    }
    if (body.inline_data->size() != size) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          absl::StrCat("inline_data is ", body.inline_data->size(), " bytes; size says ", size));
    }
    plan.path = aobj::v1::TRANSFER_PATH_INLINE;
  } else if (body.source->size() == 0) {
    // AOBJ-MEM-022
    return MakeError(ErrorCode::kInvalidDescriptor,
                     "a non-empty body needs descriptors or inline data");
  }
  if (plan.path == aobj::v1::TRANSFER_PATH_RMA) {
    AOBJ_RETURN_IF_ERROR(CheckWindows(s, *body.source));
    auto planned = PlanTransfer(*body.source, size, config_.max_rma_piece);  // AOBJ-MEM-008
    if (!planned.ok()) return planned.status();
    plan.pieces = std::move(*planned);
  }
  return plan;
}

absl::StatusOr<ReceivedBody> RequestHandler::ReceiveBody(const SessionState& s,
                                                         const BodyRequest& body,
                                                         const BodyPlan& plan,
                                                         ObjectWriter* writer,
                                                         const ActiveCall& call) {
  const uint64_t size = body.size;
  const ChecksumAlgorithm algo = plan.algo;
  Checksummer sum(algo);
  Checksummer crc32c(ChecksumAlgorithm::kCrc32c);
  Md5 md5;
  const bool want_md5 = plan.etag == BodyPlan::Etag::kMd5;
  auto account = [&](const uint8_t* data, size_t n) {
    sum.Update(data, n);
    if (algo != ChecksumAlgorithm::kCrc32c) crc32c.Update(data, n);
    if (want_md5) md5.Update(data, n);
  };
  if (plan.path == aobj::v1::TRANSFER_PATH_INLINE) {
    const auto* data = reinterpret_cast<const uint8_t*>(body.inline_data->data());
    account(data, size);
    AOBJ_RETURN_IF_ERROR(writer->Append({data, size}));
  } else if (plan.path == aobj::v1::TRANSFER_PATH_RMA) {
    // Staged (server/staged_transfer.h): the checksums (and, for a store without a direct
    // buffer, the append) of one chunk run on a helper thread while the next one travels, so a
    // large PUT costs about max(transfer, MD5) rather than their sum.
    absl::Span<uint8_t> direct = writer->DirectBuffer();
    auto receive = [&](uint8_t* dst, uint64_t off, uint64_t n) {
      RmaBatch batch = MakeBatch(RmaDirection::kRead, *body.source, plan.pieces, off, n, dst,
                                 s.limits.max_rkey_bytes);
      return ExecuteRma(s, batch, call);  // AOBJ-DAT-016
    };
    auto store = [&](uint8_t* dst, uint64_t, uint64_t n) -> absl::Status {
      account(dst, n);
      return direct.empty() ? writer->Append({dst, static_cast<size_t>(n)}) : absl::OkStatus();
    };
    // AOBJ-DAT-002: everything read and verified before anything is committed; AOBJ-DAT-010: on
    // error the writer is dropped and nothing is committed.
    AOBJ_RETURN_IF_ERROR(
        RunStaged(staging_, size, StageOrder::kTransferFirst, direct, receive, store));
  }
  ReceivedBody got;
  got.checksum = sum.Finish();
  // AOBJ-DAT-005
  if (got.checksum != *body.checksum) {
    return MakeError(
        ErrorCode::kBadDigest,
        absl::StrCat(ChecksumName(algo), " of the received body is ", HexEncode(got.checksum),
                     ", the request says ", HexEncode(*body.checksum), "; nothing was stored"));
  }
  switch (plan.etag) {
    case BodyPlan::Etag::kMd5:  // AOBJ-OBJ-005, AOBJ-OBJ-207
      got.etag = absl::StrCat("\"", HexEncode(md5.Finish()), "\"");
      break;
    case BodyPlan::Etag::kOpaque:  // AOBJ-OBJ-016
      got.etag = OpaqueEtag();
      break;
    case BodyPlan::Etag::kOpaquePart:  // AOBJ-OBJ-254
      got.etag = OpaquePartEtag();
      break;
  }
  got.crc32c = FromBigEndian32(algo == ChecksumAlgorithm::kCrc32c ? got.checksum : crc32c.Finish());
  return got;
}

}  // namespace aobj
