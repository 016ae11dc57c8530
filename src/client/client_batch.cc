#include "client/client_impl.h"

namespace aobj::client_internal {

absl::StatusOr<BatchGetResults> ClientImpl::GetObjects(const CallContext& outer,
                                                       const std::string& bucket,
                                                       const std::vector<BatchGetItem>& items,
                                                       const CallOptions& call) {
  const CallContext ctx = outer.Within(call);
  for (const BatchGetItem& item : items) {  // every buffer this Client's, before anything moves
    if (item.destination.buffer != nullptr) {
      AOBJ_RETURN_IF_ERROR(buffers_.Issued(*item.destination.buffer).status());
    }
  }
  const uint32_t max_windows =
      session_.HasCapability(kCapMultiDescriptor) ? session_.info().limits.max_descriptors : 1;
  auto plans = client_internal::PlanBatchGet(items, kMaxBatchGetItems, max_windows,
                                             session_.info().limits.max_transfer_bytes);
  if (!plans.ok()) return plans.status();
  BatchGetResults out(items.size(), MakeError(ErrorCode::kInternal, "not sent"));
  if (!session_.HasCapability(kCapBatchGet)) return GetEach(ctx, bucket, items, std::move(out));
  for (const client_internal::BatchRequestPlan& plan : *plans) {
    pb::GetObjectsRequest req;
    req.set_bucket(bucket);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    for (size_t k = 0; k < plan.items.size(); ++k) {
      const BatchGetItem& item = items[plan.items[k]];
      pb::GetObjectsItem* it = req.add_items();
      it->set_key(item.key);
      if (item.range.has_value()) RangeToProto(ToSpec(*item.range), it->mutable_range());
      it->set_offset(plan.offsets[k]);
      it->set_length(item.destination.length);
    }
    RequestRegistrations registrations;  // unmapped after the reply
    AOBJ_RETURN_IF_ERROR(
        buffers_.AddWindows(plan.windows, MaxWindows(), req.mutable_destination(), &registrations));
    pb::GetObjectsResponse resp;
    AOBJ_RETURN_IF_ERROR(
        session_.DataCall(ctx, Method::kGetObjects, req, &resp, registrations.emulated_windows));
    AOBJ_RETURN_IF_ERROR(CheckBatchReply(resp, req.items_size()));  // AOBJ-OBJ-240
    for (size_t k = 0; k < plan.items.size(); ++k) {
      out[plan.items[k]] = CheckBatchResult(items[plan.items[k]], resp.results(k));
    }
  }
  return out;
}

absl::StatusOr<BatchPutResults> ClientImpl::PutObjects(const CallContext& outer,
                                                       const std::string& bucket,
                                                       const std::vector<BatchPutItem>& items,
                                                       const CallOptions& call) {
  const CallContext ctx = outer.Within(call);
  const uint32_t max_windows =
      session_.HasCapability(kCapMultiDescriptor) ? session_.info().limits.max_descriptors : 1;
  std::vector<BufferSlice> regions;
  regions.reserve(items.size());
  absl::flat_hash_set<std::string_view> keys;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].source.buffer != nullptr) {
      AOBJ_RETURN_IF_ERROR(buffers_.Issued(*items[i].source.buffer).status());
    }
    regions.push_back(items[i].source);
    if (!keys.insert(items[i].key).second) {  // AOBJ-OBJ-247
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("item ", i, " names a key an earlier item names"));
    }
  }
  auto plans = client_internal::PlanBatch(regions, kMaxBatchPutItems, max_windows,
                                          session_.info().limits.max_transfer_bytes,
                                          /*overlap_allowed=*/true);
  if (!plans.ok()) return plans.status();
  BatchPutResults out(items.size(), MakeError(ErrorCode::kInternal, "not sent"));
  if (!session_.HasCapability(kCapBatchPut)) return PutEach(ctx, bucket, items, std::move(out));
  for (const client_internal::BatchRequestPlan& plan : *plans) {
    pb::PutObjectsRequest req;
    req.set_bucket(bucket);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    for (size_t k = 0; k < plan.items.size(); ++k) {
      const BatchPutItem& item = items[plan.items[k]];
      pb::PutObjectsItem* it = req.add_items();
      it->set_key(item.key);
      it->set_offset(plan.offsets[k]);
      it->set_length(item.source.length);
      it->set_checksum(ChecksumOf(options_.checksum, {item.source}, item.source.length));
      it->set_content_type(item.content_type);
    }
    RequestRegistrations registrations;  // unmapped after the reply
    AOBJ_RETURN_IF_ERROR(
        buffers_.AddWindows(plan.windows, MaxWindows(), req.mutable_source(), &registrations));
    pb::PutObjectsResponse resp;
    AOBJ_RETURN_IF_ERROR(
        session_.DataCall(ctx, Method::kPutObjects, req, &resp, registrations.emulated_windows));
    AOBJ_RETURN_IF_ERROR(CheckBatchReply(resp, req.items_size()));  // AOBJ-OBJ-249
    for (size_t k = 0; k < plan.items.size(); ++k) {
      out[plan.items[k]] = CheckBatchPutResult(req.items(k), resp.results(k));
    }
  }
  return out;
}

