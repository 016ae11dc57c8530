// RadosStore (include/aobj/rados_store.h) on librados's C API. The layout and records are in
// rados_format.h; this file holds the protocol between gateways that share a pool:
//
// * Bucket: CreateBucket makes a fresh index object first, then compare-and-swaps the name into
//   aobj.buckets (from absent, or from a record whose index is gone); exactly one of concurrent
//   creators wins. DeleteBucket reads the index (empty?) and its version, removes the index with
//   assert_version (so no commit slips in between), then removes the name. An operation whose
//   index object has gone answers kNoSuchBucket, which is how a bucket deleted through one
//   gateway is gone for writers in flight on every other.
// * PUT: a kWriting garbage entry, then the stripes under a fresh uuid, then Commit: renew the
//   garbage entry by compare-and-swap (fails if the collector took it: the write outlived the
//   grace), read the key's head, check the conditions against it, note the replaced version for
//   the collector, and compare-and-swap the head from exactly what was read to the new record;
//   on a lost race, read again. Last, the kWriting entry goes.
// * Delete: the same swap, to no value.
// * Collector: for each entry older than the grace, check whether the key's head names the
//   entry's uuid, remove the entry by compare-and-swap (a writer that renewed it meanwhile wins),
//   and delete the stripes unless the head named them.
#include "aobj/rados_store.h"

#include <errno.h>
#include <string.h>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "rados/librados.h"
#include "store_rados/rados_cluster.h"
#include "store_rados/rados_format.h"

namespace aobj::rados_internal {

// ---- writer --------------------------------------------------------------------------------

RadosWriter::RadosWriter(Cluster* store, Uuid incarnation, std::string encoded_key, uint64_t size,
                         WriteOptions options, std::optional<PartTarget> part)
    : store_(store),
      incarnation_(incarnation),
      encoded_key_(std::move(encoded_key)),
      size_(size),
      options_(std::move(options)),
      part_(std::move(part)),
      stripe_bytes_(store->options().stripe_bytes) {}

absl::Status RadosWriter::Start() {
  std::string value;
  if (absl::Status st = store_->NoteSegment(GcKind::kWriting, incarnation_, encoded_key_, segment(),
                                            part_ ? &*part_ : nullptr, &value, &intent_name_);
      !st.ok()) {
    return st;
  }
  intent_ = std::move(value);  // empty for an empty object: nothing to collect
  return absl::OkStatus();
}

RadosWriter::~RadosWriter() {
  if (!done_) Abandon();
}

void RadosWriter::Abandon() {
  done_ = true;
  (void)WaitUntil(0);
  if (intent_.empty()) return;
  // Best effort: what stays behind (a gateway that dies here) is the collector's.
  if (store_->DeleteStripes(uuid_, rados_format::StripeCount(size_, stripe_bytes_)).ok()) {
    store_->OmapSwap(rados_format::GcObject(uuid_), intent_name_, intent_, nullptr, true);
  }
}

absl::Span<uint8_t> RadosWriter::DirectBuffer() {
  // One stripe at most: the caller fills it whole, Commit() sends it.
  if (size_ == 0 || size_ > stripe_bytes_ || appended_ != 0 || done_) return {};
  direct_ = true;
  buffer_.resize(size_);
  return absl::MakeSpan(reinterpret_cast<uint8_t*>(buffer_.data()), buffer_.size());
}

absl::Status RadosWriter::WaitUntil(size_t n) {
  while (in_flight_.size() > n) {
    InFlight& f = in_flight_.front();
    const int r = f.done->Wait();
    if (r < 0 && failed_.ok()) {
      failed_ = RadosError(r, absl::StrCat("write of stripe ", f.stripe));
    }
    in_flight_.pop_front();
  }
  return failed_;
}

absl::Status RadosWriter::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  if (absl::Status s = WaitUntil(store_->options().stripes_in_flight - 1); !s.ok()) return s;
  InFlight f;
  f.done = std::make_unique<Completion>();
  f.bytes = std::move(buffer_);
  f.stripe = next_stripe_++;
  buffer_.clear();
  const int r =
      rados_aio_write_full(store_->io(), rados_format::DataObject(uuid_, f.stripe).c_str(),
                           f.done->c, f.bytes.data(), f.bytes.size());
  if (r < 0) {
    failed_ = RadosError(r, absl::StrCat("write of stripe ", f.stripe));
    return failed_;
  }
  in_flight_.push_back(std::move(f));
  return absl::OkStatus();
}

