// GetObjects and PutObjects: batched reads into one scatter list and batched writes from one
// (spec sections 9.16 and 9.17).
//
// The whole request is validated before any object is opened (AOBJ-OBJ-238, AOBJ-OBJ-247).
// Items then move in order in rounds: a round is the octets of as many items as fit the staging
// buffer (for GetObjects, objects that a store holds in memory travel from there without a copy)
// and goes out as one RMA batch with one flush, so a batch of small objects costs one round
// trip, not one per object. An item larger than the rest of the buffer spans rounds.
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "server/handler.h"
#include "server/handler_util.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/names.h"
#include "wire/protocol.h"
#include "wire/range.h"

namespace aobj {
namespace {

// AOBJ-OBJ-242, AOBJ-OBJ-250: an item's error message, so that 1000 of them fit a fast-path
// frame.
constexpr size_t kMaxItemMessageBytes = 256;
// AOBJ-OBJ-247: a PutObjects item's content type, for the same reason.
constexpr size_t kMaxItemContentTypeBytes = 256;

// The most writers PutObjects commits as one group (ObjectStore::CommitBatch).
constexpr size_t kCommitGroup = 64;

// The octets the windows of a scatter list hold. Each length is at most max_transfer_bytes
// (AOBJ-MEM-002), so 16 of them cannot wrap; a larger count saturates.
uint64_t Capacity(const google::protobuf::RepeatedPtrField<aobj::v1::MemoryDescriptor>& windows) {
  uint64_t capacity = 0;
  for (const auto& d : windows) {
    capacity = d.length() > UINT64_MAX - capacity ? UINT64_MAX : capacity + d.length();
  }
  return capacity;
}

// An item whose validation passed: its range (if any) and its region of the scatter list.
struct BatchItem {
  std::optional<RangeSpec> range;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// AOBJ-OBJ-238, AOBJ-OBJ-247: item i's region [offset, offset + length) lies inside the windows'
// `capacity` octets, and the regions so far (`*total`, which this one is added to) hold at most
// the session's max_transfer_bytes.
absl::Status CheckRegion(int i, uint64_t offset, uint64_t length, uint64_t capacity,
                         uint64_t max_transfer_bytes, uint64_t* total) {
  if (length > UINT64_MAX - offset || offset + length > capacity) {
    return MakeError(ErrorCode::kDescriptorTooSmall,
                     absl::StrCat("item ", i, "'s region [", offset, ", +", length,
                                  ") ends past the windows' ", capacity, " octets"));
  }
  *total += length;  // no wrap: each region lies inside `capacity`, and at most 1000
  if (*total > max_transfer_bytes) {
    return MakeError(ErrorCode::kEntityTooLarge,
                     absl::StrCat("the items' regions hold more than the session's limit of ",
                                  max_transfer_bytes, " octets"));
  }
  return absl::OkStatus();
}

// AOBJ-OBJ-238: no two GetObjects regions share an octet (an empty region overlaps nothing).
absl::Status CheckNoOverlap(const std::vector<BatchItem>& items) {
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return items[a].offset < items[b].offset; });
  uint64_t end = 0;
  int last = -1;
  for (int i : order) {
    if (items[i].length == 0) continue;
    if (last >= 0 && items[i].offset < end) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("the regions of items ", last, " and ", i, " overlap"));
    }
    end = items[i].offset + items[i].length;
    last = i;
  }
  return absl::OkStatus();
}

// AOBJ-OBJ-238: GetObjects' items, before any object is opened: keys, ranges, and regions inside
// the windows that do not overlap.
// `check_key`: RequestHandler::CheckKey.
absl::StatusOr<std::vector<BatchItem>> ValidateGetItems(
    const aobj::v1::GetObjectsRequest& req, uint64_t capacity, uint64_t max_transfer_bytes,
    absl::FunctionRef<absl::Status(absl::string_view)> check_key) {
  std::vector<BatchItem> items(req.items_size());
  uint64_t total = 0;
  for (int i = 0; i < req.items_size(); ++i) {
    const aobj::v1::GetObjectsItem& it = req.items(i);
    if (absl::Status st = check_key(it.key()); !st.ok()) {
      return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("item ", i, ": ", st.message()));
    }
    if (it.has_range()) {  // AOBJ-DAT-100: a malformed range fails before any I/O
      auto r = RangeFromProto(it.range());
      if (!r.ok()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("item ", i, ": ", r.status().message()));
      }
      items[i].range = *r;
    }
    AOBJ_RETURN_IF_ERROR(
        CheckRegion(i, it.offset(), it.length(), capacity, max_transfer_bytes, &total));
    items[i].offset = it.offset();
    items[i].length = it.length();
  }
  AOBJ_RETURN_IF_ERROR(CheckNoOverlap(items));
  return items;
}

