// Multipart uploads kept in the cluster (spec section 9.15), so that parts of one upload can
// arrive through different gateways and any gateway can list, complete or abort it. Layout:
// rados_format.h. Every decision is one RADOS operation:
//
// * Create: a kUpload garbage entry, the upload object (state active), then the upload's entry
//   in the bucket's index by compare-and-swap from absent. The entry is what makes the upload
//   exist, and what keeps DeleteBucket from removing a bucket with uploads (AOBJ-OBJ-232).
// * UploadPart: the part's stripes under a fresh uuid, then one operation on the upload object:
//   compare its state with active, compare the part's entry with what was read, set the entry.
// * Complete and Abort first swap the state to closing (a fresh one of their own, whatever it
//   was: so that no part is installed while they decide), then change the index in one
//   operation that also compares the upload's entry: Complete sets the key's head (whose
//   segments are the listed parts, in order: nothing is copied) and removes the entry; Abort
//   removes the entry. Of two that overlap, the index decides: one changes it, the other finds
//   the entry gone and answers NO_SUCH_UPLOAD (AOBJ-OBJ-225). A Complete that fails puts the
//   state back to active, unless another took the state over meanwhile.
// * A part that finds the state closing waits for the outcome; a closing state older than
//   kStaleClosingMs whose upload is still listed belongs to a gateway that stopped mid-way, and
//   the part makes it active again.
// * The collector, holding the kUpload entry, deletes the parts no head names and the upload
//   object once the upload's entry has left the index.
//
// Limits on uploads in progress (AOBJ-OBJ-228, AOBJ-OBJ-233) are not applied: they exist for a
// server's fixed slots, and here uploads are RADOS objects that the pool's quota bounds.
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "store/store_rules.h"
#include "store_rados/rados_cluster.h"
#include "wire/checksum.h"
#include "wire/etag.h"

namespace aobj::rados_internal {
namespace {

using rados_format::PartRecord;
using rados_format::UploadRecord;
using rados_format::UploadState;
using rados_format::UploadStateRecord;

// A closing state this old, with its upload still listed, belongs to a Complete or Abort whose
// gateway stopped (a zero-copy Complete is a few RADOS operations): a part revives it.
constexpr int64_t kStaleClosingMs = 5 * 1000;

absl::Status NoSuchUpload(absl::string_view id) {
  return MakeError(ErrorCode::kNoSuchUpload, absl::StrCat("no upload ", id.substr(0, 64),
                                                          " in progress for this bucket and key"));
}

std::string_view SV(absl::string_view s) { return std::string_view(s.data(), s.size()); }

absl::Status CheckNames(absl::string_view bucket, absl::string_view key) {
  return CheckStoreKey(SV(bucket), SV(key), {.max_key_bytes = rados_format::kMaxKeyBytes});
}

UploadInfo InfoOf(absl::string_view bucket, const UploadRecord& r) {
  UploadInfo info;
  info.bucket = std::string(bucket);
  info.key = r.key;
  info.upload_id = r.upload_id;
  info.content_type = r.content_type;
  info.user_metadata = r.user_metadata;
  info.initiated_ms = r.initiated_ms;
  info.initiator = r.initiator;
  return info;
}

// An upload as found in the index: its entry's name and exact value, decoded.
struct FoundUpload {
  Uuid incarnation{};
  std::string encoded_key;
  std::string entry;
  std::string raw;
  UploadRecord record;
};

class RadosMultipart final : public MultipartManager {
 public:
  using MultipartManager::Create;
  RadosMultipart(Cluster* store, const MultipartLimits& limits) : store_(store), limits_(limits) {}

  const MultipartLimits& limits() const override { return limits_; }