absl::Status RadosWriter::Append(absl::Span<const uint8_t> data) {
  if (done_) return MakeError(ErrorCode::kInvalidArgument, "Append after Commit");
  if (direct_) return MakeError(ErrorCode::kInvalidArgument, "Append after DirectBuffer");
  if (data.size() > size_ - appended_) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("Append past the declared size of ", size_, " bytes"));
  }
  if (!failed_.ok()) return failed_;
  while (!data.empty()) {
    if (buffer_.empty()) buffer_.reserve(std::min<uint64_t>(stripe_bytes_, size_ - appended_));
    const size_t n = std::min<size_t>(data.size(), stripe_bytes_ - buffer_.size());
    buffer_.append(reinterpret_cast<const char*>(data.data()), n);
    data.remove_prefix(n);
    appended_ += n;
    if (buffer_.size() == stripe_bytes_) {
      if (absl::Status s = Flush(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ObjectInfo> RadosWriter::Commit(const ObjectInfo& info) {
  if (done_) return MakeError(ErrorCode::kInvalidArgument, "Commit called twice");
  if (direct_) appended_ = size_;
  if (appended_ != size_) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("Commit after ", appended_, " of ", size_, " bytes"));
  }
  if (info.size != size_) {
    return MakeError(ErrorCode::kInvalidArgument, "Commit with a size other than BeginPut's");
  }
  if (absl::Status s = Flush(); !s.ok()) return s;
  if (absl::Status s = WaitUntil(0); !s.ok()) return s;
  if (!intent_.empty()) {
    // Renew the entry, or learn that the collector took this write's stripes.
    GcIntent renewed = *rados_format::DecodeGcIntent(intent_);
    renewed.time_ms = std::max(NowMs(), renewed.time_ms + 1);  // a different value to swap in
    std::string value = rados_format::EncodeGcIntent(renewed);
    const int r =
        store_->OmapSwap(rados_format::GcObject(uuid_), intent_name_, intent_, &value, true);
    if (r == -ECANCELED || r == -ENOENT) {
      // The collector took the entry and deleted the stripes it found; stripes written since
      // are this writer's to delete.
      intent_.clear();
      done_ = true;
      (void)store_->DeleteStripes(uuid_, next_stripe_);
      return MakeError(
          ErrorCode::kStorageError,
          absl::StrCat("the write took longer than the garbage-collection grace (",
                       store_->options().gc_grace_ms, " ms) and its data was collected"));
    }
    if (r < 0) return RadosError(r, "garbage entry renewal");
    intent_ = std::move(value);
  }
  absl::StatusOr<ObjectInfo> done = part_ ? InstallPart(info) : CommitObject(info);
  if (done.ok()) {
    done_ = true;
    if (!intent_.empty()) {
      // The commit stands whatever happens here; a leftover entry is settled by the collector.
      store_->OmapSwap(rados_format::GcObject(uuid_), intent_name_, intent_, nullptr, true);
    }
  }
  return done;
}

absl::StatusOr<ObjectInfo> RadosWriter::CommitObject(const ObjectInfo& info) {
  HeadRecord head;
  if (size_ > 0) head.segments.push_back(segment());
  head.info = info;
  head.info.content_type = options_.content_type;
  head.info.user_metadata = options_.user_metadata;
  head.info.last_modified_ms = NowMs();
  return store_->CommitHead(incarnation_, encoded_key_, head, options_, nullptr);
}

// ---- heads -------------------------------------------------------------------------------------

absl::StatusOr<ObjectInfo> Cluster::CommitHead(
    const Uuid& incarnation, const std::string& encoded_key, const HeadRecord& head,
    const WriteOptions& options, const std::pair<std::string, std::string>* upload_entry) {
  const std::string value = rados_format::EncodeHead(head);
  const std::string index = rados_format::IndexObject(incarnation);
  for (int attempt = 0; attempt < kCasAttempts; ++attempt) {
    absl::StatusOr<HeadLookup> current = ReadHead(index, encoded_key);
    if (!current.ok()) {
      return IsIndexGone(current.status()) ? NoSuchBucket() : current.status();
    }
    if (absl::Status s =
            CheckCommitConditions(options, current->found ? &current->head.info.etag : nullptr);
        !s.ok()) {
      return s;
    }
    if (current->found) {
      if (absl::Status s = NoteReplaced(incarnation, encoded_key, current->head); !s.ok()) {
        return s;
      }
    }
    WriteOp op;
    int head_cmp = 0, upload_cmp = 0;
    rados_write_op_assert_exists(op.op);
    const std::string& expected = current->found ? current->raw : std::string();
    rados_write_op_omap_cmp2(op.op, encoded_key.data(), LIBRADOS_CMPXATTR_OP_EQ, expected.data(),
                             encoded_key.size(), expected.size(), &head_cmp);
    if (upload_entry != nullptr) {
      rados_write_op_omap_cmp2(op.op, upload_entry->first.data(), LIBRADOS_CMPXATTR_OP_EQ,
                               upload_entry->second.data(), upload_entry->first.size(),
                               upload_entry->second.size(), &upload_cmp);
    }
    const char* keys[] = {encoded_key.data()};
    const size_t key_lens[] = {encoded_key.size()};
    const char* vals[] = {value.data()};
    const size_t val_lens[] = {value.size()};
    rados_write_op_omap_set2(op.op, keys, vals, key_lens, val_lens, 1);
    if (upload_entry != nullptr) {
      const char* rm[] = {upload_entry->first.data()};
      const size_t rm_lens[] = {upload_entry->first.size()};
      rados_write_op_omap_rm_keys2(op.op, rm, rm_lens, 1);
    }
    const int r = rados_write_op_operate(op.op, io(), index.c_str(), nullptr, 0);
    if (r == -ENOENT) return NoSuchBucket();
    if (r == -ECANCELED) {
      if (upload_entry != nullptr && upload_cmp != 0) {
        return MakeError(ErrorCode::kNoSuchUpload,
                         "the upload was completed or aborted by another request meanwhile");
      }
      continue;  // another writer committed between the read and the swap
    }
    if (r < 0) return RadosError(r, "head update");
    return head.info;
  }
  return MakeError(ErrorCode::kStorageError, "commit kept losing races with other writers");
}

// ---- reader --------------------------------------------------------------------------------

absl::StatusOr<size_t> RadosReader::ReadAt(uint64_t offset, absl::Span<uint8_t> out) {
  const uint64_t size = head_.info.size;
  if (offset >= size || out.empty()) return 0;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
  struct Piece {
    std::unique_ptr<Completion> done;
    uint64_t stripe = 0;
    size_t want = 0;
  };
  std::deque<Piece> pending;
  absl::Status result;
  auto reap = [&] {
    Piece& p = pending.front();
    const int r = p.done->Wait();
    if (result.ok()) {
      if (r == -ENOENT) {
        result = MakeError(ErrorCode::kStorageError,
                           absl::StrCat("stripe ", p.stripe,
                                        " of the object is gone (its "
                                        "version was replaced or deleted more than the "
                                        "garbage-collection grace ago)"));
      } else if (r < 0) {
        result = RadosError(r, absl::StrCat("read of stripe ", p.stripe));
      } else if (static_cast<size_t>(r) != p.want) {
        result =
            MakeError(ErrorCode::kStorageError, absl::StrCat("stripe ", p.stripe,
                                                             " holds fewer bytes than its head "
                                                             "records"));
      }
    }
    pending.pop_front();
  };
  // The segment holding `offset`: the first whose end lies past it.
  size_t seg = 0;
  uint64_t seg_start = 0;
  while (seg < head_.segments.size() && seg_start + head_.segments[seg].size <= offset) {
    seg_start += head_.segments[seg].size;
    ++seg;
  }
  size_t done = 0;
  while (done < n && seg < head_.segments.size()) {
    const rados_format::Segment& s = head_.segments[seg];
    const uint64_t at = offset + done - seg_start;  // within the segment
    if (at >= s.size) {
      seg_start += s.size;
      ++seg;
      continue;
    }
    const uint64_t index = at / s.stripe_bytes;
    const uint64_t within = at % s.stripe_bytes;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>({s.stripe_bytes - within, s.size - at, n - done}));
    Piece p{std::make_unique<Completion>(), index, want};
    const int r =
        rados_aio_read(store_->io(), rados_format::DataObject(s.uuid, index).c_str(), p.done->c,
                       reinterpret_cast<char*>(out.data() + done), want, within);
    if (r < 0) {
      result = RadosError(r, absl::StrCat("read of stripe ", index));
      break;
    }
    pending.push_back(std::move(p));
    done += want;
    if (pending.size() >= store_->options().stripes_in_flight) reap();
  }
  while (!pending.empty()) reap();
  if (!result.ok()) return result;
  return n;
}

// ---- collector -----------------------------------------------------------------------------

absl::StatusOr<bool> Cluster::Named(const GcIntent& intent) {
  absl::StatusOr<HeadLookup> got =
      ReadHead(rados_format::IndexObject(intent.incarnation), intent.encoded_key);
  if (!got.ok() && !IsIndexGone(got.status())) return got.status();
  if (got.ok() && got->found) {
    for (const rados_format::Segment& s : got->head.segments) {
      if (s.uuid == intent.uuid) return true;
    }
  }
  if (intent.upload_id.empty()) return false;
  absl::StatusOr<std::optional<std::string>> part = OmapGet(
      rados_format::UploadObject(intent.upload_id), rados_format::PartEntry(intent.part_number));
  if (!part.ok()) return IsIndexGone(part.status()) ? absl::StatusOr<bool>(false) : part.status();
  if (!part->has_value()) return false;
  absl::StatusOr<rados_format::PartRecord> record = rados_format::DecodePart(**part);
  return record.ok() && record->segment.uuid == intent.uuid;
}

absl::Status Cluster::SettleUpload(const std::string& gc_object, const std::string& name,
                                   const std::string& value, const GcIntent& intent, int64_t now,
                                   RadosGcReport* report) {
  const std::string index = rados_format::IndexObject(intent.incarnation);
  absl::StatusOr<std::optional<std::string>> entry =
      OmapGet(index, rados_format::UploadEntry(intent.encoded_key, intent.upload_id));
  if (!entry.ok() && !IsIndexGone(entry.status())) return entry.status();
  if (entry.ok() && entry->has_value()) {
    // In progress: look again after another grace.
    GcIntent later = intent;
    later.time_ms = now;
    const std::string renewed = rados_format::EncodeGcIntent(later);
    OmapSwap(gc_object, name, value, &renewed, true);
    ++report->entries_waiting;
    return absl::OkStatus();
  }
  // Completed or aborted (or its creation stopped half-way): the parts no head names go, then
  // the upload object, then the entry. A pass that stops midway is repeated by the next.
  const std::string upload = rados_format::UploadObject(intent.upload_id);
  std::vector<rados_format::PartRecord> parts;
  absl::Status scan = OmapScan(upload, rados_format::kPartPrefix, rados_format::kPartPrefix,
                               UINT64_MAX, [&](std::string_view, std::string_view v) {
                                 absl::StatusOr<rados_format::PartRecord> p =
                                     rados_format::DecodePart(v);
                                 if (p.ok()) parts.push_back(*std::move(p));
                                 return absl::OkStatus();
                               });
  if (!scan.ok() && !IsIndexGone(scan)) return scan;
  absl::StatusOr<HeadLookup> head = ReadHead(index, intent.encoded_key);
  if (!head.ok() && !IsIndexGone(head.status())) return head.status();
  for (const rados_format::PartRecord& p : parts) {
    bool named = false;
    if (head.ok() && head->found) {
      for (const rados_format::Segment& s : head->head.segments) named |= s.uuid == p.segment.uuid;
    }
    if (named) continue;
    if (absl::Status d = DeleteStripes(
            p.segment.uuid, rados_format::StripeCount(p.segment.size, p.segment.stripe_bytes));
        !d.ok()) {
      return d;
    }
    ++report->versions_deleted;
  }
  if (const int r = rados_remove(io(), upload.c_str()); r < 0 && r != -ENOENT) {
    return RadosError(r, absl::StrCat("removal of ", upload));
  }
  OmapSwap(gc_object, name, value, nullptr, true);
  return absl::OkStatus();
}

absl::StatusOr<RadosGcReport> Cluster::CollectGarbage() {
  RadosGcReport report;
  const int64_t now = NowMs();
  for (int shard = 0; shard < rados_format::kGcShards; ++shard) {
    const std::string oid = absl::StrCat("aobj.gc.", shard);
    std::vector<std::pair<std::string, std::string>> due;
    // Names sort by the time each entry was first written: the scan stops at the first one
    // younger than the grace, so a pass reads what is due, not every entry of the shard.
    absl::Status s = OmapScan(oid, "", "", UINT64_MAX, [&](std::string_view k, std::string_view v) {
      const int64_t first = rados_format::GcEntryTime(k);
      if (first >= 0 && first + options().gc_grace_ms > now) {
        ++report.entries_waiting;
        return absl::CancelledError();  // stop: every later name is younger
      }
      absl::StatusOr<GcIntent> intent = rados_format::DecodeGcIntent(v);
      if (intent.ok() && intent->time_ms + options().gc_grace_ms > now) {
        ++report.entries_waiting;  // renewed since (a writer, an upload in progress)
      } else {
        due.emplace_back(std::string(k), std::string(v));
      }
      return absl::OkStatus();
    });
    if (!s.ok() && !IsIndexGone(s)) return s;
    for (const auto& [name, value] : due) {
      ++report.entries_examined;
      absl::StatusOr<GcIntent> intent = rados_format::DecodeGcIntent(value);
      if (intent.ok() && intent->kind == GcKind::kUpload) {
        if (absl::Status u = SettleUpload(oid, name, value, *intent, now, &report); !u.ok()) {
          return u;
        }
        continue;
      }
      bool named = false;
      if (intent.ok()) {
        absl::StatusOr<bool> n = Named(*intent);
        if (!n.ok()) return n.status();  // cannot tell: decide on a later pass
        named = *n;
      }
      // Removing the entry decides: a writer that renewed it meanwhile keeps it, and then its
      // commit, not this collector, settles what happens to its stripes.
      if (OmapSwap(oid, name, value, nullptr, true) != 0) continue;
      if (!intent.ok() || named) {
        ++report.versions_kept;
        continue;
      }
      if (absl::Status d = DeleteStripes(
              intent->uuid, rados_format::StripeCount(intent->size, intent->stripe_bytes));
          !d.ok()) {
        OmapSet(oid, name, value);  // put it back: a later pass retries the deletion
        return d;
      }
      ++report.versions_deleted;
    }
  }
  return report;
}

}  // namespace aobj::rados_internal