// AOBJ-OBJ-247: PutObjects' items, before any octet moves: keys (each at most once), checksums
// of the session's algorithm, content types, and regions inside the windows.
absl::Status ValidatePutItems(const aobj::v1::PutObjectsRequest& req, ChecksumAlgorithm algo,
                              uint64_t capacity, uint64_t max_transfer_bytes,
                              absl::FunctionRef<absl::Status(absl::string_view)> check_key) {
  uint64_t total = 0;
  std::vector<const std::string*> keys;
  keys.reserve(req.items_size());
  for (int i = 0; i < req.items_size(); ++i) {
    const aobj::v1::PutObjectsItem& it = req.items(i);
    if (absl::Status st = check_key(it.key()); !st.ok()) {
      return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("item ", i, ": ", st.message()));
    }
    if (it.checksum().size() != ChecksumSize(algo)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("item ", i, ": checksum is ", it.checksum().size(), " octets; ",
                                    ChecksumName(algo), " takes ", ChecksumSize(algo)));
    }
    if (it.content_type().size() > kMaxItemContentTypeBytes) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          absl::StrCat("item ", i, ": a content type of ", it.content_type().size(),
                       " octets; PutObjects takes at most ", kMaxItemContentTypeBytes));
    }
    AOBJ_RETURN_IF_ERROR(
        CheckRegion(i, it.offset(), it.length(), capacity, max_transfer_bytes, &total));
    keys.push_back(&it.key());
  }
  std::sort(keys.begin(), keys.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  for (size_t k = 1; k < keys.size(); ++k) {
    if (*keys[k] == *keys[k - 1]) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("two items name the key '", TruncateUtf8(*keys[k], 64),
                                    "'; each key at most once a request"));
    }
  }
  return absl::OkStatus();
}

// One round of a batch's RMA (AOBJ-OBJ-243, AOBJ-OBJ-251): the operations on the scatter list's
// regions of as many items as fit the staging buffer, sent as one RMA batch with one flush.
// Octets staged go through the staging buffer in order; others (an object a store holds in
// memory) go from where they lie.
class BatchRound {
 public:
  // Where a round stood, to take back what an item that failed put into it.
  struct Mark {
    size_t ops = 0;
    uint64_t staged = 0;
  };

  BatchRound(RmaDirection direction, const SessionState& s, const Descriptors& windows,
             const std::vector<TransferPiece>& pieces, uint8_t* staging, uint64_t capacity)
      : batch_(MakeBatch(direction, windows, pieces, 0, 0, nullptr, s.limits.max_rkey_bytes)),
        pieces_(pieces),
        staging_(staging),
        capacity_(capacity) {}

  bool empty() const { return batch_.ops.empty(); }
  // Octets of the staging buffer not yet in the round, and where they begin.
  uint64_t room() const { return capacity_ - staged_; }
  uint64_t staged() const { return staged_; }
  uint8_t* free_space() const { return staging_ + staged_; }
  // Puts the next `n` octets of the staging buffer (at most room(), at free_space()) into the
  // round as octets [at, at + n) of the regions.
  void Stage(uint64_t at, uint64_t n) {
    AppendOps(pieces_, at, n, free_space(), &batch_.ops);
    staged_ += n;
  }
  // Octets [at, at + n) of the regions, to or from `local`, which outlives the round's flush.
  void AddDirect(uint64_t at, uint64_t n, const uint8_t* local) {
    AppendOps(pieces_, at, n, const_cast<uint8_t*>(local), &batch_.ops);
  }
  Mark mark() const { return {batch_.ops.size(), staged_}; }
  void RollBack(const Mark& m) {
    batch_.ops.resize(m.ops);
    staged_ = m.staged;
  }
  // Sends the round with `execute` (nothing when it is empty) and empties it, whatever the
  // outcome; the staging buffer keeps its octets until the next Stage.
  absl::Status Flush(absl::FunctionRef<absl::Status(const RmaBatch&)> execute) {
    absl::Status st = batch_.ops.empty() ? absl::OkStatus() : execute(batch_);
    batch_.ops.clear();
    staged_ = 0;
    return st;
  }