  absl::StatusOr<UploadInfo> Create(absl::string_view bucket, absl::string_view key,
                                    const WriteOptions& attributes,
                                    absl::string_view initiator) override {
    if (absl::Status s = CheckNames(bucket, key); !s.ok()) return s;
    size_t attribute_bytes = attributes.content_type.size();
    for (const auto& [n, v] : attributes.user_metadata) attribute_bytes += n.size() + v.size();
    if (attribute_bytes > 16 * 1024) {
      return MakeError(ErrorCode::kInvalidArgument, "content type and metadata too large");
    }
    UploadRecord record;
    record.key = std::string(key);
    record.initiator = std::string(initiator);
    record.content_type = attributes.content_type;
    record.user_metadata = attributes.user_metadata;
    const std::string ekey = rados_format::EncodeKey(SV(key));
    for (int attempt = 0; attempt < 2; ++attempt) {
      absl::StatusOr<Uuid> inc = store_->Incarnation(SV(bucket), attempt > 0);
      if (!inc.ok()) return inc.status();
      const absl::Time now = absl::Now();
      record.upload_id = NewUploadId(now);  // AOBJ-OBJ-203
      record.initiated_ms = absl::ToUnixMillis(now);
      // The collector's entry first: whatever of this upload exists later, it finds.
      GcIntent gc{
          GcKind::kUpload, record.initiated_ms, Uuid{}, *inc, 0, 0, ekey, record.upload_id, 0};
      if (int r = store_->OmapSet(rados_format::GcUploadObject(record.upload_id),
                                  rados_format::GcUploadEntryName(gc.time_ms, record.upload_id),
                                  rados_format::EncodeGcIntent(gc));
          r < 0) {
        return RadosError(r, "garbage entry");
      }
      const std::string upload_object = rados_format::UploadObject(record.upload_id);
      {
        WriteOp op;
        rados_write_op_create(op.op, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
        const std::string state = rados_format::EncodeUploadState({UploadState::kActive, 0, ""});
        const char* keys[] = {rados_format::kStateEntry};
        const size_t key_lens[] = {strlen(rados_format::kStateEntry)};
        const char* vals[] = {state.data()};
        const size_t val_lens[] = {state.size()};
        rados_write_op_omap_set2(op.op, keys, vals, key_lens, val_lens, 1);
        if (int r = rados_write_op_operate(op.op, store_->io(), upload_object.c_str(), nullptr, 0);
            r < 0) {
          return RadosError(r, "upload creation");
        }
      }
      const std::string value = rados_format::EncodeUpload(record);
      const int r =
          store_->OmapSwap(rados_format::IndexObject(*inc),
                           rados_format::UploadEntry(ekey, record.upload_id), "", &value, true);
      if (r == 0) return InfoOf(bucket, record);
      rados_remove(store_->io(), upload_object.c_str());  // the collector's entry settles the rest
      if (r != -ENOENT) return RadosError(r, "upload registration");
      store_->Forget(SV(bucket));  // the bucket went, or the cached incarnation was stale
    }
    return NoSuchBucket();
  }

  size_t ExpireUploads(absl::Time now) override {
    if (limits_.upload_expiry == absl::InfiniteDuration()) return 0;
    const int64_t before_ms = absl::ToUnixMillis(now - limits_.upload_expiry);
    absl::StatusOr<std::vector<BucketSummary>> buckets = store_->ListBuckets();
    if (!buckets.ok()) return 0;
    size_t aborted = 0;
    for (const BucketSummary& b : *buckets) {
      absl::StatusOr<Uuid> inc = store_->Incarnation(b.name, true);
      if (!inc.ok()) continue;
      std::vector<UploadRecord> expired;
      (void)store_->OmapScan(rados_format::IndexObject(*inc), "", rados_format::kMark, UINT64_MAX,
                             [&](std::string_view, std::string_view v) -> absl::Status {
                               absl::StatusOr<UploadRecord> r = rados_format::DecodeUpload(v);
                               if (r.ok() && r->initiated_ms < before_ms) {
                                 expired.push_back(*std::move(r));
                               }
                               return absl::OkStatus();
                             });
      for (const UploadRecord& r : expired) {
        if (Abort(b.name, r.key, r.upload_id).ok()) ++aborted;
      }
    }
    return aborted;
  }

  absl::Status DeleteBucket(absl::string_view bucket) override {
    // The index holds the upload entries: a bucket with one is not empty (AOBJ-OBJ-232), decided
    // by the same versioned removal that every commit and Create races with.
    return store_->DeleteBucket(SV(bucket));
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPart(absl::string_view bucket,
                                                          absl::string_view key,
                                                          absl::string_view upload_id,
                                                          uint32_t part_number,
                                                          uint64_t size) override {
    if (absl::Status s = CheckNames(bucket, key); !s.ok()) return s;
    if (part_number == 0) {  // AOBJ-OBJ-205
      return MakeError(ErrorCode::kInvalidArgument, "part numbers start at 1");
    }
    if (part_number > kMaxPartNumber) {
      return MakeError(ErrorCode::kTooManyParts,
                       absl::StrCat("part number ", part_number, " is above ", kMaxPartNumber));
    }
    if (size > limits_.max_part_size) {  // AOBJ-OBJ-209
      return MakeError(ErrorCode::kEntityTooLarge,
                       absl::StrCat("part of ", size, " bytes exceeds the maximum part size of ",
                                    limits_.max_part_size));
    }
    absl::StatusOr<FoundUpload> found = Find(bucket, key, upload_id);
    if (!found.ok()) return found.status();
    auto writer = std::make_unique<RadosWriter>(store_, found->incarnation, found->encoded_key,
                                                size, WriteOptions{},
                                                PartTarget{std::string(upload_id), part_number});
    if (absl::Status s = writer->Start(); !s.ok()) return s;
    return std::unique_ptr<ObjectWriter>(std::move(writer));
  }

  absl::StatusOr<ObjectInfo> Complete(absl::string_view bucket, absl::string_view key,
                                      absl::string_view upload_id,
                                      const std::vector<CompletedPart>& list,
                                      const WriteOptions& conditions,
                                      std::optional<uint32_t> expected_crc32c) override {
    if (absl::Status s = CheckNames(bucket, key); !s.ok()) return s;
    if (list.size() > kMaxPartNumber) {  // AOBJ-OBJ-210
      return MakeError(
          ErrorCode::kTooManyParts,
          absl::StrCat("the part list has ", list.size(), " entries; at most ", kMaxPartNumber));
    }
    if (list.empty()) return MakeError(ErrorCode::kInvalidArgument, "the part list is empty");
    for (size_t i = 1; i < list.size(); ++i) {  // AOBJ-OBJ-211
      if (list[i].part_number <= list[i - 1].part_number) {
        return MakeError(
            ErrorCode::kInvalidPartOrder,
            absl::StrCat("part ", list[i].part_number, " follows part ", list[i - 1].part_number,
                         "; part numbers must be strictly ascending"));
      }
    }
    absl::StatusOr<FoundUpload> found = Find(bucket, key, upload_id);
    if (!found.ok()) return found.status();
    absl::StatusOr<std::string> closing = Close(*found);
    if (!closing.ok()) return closing.status();
    absl::StatusOr<ObjectInfo> done = Assemble(*found, list, conditions, expected_crc32c);
    if (!done.ok()) {
      // AOBJ-OBJ-218: a Complete that fails leaves the upload as it was, open for parts.
      const std::string active = rados_format::EncodeUploadState({UploadState::kActive, 0, ""});
      store_->OmapSwap(rados_format::UploadObject(found->record.upload_id),
                       rados_format::kStateEntry, *closing, &active, true);
    }
    return done;
  }

  absl::Status Abort(absl::string_view bucket, absl::string_view key,
                     absl::string_view upload_id) override {
    if (absl::Status s = CheckNames(bucket, key); !s.ok()) return s;
    absl::StatusOr<FoundUpload> found = Find(bucket, key, upload_id);
    if (!found.ok()) return found.status();
    absl::StatusOr<std::string> closing = Close(*found);
    if (!closing.ok()) return closing.status();
    // AOBJ-OBJ-220: gone from the index in one step; the collector deletes the parts.
    const int r = store_->OmapSwap(rados_format::IndexObject(found->incarnation), found->entry,
                                   found->raw, nullptr, true);
    if (r == -ECANCELED || r == -ENOENT) return NoSuchUpload(upload_id);
    if (r < 0) return RadosError(r, "upload removal");
    return absl::OkStatus();
  }

  absl::StatusOr<PartsPage> ListParts(absl::string_view bucket, absl::string_view key,
                                      absl::string_view upload_id, uint32_t marker,
                                      uint32_t max_parts) override {
    if (absl::Status s = CheckNames(bucket, key); !s.ok()) return s;
    const uint32_t limit = PageLimit(max_parts, kMaxListedParts);
    absl::StatusOr<FoundUpload> found = Find(bucket, key, upload_id);
    if (!found.ok()) return found.status();
    PartsPage page;
    page.upload = InfoOf(bucket, found->record);
    std::vector<PartRecord> parts;
    absl::Status s = store_->OmapScan(
        rados_format::UploadObject(found->record.upload_id),
        marker == 0 ? std::string(rados_format::kPartPrefix) : rados_format::PartEntry(marker),
        rados_format::kPartPrefix, uint64_t{limit} + 1,
        [&](std::string_view, std::string_view v) -> absl::Status {
          absl::StatusOr<PartRecord> p = rados_format::DecodePart(v);
          if (!p.ok()) return p.status();
          parts.push_back(*std::move(p));
          return absl::OkStatus();
        });
    if (!s.ok()) return IsIndexGone(s) ? NoSuchUpload(upload_id) : s;
    for (const PartRecord& p : parts) {
      if (!AddToPage(page, limit, PartInfoOf(p))) break;
    }
    return page;
  }

  absl::StatusOr<UploadsPage> ListUploads(absl::string_view bucket, absl::string_view prefix,
                                          absl::string_view key_marker,
                                          absl::string_view upload_id_marker,
                                          uint32_t max_uploads) override {
    if (bucket.empty()) return MakeError(ErrorCode::kInvalidArgument, "invalid bucket name");
    const uint32_t limit = PageLimit(max_uploads, kMaxListedUploads);
    // AOBJ-OBJ-224: after (key_marker, upload_id_marker), or past every upload of key_marker.
    std::string start;
    if (!key_marker.empty() || !upload_id_marker.empty()) {
      const std::string ek = rados_format::EncodeKey(SV(key_marker));
      start = upload_id_marker.empty() ? rados_format::UploadEntry(ek, "\xff")
                                       : rados_format::UploadEntry(ek, SV(upload_id_marker));
    }
    const std::string filter = rados_format::UploadEntryPrefix(rados_format::EncodeKey(SV(prefix)));
    return store_->OnIndex<UploadsPage>(
        SV(bucket), [&](const std::string& index) -> absl::StatusOr<UploadsPage> {
          UploadsPage page;
          std::vector<UploadRecord> records;
          absl::Status s =
              store_->OmapScan(index, start, filter, uint64_t{limit} + 1,
                               [&](std::string_view, std::string_view v) -> absl::Status {
                                 absl::StatusOr<UploadRecord> r = rados_format::DecodeUpload(v);
                                 if (!r.ok()) return r.status();
                                 records.push_back(*std::move(r));
                                 return absl::OkStatus();
                               });
          if (!s.ok()) return s;
          for (const UploadRecord& r : records) {
            UploadInfo info = InfoOf(bucket, r);
            info.content_type.clear();  // as the reference manager: not part of a listing
            if (!AddToPage(page, limit, std::move(info))) break;
          }
          return page;
        });
  }

 private:
  static PartInfo PartInfoOf(const PartRecord& p) {
    PartInfo info;
    info.part_number = p.part_number;
    info.size = p.segment.size;
    info.etag = p.etag;
    info.last_modified_ms = p.last_modified_ms;
    info.crc32c = p.crc32c;
    return info;
  }

  // The upload's entry in the bucket's index: kNoSuchBucket, kNoSuchUpload.
  absl::StatusOr<FoundUpload> Find(absl::string_view bucket, absl::string_view key,
                                   absl::string_view upload_id) {
    if (!IsWellFormedUploadId(upload_id)) return NoSuchUpload(upload_id);
    FoundUpload found;
    found.encoded_key = rados_format::EncodeKey(SV(key));
    found.entry = rados_format::UploadEntry(found.encoded_key, SV(upload_id));
    absl::StatusOr<bool> ok =
        store_->OnIndex<bool>(SV(bucket), [&](const std::string& index) -> absl::StatusOr<bool> {
          absl::StatusOr<std::optional<std::string>> v = store_->OmapGet(index, found.entry);
          if (!v.ok()) return v.status();
          if (!v->has_value()) return NoSuchUpload(upload_id);
          found.raw = **v;
          return true;
        });
    if (!ok.ok()) return ok.status();
    absl::StatusOr<Uuid> inc = store_->Incarnation(SV(bucket), false);
    if (!inc.ok()) return inc.status();
    found.incarnation = *inc;
    absl::StatusOr<UploadRecord> record = rados_format::DecodeUpload(found.raw);
    if (!record.ok()) return record.status();
    found.record = *std::move(record);
    return found;
  }

  // Swaps the upload's state to a closing state of this request's own and returns it.
  absl::StatusOr<std::string> Close(const FoundUpload& u) {
    const std::string object = rados_format::UploadObject(u.record.upload_id);
    for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
      absl::StatusOr<std::optional<std::string>> raw =
          store_->OmapGet(object, rados_format::kStateEntry);
      if (!raw.ok()) {
        return IsIndexGone(raw.status()) ? NoSuchUpload(u.record.upload_id) : raw.status();
      }
      if (!raw->has_value()) return NoSuchUpload(u.record.upload_id);
      const std::string closing =
          rados_format::EncodeUploadState({UploadState::kClosing, NowMs(), RandomBytes(8)});
      const int r = store_->OmapSwap(object, rados_format::kStateEntry, **raw, &closing, true);
      if (r == 0) return closing;
      if (r == -ENOENT) return NoSuchUpload(u.record.upload_id);
      if (r != -ECANCELED) return RadosError(r, "upload state");
    }
    return MakeError(ErrorCode::kStorageError, "closing the upload kept losing races");
  }

  // Builds the object from the listed parts and commits it, removing the upload's entry in the
  // same RADOS operation. The upload is closing, so its parts cannot change meanwhile.
  absl::StatusOr<ObjectInfo> Assemble(const FoundUpload& u, const std::vector<CompletedPart>& list,
                                      const WriteOptions& conditions,
                                      std::optional<uint32_t> expected_crc32c) {
    std::map<uint32_t, PartRecord> parts;
    absl::Status s =
        store_->OmapScan(rados_format::UploadObject(u.record.upload_id), rados_format::kPartPrefix,
                         rados_format::kPartPrefix, UINT64_MAX,
                         [&](std::string_view, std::string_view v) -> absl::Status {
                           absl::StatusOr<PartRecord> p = rados_format::DecodePart(v);
                           if (!p.ok()) return p.status();
                           parts[p->part_number] = *std::move(p);
                           return absl::OkStatus();
                         });
    if (!s.ok()) return IsIndexGone(s) ? NoSuchUpload(u.record.upload_id) : s;
    HeadRecord head;
    std::vector<std::string> etags;
    uint64_t total = 0;
    uint32_t crc = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      auto it = parts.find(list[i].part_number);
      if (it == parts.end()) {  // AOBJ-OBJ-212
        return MakeError(ErrorCode::kInvalidPart,
                         absl::StrCat("part ", list[i].part_number, " was not uploaded"));
      }
      const PartRecord& p = it->second;
      const std::string want = BareMd5Etag(list[i].etag);
      if (want.empty() || want != BareMd5Etag(p.etag)) {
        return MakeError(ErrorCode::kInvalidPart,
                         absl::StrCat("part ", p.part_number, " has ETag ", p.etag,
                                      ", the list says ", list[i].etag.substr(0, 80)));
      }
      if (i + 1 < list.size() && p.segment.size < limits_.min_part_size) {  // AOBJ-OBJ-213
        return MakeError(
            ErrorCode::kEntityTooSmall,
            absl::StrCat("part ", p.part_number, " has ", p.segment.size,
                         " bytes; every part but the last needs at least ", limits_.min_part_size));
      }
      total += p.segment.size;
      // The CRC32C of the whole content from the parts' CRCs and sizes (CRC concatenation: the
      // same value as over the concatenated bytes; AOBJ-DAT-152). RADOS checksums every stripe
      // at rest, and each part's CRC32C was verified when it arrived.
      crc = Crc32cCombine(crc, p.crc32c, p.segment.size);
      if (p.segment.size > 0) head.segments.push_back(p.segment);
      etags.push_back(p.etag);
    }
    if (total > limits_.max_object_size) {  // AOBJ-OBJ-214
      return MakeError(
          ErrorCode::kEntityTooLarge,
          absl::StrCat("the parts add up to ", total, " bytes; the maximum object size is ",
                       limits_.max_object_size));
    }
    // AOBJ-OBJ-259: the client's checksum of the whole, before the head is committed.
    if (absl::Status bad = CheckFullObjectCrc32c(expected_crc32c, crc); !bad.ok()) {
      return bad;
    }
    absl::StatusOr<std::string> etag = MultipartEtag(etags);  // AOBJ-OBJ-217
    if (!etag.ok()) return etag.status();
    head.info.size = total;
    head.info.etag = *std::move(etag);
    head.info.crc32c = crc;
    head.info.content_type = u.record.content_type;
    head.info.user_metadata = u.record.user_metadata;
    head.info.last_modified_ms = NowMs();
    WriteOptions commit;  // AOBJ-OBJ-231: only the commit conditions
    commit.if_none_match_star = conditions.if_none_match_star;
    commit.if_match_etag = conditions.if_match_etag;
    const std::pair<std::string, std::string> entry{u.entry, u.raw};
    return store_->CommitHead(u.incarnation, u.encoded_key, head, commit, &entry);
  }