namespace aobj {

using namespace rados_internal;

absl::StatusOr<std::unique_ptr<RadosStore>> OpenRadosStore(const RadosStoreOptions& options) {
  if (options.stripe_bytes < rados_format::kMinStripeBytes ||
      options.stripe_bytes > rados_format::kMaxStripeBytes) {
    return MakeError(ErrorCode::kInvalidArgument, "stripe_bytes must be 64 KiB to 64 MiB");
  }
  if (options.stripes_in_flight < 1 || options.stripes_in_flight > 64) {
    return MakeError(ErrorCode::kInvalidArgument, "stripes_in_flight must be 1 to 64");
  }
  if (options.gc_grace_ms < 0 || options.gc_interval_ms < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "gc_grace_ms and gc_interval_ms must be >= 0");
  }
  rados_t cluster;
  const std::string name = absl::StrCat("client.", options.user);
  if (int r = rados_create2(&cluster, "ceph", name.c_str(), 0); r < 0) {
    return RadosError(r, "cluster handle");
  }
  auto fail = [&](int r, std::string what) {
    rados_shutdown(cluster);
    return RadosError(r, what);
  };
  if (int r = rados_conf_read_file(cluster,
                                   options.conf_file.empty() ? nullptr : options.conf_file.c_str());
      r < 0) {
    return fail(r, absl::StrCat("config file '", options.conf_file, "'"));
  }
  rados_conf_parse_env(cluster, nullptr);
  const std::string timeout = absl::StrCat(std::max<int64_t>(1, options.connect_timeout_ms / 1000));
  rados_conf_set(cluster, "client_mount_timeout", timeout.c_str());
  rados_conf_set(cluster, "rados_mon_op_timeout", timeout.c_str());
  rados_conf_set(cluster, "rados_osd_op_timeout", "60");
  rados_conf_set(cluster, "log_to_stderr", "false");
  rados_conf_set(cluster, "err_to_stderr", "false");
  if (int r = rados_connect(cluster); r < 0) {
    return fail(r, absl::StrCat("connection to the cluster (config '", options.conf_file,
                                "'; is it running?)"));
  }
  rados_ioctx_t io;
  if (int r = rados_ioctx_create(cluster, options.pool.c_str(), &io); r < 0) {
    return fail(r, absl::StrCat("pool '", options.pool, "'",
                                r == -ENOENT ? absl::StrCat(" does not exist (create it: ceph osd "
                                                            "pool create ",
                                                            options.pool, ")")
                                             : ""));
  }
  rados_ioctx_set_namespace(io, options.ns.c_str());
  // The bucket registry exists from the start, so that every later operation on it is a
  // compare-and-swap on one object.
  {
    WriteOp op;
    rados_write_op_create(op.op, LIBRADOS_CREATE_IDEMPOTENT, nullptr);
    if (int r = rados_write_op_operate(op.op, io, rados_format::kBucketsObject, nullptr, 0);
        r < 0) {
      rados_ioctx_destroy(io);
      return fail(r, "bucket registry");
    }
  }
  return std::unique_ptr<RadosStore>(std::make_unique<Cluster>(options, cluster, io));
}

}  // namespace aobj