 private:
  RmaBatch batch_;
  const std::vector<TransferPiece>& pieces_;
  uint8_t* const staging_;
  const uint64_t capacity_;
  uint64_t staged_ = 0;  // octets of the staging buffer in the round
};

}  // namespace

absl::StatusOr<std::string> RequestHandler::GetObjects(const SessionState& s,
                                                       absl::string_view body,
                                                       const ActiveCall& call) {
  aobj::v1::GetObjectsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  if (!s.HasCapability(kCapBatchGet)) {  // AOBJ-OBJ-236
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetObjects needs the capability BATCH_GET, which this session did not "
                     "negotiate");
  }
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  if (req.items_size() == 0 ||
      req.items_size() > static_cast<int>(kMaxBatchGetItems)) {  // AOBJ-OBJ-237
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("GetObjects takes 1 to ", kMaxBatchGetItems, " items, not ",
                                  req.items_size()));
  }
  // AOBJ-OBJ-238: everything that does not depend on the objects, before any is opened.
  auto algo = SessionChecksum(s, req.checksum_algorithm(), /*default_crc32c=*/true);
  if (!algo.ok()) return algo.status();
  AOBJ_RETURN_IF_ERROR(CheckWindows(s, req.destination()));
  const uint64_t capacity = Capacity(req.destination());
  absl::StatusOr<std::vector<BatchItem>> checked =
      ValidateGetItems(req, capacity, s.limits.max_transfer_bytes,
                       [this](absl::string_view key) { return CheckKey(key); });
  if (!checked.ok()) return checked.status();
  const std::vector<BatchItem>& items = *checked;
  // AOBJ-OBJ-240: a missing bucket fails the whole request.
  AOBJ_RETURN_IF_ERROR(store_->HeadBucket(req.bucket()));
  auto pieces = PlanTransfer(req.destination(), capacity, config_.max_rma_piece);
  if (!pieces.ok()) return pieces.status();
  // AOBJ-FLO-002: admitted before any rkey is unpacked or window touched; one slot for the batch.
  auto slot = sessions_->Admit(s.id_hex);  // AOBJ-SES-012
  if (!slot.ok()) return slot.status();

  aobj::v1::GetObjectsResponse resp;
  resp.set_checksum_algorithm(static_cast<aobj::v1::ChecksumAlgorithm>(*algo));
  const StagingPool::Lease staging = staging_.Lend();
  BatchRound round(RmaDirection::kWrite, s, req.destination(), *pieces, staging.get(),
                   staging_.buffer_bytes());
  std::vector<std::unique_ptr<ObjectReader>> held;  // readers whose memory the round points at
  uint64_t moved = 0;
  // AOBJ-OBJ-243: one flush per round; a failure fails the whole request.
  auto flush = [&]() -> absl::Status {
    absl::Status st = round.Flush([&](const RmaBatch& b) { return ExecuteRma(s, b, call); });
    held.clear();
    return st;
  };
  // Adds the RMA writes of region octets [at, at + n) from local memory `from`.
  auto add = [&](uint64_t at, uint64_t n, const uint8_t* from) { round.AddDirect(at, n, from); };
  absl::Status failed;
  for (int i = 0; i < req.items_size() && failed.ok(); ++i) {
    const BatchItem& item = items[i];
    aobj::v1::GetObjectsResult* result = resp.add_results();
    // AOBJ-OBJ-240: an item's failure is its own; the others go on.
    auto fail = [&](const absl::Status& st) {
      result->Clear();
      FillError(st, result->mutable_error(), kMaxItemMessageBytes);  // AOBJ-OBJ-242
    };
    auto reader = store_->OpenRead(req.bucket(), req.items(i).key());
    if (!reader.ok()) {
      fail(reader.status());
      continue;
    }
    const ObjectInfo& info = (*reader)->info();
    uint64_t first = 0;
    uint64_t size = info.size;
    if (item.range.has_value()) {
      auto resolved = ResolveRange(*item.range, info.size);
      if (!resolved.ok()) {
        fail(resolved.status());
        continue;
      }
      first = resolved->first;
      size = resolved->length;
    }
    if (size > item.length) {  // AOBJ-OBJ-240, as AOBJ-MEM-007 for GetObject
      fail(MakeError(ErrorCode::kDescriptorTooSmall,
                     absl::StrCat("the ", item.range.has_value() ? "range" : "object", " has ",
                                  size, " octets; the item's region holds ", item.length)));
      continue;
    }
    // As for GetObject (AOBJ-DAT-106): the stored CRC32C of a whole object, else computed.
    const bool compute = *algo != ChecksumAlgorithm::kCrc32c || item.range.has_value();
    Checksummer sum(*algo);
    absl::Span<const uint8_t> view = (*reader)->ContiguousView();
    if (!view.empty() || size == 0) {
      if (size > 0) {
        const uint8_t* from = view.data() + first;
        if (compute) sum.Update(from, size);
        add(item.offset, size, from);
        held.push_back(std::move(*reader));
      }
    } else {
      // Staged: as much of the item as the buffer holds per round. What an item that fails here
      // put into the round is taken out again, so its region stays untouched (AOBJ-OBJ-239),
      // unless a round with its first octets already went out (an item larger than the rest of
      // the staging buffer; its region's contents are then unspecified).
      const BatchRound::Mark mark = round.mark();
      bool sent_part = false;
      absl::Status st;
      for (uint64_t done = 0; done < size && st.ok();) {
        if (round.room() == 0) {
          failed = flush();
          if (!failed.ok()) break;
          sent_part = true;
        }
        const uint64_t n = std::min(round.room(), size - done);
        uint8_t* buf = round.free_space();
        auto got = (*reader)->ReadAt(first + done, {buf, static_cast<size_t>(n)});
        if (!got.ok()) {
          st = got.status();
        } else if (*got != n) {
          st = MakeError(ErrorCode::kStorageError, "object shorter than recorded");
        } else {
          if (compute) sum.Update(buf, n);
          round.Stage(item.offset + done, n);
          done += n;
        }
      }
      if (!failed.ok()) break;
      if (!st.ok()) {
        // Since a flush, only this item's octets are in the round.
        round.RollBack(sent_part ? BatchRound::Mark() : mark);
        fail(st);
        continue;
      }
    }
    result->set_bytes_transferred(size);
    result->set_checksum(compute ? sum.Finish() : BigEndian32(info.crc32c));
    ObjectInfoToProto(info, result->mutable_metadata());
    result->mutable_metadata()->clear_user_metadata();  // AOBJ-OBJ-242
    if (item.range.has_value()) {                       // AOBJ-DAT-103
      result->mutable_content_range()->set_first(first);
      result->mutable_content_range()->set_last(first + size - 1);
      result->mutable_content_range()->set_complete_length(info.size);
    }
    moved += size;
  }
  if (failed.ok()) failed = flush();
  if (!failed.ok()) return failed;
  counters_.bytes_out.fetch_add(moved, std::memory_order_relaxed);
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::PutObjects(const SessionState& s,
                                                       absl::string_view body,
                                                       const ActiveCall& call) {
  aobj::v1::PutObjectsRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  if (!s.HasCapability(kCapBatchPut)) {  // AOBJ-OBJ-245
    return MakeError(ErrorCode::kInvalidArgument,
                     "PutObjects needs the capability BATCH_PUT, which this session did not "
                     "negotiate");
  }
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  if (req.items_size() == 0 ||
      req.items_size() > static_cast<int>(kMaxBatchPutItems)) {  // AOBJ-OBJ-246
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("PutObjects takes 1 to ", kMaxBatchPutItems, " items, not ",
                                  req.items_size()));
  }
  // AOBJ-OBJ-247: everything that does not depend on the store, before any octet moves.
  auto algo = SessionChecksum(s, req.checksum_algorithm(), /*default_crc32c=*/false);
  if (!algo.ok()) return algo.status();
  AOBJ_RETURN_IF_ERROR(CheckWindows(s, req.source()));
  const uint64_t capacity = Capacity(req.source());
  AOBJ_RETURN_IF_ERROR(ValidatePutItems(req, *algo, capacity, s.limits.max_transfer_bytes,
                                        [this](absl::string_view key) { return CheckKey(key); }));
  // AOBJ-OBJ-249: a missing bucket fails the whole request.
  AOBJ_RETURN_IF_ERROR(store_->HeadBucket(req.bucket()));
  auto pieces = PlanTransfer(req.source(), capacity, config_.max_rma_piece);
  if (!pieces.ok()) return pieces.status();
  // AOBJ-FLO-002: admitted before any rkey is unpacked or window touched; one slot for the batch.
  auto slot = sessions_->Admit(s.id_hex);  // AOBJ-SES-012
  if (!slot.ok()) return slot.status();

  aobj::v1::PutObjectsResponse resp;
  resp.set_checksum_algorithm(static_cast<aobj::v1::ChecksumAlgorithm>(*algo));
  for (int i = 0; i < req.items_size(); ++i) resp.add_results();
  const bool opaque = s.HasCapability(kCapOpaqueEtag);  // AOBJ-OBJ-016
  const uint64_t chunk = staging_.buffer_bytes();
  const StagingPool::Lease staging = staging_.Lend();
  BatchRound round(RmaDirection::kRead, s, req.source(), *pieces, staging.get(), chunk);
  uint64_t stored = 0;

  // One item's object as its octets arrive: the writer, and the sums to verify and record.
  struct Receiving {
    int index = -1;
    std::unique_ptr<ObjectWriter> writer;
    Checksummer sum;
    Checksummer crc32c{ChecksumAlgorithm::kCrc32c};
    Md5 md5;
    absl::Status error;  // the item's own failure; its remaining octets are still read
    std::string got;     // the checksum of the octets received, once verified
    explicit Receiving(ChecksumAlgorithm a) : sum(a) {}
  };
  // The items whose octets the round holds (an item's last ones finish it), in order.
  struct Segment {
    int index;
    uint64_t at;  // offset in the staging buffer
    uint64_t n;
    bool last;
  };
  std::vector<Segment> segments;
  std::unique_ptr<Receiving> open;  // the item whose octets span rounds, if any
  auto result_error = [&](int i, const absl::Status& st) {
    aobj::v1::PutObjectsResult* r = resp.mutable_results(i);
    r->Clear();
    FillError(st, r->mutable_error(), kMaxItemMessageBytes);  // AOBJ-OBJ-250
  };
  auto start = [&](int i) -> std::unique_ptr<Receiving> {
    auto r = std::make_unique<Receiving>(*algo);
    r->index = i;
    const aobj::v1::PutObjectsItem& it = req.items(i);
    WriteOptions options;
    options.content_type = it.content_type();
    auto writer = store_->BeginPut(req.bucket(), it.key(), it.length(), options);
    if (writer.ok()) {
      r->writer = std::move(*writer);
    } else {
      r->error = writer.status();
    }
    return r;
  };
  auto take = [&](Receiving& r, const uint8_t* data, uint64_t n) {
    if (!r.error.ok() || n == 0) return;
    r.sum.Update(data, n);
    if (*algo != ChecksumAlgorithm::kCrc32c) r.crc32c.Update(data, n);
    if (!opaque) r.md5.Update(data, n);
    r.error = r.writer->Append({data, static_cast<size_t>(n)});
  };
  // AOBJ-OBJ-248: verified before it is committed as a PutObject of its own; what the commit
  // records, or nothing when the item failed (its result then holds the error).
  auto verify = [&](Receiving& r) -> std::optional<ObjectInfo> {
    const aobj::v1::PutObjectsItem& it = req.items(r.index);
    if (r.error.ok()) {
      r.got = r.sum.Finish();
      if (r.got != it.checksum()) {  // AOBJ-DAT-005
        r.error = MakeError(
            ErrorCode::kBadDigest,
            absl::StrCat(ChecksumName(*algo), " of the received octets is ", HexEncode(r.got),
                         ", the item says ", HexEncode(it.checksum()), "; nothing was stored"));
      }
    }
    if (!r.error.ok()) {
      result_error(r.index, r.error);
      return std::nullopt;
    }
    ObjectInfo info;
    info.size = it.length();
    info.etag = opaque ? OpaqueEtag()  // AOBJ-OBJ-016
                       : absl::StrCat("\"", HexEncode(r.md5.Finish()), "\"");
    info.content_type = it.content_type();
    info.crc32c = FromBigEndian32(*algo == ChecksumAlgorithm::kCrc32c ? r.got : r.crc32c.Finish());
    return info;
  };
  auto record = [&](const Receiving& r, const absl::StatusOr<ObjectInfo>& committed) {
    if (!committed.ok()) return result_error(r.index, committed.status());
    aobj::v1::PutObjectsResult* out = resp.mutable_results(r.index);
    out->set_checksum(r.got);
    ObjectInfoToProto(*committed, out->mutable_metadata());
    out->mutable_metadata()->clear_user_metadata();
    stored += committed->size;
  };
  auto finish = [&](Receiving& r) {
    if (std::optional<ObjectInfo> info = verify(r)) record(r, r.writer->Commit(*info));
  };
  // AOBJ-OBJ-251: one flush per round; a failed RMA operation fails the whole request.
  auto flush = [&]() -> absl::Status {
    if (round.empty()) return absl::OkStatus();
    absl::Status st = round.Flush([&](const RmaBatch& b) { return ExecuteRma(s, b, call); });
    if (st.ok()) {
      // The items whole in this round are committed together, in order (ObjectStore::CommitBatch),
      // at most kCommitGroup at once: each open writer may hold a descriptor (issue 16).
      std::vector<std::unique_ptr<Receiving>> group;
      std::vector<ObjectWriter*> writers;
      std::vector<ObjectInfo> infos;
      auto commit_group = [&] {
        std::vector<absl::StatusOr<ObjectInfo>> committed = store_->CommitBatch(writers, infos);
        for (size_t k = 0; k < group.size(); ++k) record(*group[k], committed[k]);
        group.clear();
        writers.clear();
        infos.clear();
      };
      for (const Segment& g : segments) {
        // A segment of the spanning item continues `open`; any other item is whole here.
        if (open != nullptr && open->index == g.index) {
          take(*open, staging.get() + g.at, g.n);
          if (g.last) {
            finish(*open);
            open.reset();
          }
          continue;
        }
        std::unique_ptr<Receiving> r = start(g.index);
        take(*r, staging.get() + g.at, g.n);
        if (std::optional<ObjectInfo> info = verify(*r)) {
          writers.push_back(r->writer.get());
          infos.push_back(std::move(*info));
          group.push_back(std::move(r));
          if (group.size() == kCommitGroup) commit_group();
        }
      }
      commit_group();
    }
    segments.clear();
    return st;
  };
  absl::Status failed;
  for (int i = 0; i < req.items_size() && failed.ok(); ++i) {
    const aobj::v1::PutObjectsItem& it = req.items(i);
    const uint64_t size = it.length();
    if (size == 0) {  // nothing to read: stored now, in order with its neighbours' rounds
      failed = flush();
      if (!failed.ok()) break;
      std::unique_ptr<Receiving> r = start(i);
      finish(*r);
      continue;
    }
    // An item that does not fit what is left of the round, but fits a round, starts a new one;
    // a larger one streams through rounds of its own, its writer open meanwhile.
    if (size > round.room()) {
      failed = flush();
      if (!failed.ok()) break;
      if (size > chunk) open = start(i);
    }
    for (uint64_t done = 0; done < size;) {
      if (round.room() == 0) {
        failed = flush();
        if (!failed.ok()) break;
      }
      const uint64_t n = std::min(round.room(), size - done);
      segments.push_back({i, round.staged(), n, done + n == size});
      round.Stage(it.offset() + done, n);
      done += n;
    }
  }
  if (failed.ok()) failed = flush();
  if (!failed.ok()) return failed;  // AOBJ-OBJ-251
  counters_.bytes_in.fetch_add(stored, std::memory_order_relaxed);
  return Serialize(resp);
}

}  // namespace aobj
