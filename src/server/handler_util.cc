#include "server/handler_util.h"

#include <algorithm>

#include "aobj/status.h"
#include "wire/protocol.h"
#include "wire/user_metadata.h"

namespace aobj {

absl::StatusOr<ChecksumAlgorithm> SessionChecksum(const SessionState& s,
                                                  aobj::v1::ChecksumAlgorithm a,
                                                  bool default_crc32c) {
  if (a == aobj::v1::CHECKSUM_ALGORITHM_UNSPECIFIED && default_crc32c) {
    return ChecksumAlgorithm::kCrc32c;
  }
  if (a == aobj::v1::CHECKSUM_ALGORITHM_CRC32C && s.HasCapability(kCapCrc32c)) {
    return ChecksumAlgorithm::kCrc32c;
  }
  if (a == aobj::v1::CHECKSUM_ALGORITHM_CRC64NVME && s.HasCapability(kCapCrc64Nvme)) {
    return ChecksumAlgorithm::kCrc64Nvme;
  }
  // AOBJ-DAT-023: an algorithm not negotiated, or unknown, is INVALID_ARGUMENT.
  return MakeError(ErrorCode::kInvalidArgument,
                   absl::StrCat("checksum algorithm ", static_cast<int>(a),
                                " is missing or was not negotiated for this session"));
}

RmaBatch MakeBatch(RmaDirection direction, const Descriptors& descriptors,
                   const std::vector<TransferPiece>& pieces, uint64_t start, uint64_t len,
                   uint8_t* base, uint32_t max_rkey_bytes) {
  RmaBatch batch;
  batch.direction = direction;
  batch.max_rkey_bytes = max_rkey_bytes;
  for (const auto& d : descriptors) {
    batch.windows.push_back({d.address(), d.length(), d.rkey()});
  }
  AppendOps(pieces, start, len, base, &batch.ops);
  return batch;
}

void AppendOps(const std::vector<TransferPiece>& pieces, uint64_t start, uint64_t len,
               uint8_t* base, std::vector<RmaOp>* ops) {
  // The first piece that ends after `start`.
  auto it = std::upper_bound(
      pieces.begin(), pieces.end(), start,
      [](uint64_t at, const TransferPiece& p) { return at < p.body_offset + p.length; });
  for (; it != pieces.end() && it->body_offset < start + len; ++it) {
    const uint64_t lo = std::max(it->body_offset, start);
    const uint64_t hi = std::min(it->body_offset + it->length, start + len);
    if (lo >= hi) continue;
    ops->push_back({it->window, it->remote + (lo - it->body_offset), base + (lo - start),
                    static_cast<size_t>(hi - lo)});
  }
}

std::string TruncateUtf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

void FillError(const absl::Status& status, aobj::v1::Error* e, size_t max_message) {
  const ErrorInfo info = GetErrorInfo(ErrorCodeOf(status));
  e->set_code(static_cast<aobj::v1::ErrorCode>(info.code));
  e->set_name(std::string(info.name));
  e->set_s3_code(std::string(info.s3_code));
  e->set_message(TruncateUtf8(std::string(status.message()), max_message));
  e->set_retryable(info.retryable);
}

absl::Status CheckWindows(const SessionState& s, const Descriptors& windows) {
  if (windows.size() > 1 && !s.HasCapability(kCapMultiDescriptor)) {
    return MakeError(ErrorCode::kInvalidDescriptor,
                     absl::StrCat("request carries ", windows.size(),
                                  " descriptors but MULTI_DESCRIPTOR was not negotiated"));
  }
  return ValidateDescriptors(windows, s.limits);
}

}  // namespace aobj
