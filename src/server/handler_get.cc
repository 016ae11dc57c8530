// GetObject (spec section 9.5) in its named steps: validate what the request asks for before
// any I/O, open the version to read and evaluate the conditions on it, select the octets that
// move and how (range, path, windows), take a flow-control slot, send the octets, reply.
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "server/staged_transfer.h"
#include "wire/checksum.h"
#include "wire/conditions.h"
#include "wire/descriptor.h"
#include "wire/names.h"
#include "wire/range.h"

namespace aobj {
namespace {

// What a GetObject asks for beyond its names, checked before any I/O (AOBJ-DAT-100,
// AOBJ-OBJ-131, AOBJ-DAT-020).
struct GetAsk {
  ChecksumAlgorithm algo = ChecksumAlgorithm::kCrc32c;
  std::optional<RangeSpec> range;
  Conditions conditions;
};

absl::StatusOr<GetAsk> ValidateGet(const SessionState& s, const aobj::v1::GetObjectRequest& req) {
  GetAsk ask;
  auto algo = SessionChecksum(s, req.checksum_algorithm(), /*default_crc32c=*/true);
  if (!algo.ok()) return algo.status();
  ask.algo = *algo;
  if (req.has_range()) {
    auto r = RangeFromProto(req.range());
    if (!r.ok()) return r.status();
    ask.range = *r;
  }
  auto conditions = ConditionsFromProto(req.preconditions());
  if (!conditions.ok()) return conditions.status();
  ask.conditions = *std::move(conditions);
  return ask;
}

// The whole object or the resolved range (AOBJ-DAT-101, AOBJ-DAT-102, AOBJ-DAT-104), within the
// session's limit, on the path the session's capabilities and limits decide (AOBJ-SES-016), and,
// by RMA, laid over windows that hold it (AOBJ-MEM-007: refused before any byte is written).
absl::StatusOr<GetSelection> SelectOctets(const SessionState& s,
                                          const aobj::v1::GetObjectRequest& req, const GetAsk& ask,
                                          const ObjectInfo& info, uint64_t max_rma_piece) {
  GetSelection sel;
  sel.size = info.size;
  if (ask.range.has_value()) {
    auto resolved = ResolveRange(*ask.range, info.size);
    if (!resolved.ok()) return resolved.status();
    sel.first = resolved->first;
    sel.size = resolved->length;
  }
  if (sel.size > s.limits.max_transfer_bytes) {
    return MakeError(
        ErrorCode::kEntityTooLarge,
        absl::StrCat(ask.range.has_value() ? "range" : "object", " of ", sel.size,
                     " bytes exceeds the session's limit of ", s.limits.max_transfer_bytes));
  }
  if (sel.size == 0) {
    sel.path = aobj::v1::TRANSFER_PATH_NONE;  // AOBJ-DAT-011
  } else if (req.accept_inline() && s.HasCapability(kCapInline) &&
             sel.size <= s.limits.inline_threshold) {
    // AOBJ-DAT-014: inline whatever descriptors the request carries.
    sel.path = aobj::v1::TRANSFER_PATH_INLINE;  // AOBJ-DAT-008
  }
  if (sel.path == aobj::v1::TRANSFER_PATH_RMA) {
    AOBJ_RETURN_IF_ERROR(CheckWindows(s, req.destination()));
    auto planned = PlanTransfer(req.destination(), sel.size, max_rma_piece);
    if (!planned.ok()) return planned.status();
    sel.pieces = *std::move(planned);
  }
  return sel;
}

// The reply: the octets' count, checksum and path, the metadata of the version the reader held
// (AOBJ-OBJ-009), and the range that moved (AOBJ-DAT-103).
aobj::v1::GetObjectResponse GetReply(const GetAsk& ask, const GetSelection& sel,
                                     const ObjectInfo& info, std::string checksum) {
  aobj::v1::GetObjectResponse resp;
  resp.set_bytes_transferred(sel.size);  // AOBJ-DAT-003
  resp.set_checksum_algorithm(static_cast<aobj::v1::ChecksumAlgorithm>(ask.algo));
  resp.set_checksum(std::move(checksum));
  resp.set_path(sel.path);
  ObjectInfoToProto(info, resp.mutable_metadata());
  if (ask.range.has_value()) {
    resp.mutable_content_range()->set_first(sel.first);
    resp.mutable_content_range()->set_last(sel.first + sel.size - 1);
    resp.mutable_content_range()->set_complete_length(info.size);
  }
  return resp;
}

}  // namespace

absl::StatusOr<std::string> RequestHandler::GetObject(const SessionState& s, absl::string_view body,
                                                      const ActiveCall& call) {
  aobj::v1::GetObjectRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
  auto ask = ValidateGet(s, req);
  if (!ask.ok()) return ask.status();
  auto reader = store_->OpenRead(req.bucket(), req.key());  // AOBJ-OBJ-138: NoSuchKey first
  if (!reader.ok()) return reader.status();
  const ObjectInfo& info = (*reader)->info();
  // AOBJ-OBJ-132: evaluated on the version the reader holds, the one whose octets move.
  // AOBJ-OBJ-137: before the range.
  AOBJ_RETURN_IF_ERROR(EvaluateReadConditions(ask->conditions, info.etag, info.last_modified_ms));
  auto sel = SelectOctets(s, req, *ask, info, config_.max_rma_piece);
  if (!sel.ok()) return sel.status();
  // AOBJ-FLO-002: admitted before any rkey is unpacked (in the worker) or window touched.
  auto slot = sessions_->Admit(s.id_hex);  // AOBJ-SES-012
  if (!slot.ok()) return slot.status();
  // The stored CRC32C was computed over the bytes at PUT time, so it also catches corruption at
  // rest; other algorithms, and every range, are computed over the bytes as they leave
  // (AOBJ-DAT-106).
  const bool compute = ask->algo != ChecksumAlgorithm::kCrc32c || ask->range.has_value();
  Checksummer sum(ask->algo);
  std::string inline_data;
  AOBJ_RETURN_IF_ERROR(
      SendOctets(s, req, **reader, *sel, compute ? &sum : nullptr, &inline_data, call));
  counters_.bytes_out.fetch_add(sel->size, std::memory_order_relaxed);
  aobj::v1::GetObjectResponse resp =
      GetReply(*ask, *sel, info, compute ? sum.Finish() : BigEndian32(info.crc32c));
  resp.set_inline_data(std::move(inline_data));
  return Serialize(resp);
}

absl::Status RequestHandler::SendOctets(const SessionState& s,
                                        const aobj::v1::GetObjectRequest& req, ObjectReader& reader,
                                        const GetSelection& sel, Checksummer* sum,
                                        std::string* inline_data, const ActiveCall& call) {
  const uint64_t first = sel.first;
  const uint64_t size = sel.size;
  if (sel.path == aobj::v1::TRANSFER_PATH_INLINE) {
    std::string data(size, '\0');
    auto n = reader.ReadAt(first, {reinterpret_cast<uint8_t*>(data.data()), data.size()});
    if (!n.ok()) return n.status();
    // AOBJ-DAT-015, AOBJ-DAT-013: exactly the object's octets, or no successful reply.
    if (*n != size) return MakeError(ErrorCode::kStorageError, "object shorter than recorded");
    if (sum != nullptr) sum->Update(data.data(), size);
    *inline_data = std::move(data);
    return absl::OkStatus();
  }
  if (sel.path != aobj::v1::TRANSFER_PATH_RMA) return absl::OkStatus();
  absl::Span<const uint8_t> view = reader.ContiguousView();
  if (!view.empty()) {
    const uint8_t* from = view.data() + first;
    RmaBatch batch = MakeBatch(RmaDirection::kWrite, req.destination(), sel.pieces, 0, size,
                               const_cast<uint8_t*>(from), s.limits.max_rkey_bytes);
    // The stored octets do not change while the reader holds them, so a checksum to compute
    // runs on a helper thread over the same octets while they travel.
    Overlap overlap;
    if (sum != nullptr && size >= kOverlapMinBytes) {
      overlap.Run([sum, from, size] {
        sum->Update(from, size);
        return absl::OkStatus();
      });
    }
    // AOBJ-TRN-008: only this session's endpoint.
    absl::Status st = ExecuteRma(s, batch, call);  // AOBJ-DAT-001, AOBJ-DAT-016
    overlap.Wait().IgnoreError();                  // a checksum update cannot fail
    if (!st.ok()) return st;
    if (sum != nullptr && size < kOverlapMinBytes) sum->Update(from, size);
    return absl::OkStatus();
  }
  // Staged (server/staged_transfer.h): the store read and checksum of the next chunk run on a
  // helper thread while this one travels.
  auto read = [&](uint8_t* buf, uint64_t off, uint64_t n) -> absl::Status {
    auto got = reader.ReadAt(first + off, {buf, static_cast<size_t>(n)});
    if (!got.ok()) return got.status();
    if (*got != n) return MakeError(ErrorCode::kStorageError, "object shorter than recorded");
    if (sum != nullptr) sum->Update(buf, n);
    return absl::OkStatus();
  };
  auto send = [&](uint8_t* buf, uint64_t off, uint64_t n) {
    RmaBatch batch = MakeBatch(RmaDirection::kWrite, req.destination(), sel.pieces, off, n, buf,
                               s.limits.max_rkey_bytes);
    return ExecuteRma(s, batch, call);  // AOBJ-DAT-016
  };
  return RunStaged(staging_, size, StageOrder::kIoFirst, {}, send, read);
}

}  // namespace aobj
