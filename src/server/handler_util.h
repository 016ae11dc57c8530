// Helpers shared by the request handlers of the server (handler.cc, body.cc,
// handler_multipart.cc): message parsing, metadata, checksum negotiation, RMA batches.
// Internal to the server layer. Pure functions; thread-safe.
#ifndef AOBJ_SERVER_HANDLER_UTIL_H_
#define AOBJ_SERVER_HANDLER_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "server/data_channel.h"
#include "session/session_table.h"
#include "wire/convert.h"
#include "wire/descriptor.h"
#include "wire/status_macros.h"

namespace aobj {

// Parses a request message; INVALID_ARGUMENT when the bytes are not one.
template <class M>
absl::Status Parse(absl::string_view body, M* message) {
  if (!message->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("malformed ", message->GetTypeName()));
  }
  return absl::OkStatus();
}

template <class M>
std::string Serialize(const M& message) {
  std::string out;
  message.SerializeToString(&out);
  return out;
}

// AOBJ-DAT-020: an algorithm the session negotiated; UNSPECIFIED means CRC32C when
// `default_crc32c` (GET), else it is an error (PUT).
absl::StatusOr<ChecksumAlgorithm> SessionChecksum(const SessionState& s,
                                                  aobj::v1::ChecksumAlgorithm a,
                                                  bool default_crc32c);

// Appends the RMA operations of body bytes [start, start+len) of a planned transfer (pieces in
// body order, as PlanTransfer makes them), with body offset x at local address base +
// (x - start). Finds the first piece by binary search: the cost follows the octets asked for,
// not the size of the windows.
void AppendOps(const std::vector<TransferPiece>& pieces, uint64_t start, uint64_t len,
               uint8_t* base, std::vector<RmaOp>* ops);

// The RMA batch of body bytes [start, start+len) of a planned transfer: the windows of
// `descriptors` and AppendOps' operations.
RmaBatch MakeBatch(RmaDirection direction, const Descriptors& descriptors,
                   const std::vector<TransferPiece>& pieces, uint64_t start, uint64_t len,
                   uint8_t* base, uint32_t max_rkey_bytes);

// `s` cut to at most `max` octets without splitting a UTF-8 sequence (s is UTF-8: proto3 string).
std::string TruncateUtf8(const std::string& s, size_t max);

// The Error of a per-item failure (DeleteObjects, GetObjects): code, names and retryability from
// the registry row (AOBJ-ERR-004), the message cut to at most `max_message` octets.
void FillError(const absl::Status& status, aobj::v1::Error* e, size_t max_message = SIZE_MAX);

// What a GetObject moves: octets [first, first + size) of the object, on `path`, by RMA laid over
// the request's windows in `pieces` (handler_get.cc).
struct GetSelection {
  uint64_t first = 0;
  uint64_t size = 0;
  aobj::v1::TransferPath path = aobj::v1::TRANSFER_PATH_RMA;
  std::vector<TransferPiece> pieces;
};

// Every rule on a request's memory windows that does not depend on the body: several windows
// only when MULTI_DESCRIPTOR was negotiated (AOBJ-MEM-015), then each window against the
// session's effective limits (ValidateDescriptors: AOBJ-MEM-001..006, AOBJ-SES-016). The one
// check every request that carries windows makes (PUT, GET, UploadPart, GetObjects, PutObjects).
absl::Status CheckWindows(const SessionState& s, const Descriptors& windows);

}  // namespace aobj

#endif  // AOBJ_SERVER_HANDLER_UTIL_H_