absl::StatusOr<TransferResult> ClientImpl::CheckBatchResult(const BatchGetItem& item,
                                                            const pb::GetObjectsResult& r) const {
  if (r.has_error()) {
    ErrorCode code = static_cast<ErrorCode>(r.error().code());
    if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
    return MakeError(code, r.error().message());
  }
  absl::StatusOr<std::optional<ContentRange>> range = CheckContentRange(item.range, r);
  if (!range.ok()) return range.status();
  const uint64_t size =
      range->has_value() ? (*range)->last - (*range)->first + 1 : r.metadata().size();
  if (r.bytes_transferred() != size || size > item.destination.length) {
    return MakeError(ErrorCode::kIncompleteTransfer,
                     absl::StrCat("server reports ", r.bytes_transferred(), " octets of ", size,
                                  " expected, into a region of ", item.destination.length));
  }
  if (ChecksumOf(options_.checksum, {item.destination}, size) != r.checksum()) {
    return MakeError(ErrorCode::kBadDigest,
                     absl::StrCat(ChecksumName(options_.checksum),
                                  " of the received octets does not match the server's"));
  }
  TransferResult result{ObjectInfoFromProto(r.metadata()), size,
                        size == 0 ? TransferPath::kNone : TransferPath::kRma};
  result.range = *range;
  return result;
}

absl::StatusOr<ObjectInfo> ClientImpl::CheckBatchPutResult(const pb::PutObjectsItem& item,
                                                           const pb::PutObjectsResult& r) {
  if (r.has_error()) {
    ErrorCode code = static_cast<ErrorCode>(r.error().code());
    if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
    return MakeError(code, r.error().message());
  }
  if (r.checksum() != item.checksum()) {
    return MakeError(ErrorCode::kBadDigest,
                     "the server's checksum of the received octets differs from ours");
  }
  if (r.metadata().size() != item.length()) {
    return MakeError(
        ErrorCode::kIncompleteTransfer,
        absl::StrCat("server stored ", r.metadata().size(), " octets of ", item.length()));
  }
  return ObjectInfoFromProto(r.metadata());
}

absl::StatusOr<BatchPutResults> ClientImpl::PutEach(const CallContext& ctx,
                                                    const std::string& bucket,
                                                    const std::vector<BatchPutItem>& items,
                                                    BatchPutResults out) {
  for (size_t i = 0; i < items.size(); ++i) {
    PutOptions options;
    options.content_type = items[i].content_type;
    auto put = Put(ctx, bucket, items[i].key, std::vector<BufferSlice>{items[i].source}, options);
    out[i] = put.ok() ? absl::StatusOr<ObjectInfo>(put->info) : put.status();
    const ErrorCode code = ErrorCodeOf(out[i].status());
    if (code == ErrorCode::kNoSuchBucket || code == ErrorCode::kDataChannelUnavailable ||
        code == ErrorCode::kTransferFailed || code == ErrorCode::kAccessDenied) {
      return out[i].status();
    }
  }
  return out;
}

absl::StatusOr<BatchGetResults> ClientImpl::GetEach(const CallContext& ctx,
                                                    const std::string& bucket,
                                                    const std::vector<BatchGetItem>& items,
                                                    BatchGetResults out) {
  for (size_t i = 0; i < items.size(); ++i) {
    GetOptions options;
    options.range = items[i].range;
    out[i] =
        Get(ctx, bucket, items[i].key, std::vector<BufferSlice>{items[i].destination}, options);
    const ErrorCode code = ErrorCodeOf(out[i].status());
    if (code == ErrorCode::kNoSuchBucket || code == ErrorCode::kDataChannelUnavailable ||
        code == ErrorCode::kTransferFailed || code == ErrorCode::kAccessDenied) {
      return out[i].status();
    }
  }
  return out;
}

}  // namespace aobj::client_internal