  Cluster* const store_;
  const MultipartLimits limits_;
};

}  // namespace

absl::StatusOr<ObjectInfo> RadosWriter::InstallPart(const ObjectInfo& info) {
  const std::string object = rados_format::UploadObject(part_->upload_id);
  const std::string entry = rados_format::PartEntry(part_->part_number);
  PartRecord record;
  record.part_number = part_->part_number;
  record.segment = segment();
  record.etag = info.etag;
  record.crc32c = info.crc32c;
  record.last_modified_ms = NowMs();
  const std::string value = rados_format::EncodePart(record);
  for (int attempt = 0; attempt < kCasAttempts;) {
    ReadOp read;
    OmapIter iter;
    int prval = 0;
    const char* keys[] = {rados_format::kStateEntry, entry.data()};
    const size_t lens[] = {strlen(rados_format::kStateEntry), entry.size()};
    rados_read_op_omap_get_vals_by_keys2(read.op, keys, 2, lens, &iter.it, &prval);
    int r = rados_read_op_operate(read.op, store_->io(), object.c_str(), 0);
    if (r == -ENOENT) return NoSuchUpload(part_->upload_id);
    if (r < 0 || prval < 0) return RadosError(r < 0 ? r : prval, "upload read");
    std::string state, old;
    char *k = nullptr, *v = nullptr;
    size_t kl = 0, vl = 0;
    while (rados_omap_get_next2(iter.it, &k, &v, &kl, &vl) == 0 && k != nullptr) {
      (std::string_view(k, kl) == entry ? old : state).assign(v, vl);
    }
    absl::StatusOr<UploadStateRecord> decoded = rados_format::DecodeUploadState(state);
    if (!decoded.ok()) return decoded.status();
    if (decoded->state != UploadState::kActive) {
      // AOBJ-OBJ-225: a Complete or Abort is deciding. Parts wait for its outcome: if the upload
      // is gone after it, this part fails NO_SUCH_UPLOAD and stores nothing.
      absl::StatusOr<std::optional<std::string>> listed =
          store_->OmapGet(rados_format::IndexObject(incarnation_),
                          rados_format::UploadEntry(encoded_key_, part_->upload_id));
      if (!listed.ok() || !listed->has_value()) return NoSuchUpload(part_->upload_id);
      if (NowMs() - decoded->since_ms > kStaleClosingMs) {
        // Its gateway stopped before deciding: the upload is open again.
        const std::string active = rados_format::EncodeUploadState({UploadState::kActive, 0, ""});
        store_->OmapSwap(object, rados_format::kStateEntry, state, &active, true);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    if (!old.empty()) {
      absl::StatusOr<PartRecord> replaced = rados_format::DecodePart(old);
      if (replaced.ok()) {  // AOBJ-OBJ-208: the part it replaces goes to the collector
        if (absl::Status s = store_->NoteSegment(GcKind::kReplaced, incarnation_, encoded_key_,
                                                 replaced->segment, &*part_);
            !s.ok()) {
          return s;
        }
      }
    }
    WriteOp op;
    int state_cmp = 0, part_cmp = 0;
    rados_write_op_assert_exists(op.op);
    rados_write_op_omap_cmp2(op.op, keys[0], LIBRADOS_CMPXATTR_OP_EQ, state.data(), lens[0],
                             state.size(), &state_cmp);
    rados_write_op_omap_cmp2(op.op, entry.data(), LIBRADOS_CMPXATTR_OP_EQ, old.data(), entry.size(),
                             old.size(), &part_cmp);
    const char* set_keys[] = {entry.data()};
    const size_t set_key_lens[] = {entry.size()};
    const char* vals[] = {value.data()};
    const size_t val_lens[] = {value.size()};
    rados_write_op_omap_set2(op.op, set_keys, vals, set_key_lens, val_lens, 1);
    r = rados_write_op_operate(op.op, store_->io(), object.c_str(), nullptr, 0);
    if (r == 0) {
      ObjectInfo out = info;
      out.last_modified_ms = record.last_modified_ms;
      return out;
    }
    if (r == -ENOENT) return NoSuchUpload(part_->upload_id);
    if (r != -ECANCELED) return RadosError(r, "part installation");
    ++attempt;  // the state or the part changed between the read and the swap
  }
  return MakeError(ErrorCode::kStorageError, "part installation kept losing races");
}

absl::StatusOr<std::unique_ptr<MultipartManager>> Cluster::OpenMultipart(
    const MultipartLimits& limits) {
  auto manager = std::make_unique<RadosMultipart>(this, limits);
  manager->ExpireUploads(absl::Now());  // AOBJ-OBJ-234: also what expired while stopped
  return std::unique_ptr<MultipartManager>(std::move(manager));
}

}  // namespace aobj::rados_internal
