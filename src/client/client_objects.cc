#include "client/client_impl.h"
#include "exec/helpers.h"

namespace aobj::client_internal {

absl::StatusOr<TransferResult> ClientImpl::Put(const CallContext& ctx, const std::string& bucket,
                                               const std::string& key, const Buffer& buffer,
                                               uint64_t size, const PutOptions& options) {
  if (size > buffer.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("size ", size, " exceeds the buffer's ", buffer.size()));
  }
  return Put(ctx, bucket, key, std::vector<BufferSlice>{{&buffer, 0, size}}, options);
}

absl::StatusOr<TransferResult> ClientImpl::Put(const CallContext& outer, const std::string& bucket,
                                               const std::string& key,
                                               const std::vector<BufferSlice>& source,
                                               const PutOptions& options) {
  const CallContext ctx = outer.Within(options.call);
  absl::StatusOr<uint64_t> total = buffers_.CheckSlices(source);
  if (!total.ok()) return total.status();
  const uint64_t size = *total;
  const std::string checksum = ChecksumOf(options_.checksum, source, size);
  pb::PutObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_size(size);
  req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
  req.set_checksum(checksum);
  req.set_content_type(options.content_type);
  req.mutable_user_metadata()->insert(options.user_metadata.begin(), options.user_metadata.end());
  SetPreconditions(options.conditions, &req);
  pb::PutObjectResponse resp;
  AOBJ_RETURN_IF_ERROR(SendBody(ctx, Method::kPutObject, source, size, checksum, &req, &resp));
  // AOBJ-DAT-031: the reported path is the one this request used.
  const TransferPath sent = size == 0                   ? TransferPath::kNone
                            : req.inline_data().empty() ? TransferPath::kRma
                                                        : TransferPath::kInline;
  if (static_cast<TransferPath>(resp.path()) != sent) {
    return MakeError(ErrorCode::kInternal,
                     "server reported a transfer path this request did not use");
  }
  return TransferResult{ObjectInfoFromProto(resp.metadata()), resp.bytes_transferred(), sent};
}

absl::StatusOr<TransferResult> ClientImpl::Get(const CallContext& ctx, const std::string& bucket,
                                               const std::string& key, Buffer& buffer) {
  return Get(ctx, bucket, key, buffer, GetOptions{});
}

absl::StatusOr<TransferResult> ClientImpl::Get(const CallContext& ctx, const std::string& bucket,
                                               const std::string& key, Buffer& buffer,
                                               const GetOptions& options) {
  return Get(ctx, bucket, key, std::vector<BufferSlice>{{&buffer, 0, buffer.size()}}, options);
}

absl::StatusOr<TransferResult> ClientImpl::Get(const CallContext& outer, const std::string& bucket,
                                               const std::string& key,
                                               const std::vector<BufferSlice>& destination,
                                               const GetOptions& options) {
  const CallContext ctx = outer.Within(options.call);
  absl::StatusOr<uint64_t> capacity = buffers_.CheckSlices(destination);
  if (!capacity.ok()) return capacity.status();
  pb::GetObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
  req.set_accept_inline(options_.allow_inline && session_.HasCapability(kCapInline));
  if (options.range.has_value()) RangeToProto(ToSpec(*options.range), req.mutable_range());
  SetPreconditions(options.conditions, &req);
  RequestRegistrations registrations;  // unmapped after the reply
  if (absl::Status s =
          buffers_.AddWindows(destination, MaxWindows(), req.mutable_destination(), &registrations);
      !s.ok()) {
    return s;
  }
  pb::GetObjectResponse resp;
  if (absl::Status s =
          session_.DataCall(ctx, Method::kGetObject, req, &resp, registrations.emulated_windows);
      !s.ok()) {
    return s;
  }
  // The octets the reply claims to have moved: the object, or the range (AOBJ-DAT-105).
  absl::StatusOr<std::optional<ContentRange>> range = CheckContentRange(options.range, resp);
  if (!range.ok()) return range.status();
  const uint64_t size =
      range->has_value() ? (*range)->last - (*range)->first + 1 : resp.metadata().size();
  const TransferPath path = static_cast<TransferPath>(resp.path());
  // AOBJ-DAT-162: an inline body longer than the windows is what the server would have
  // refused with DESCRIPTOR_TOO_SMALL had it moved by RMA; nothing is copied.
  if (path == TransferPath::kInline && resp.bytes_transferred() == size && size > *capacity) {
    return MakeError(
        ErrorCode::kDescriptorTooSmall,
        absl::StrCat("the object has ", size, " octets; the windows hold ", *capacity));
  }
  // AOBJ-DAT-004
  if (resp.bytes_transferred() != size || size > *capacity) {
    return MakeError(ErrorCode::kIncompleteTransfer,
                     absl::StrCat("server reports ", resp.bytes_transferred(), " bytes of ", size,
                                  " expected, into windows of ", *capacity));
  }
  // AOBJ-DAT-031: the path must be one this request allowed.
  if (path == TransferPath::kInline && !req.accept_inline()) {
    return MakeError(ErrorCode::kInternal, "server answered inline to a request that refused it");
  }
  if (path == TransferPath::kNone && size != 0) {
    return MakeError(ErrorCode::kIncompleteTransfer, "server moved nothing for a non-empty body");
  }
  if (path == TransferPath::kInline) {
    if (resp.inline_data().size() != size) {
      return MakeError(ErrorCode::kIncompleteTransfer, "inline body has the wrong size");
    }
    size_t at = 0;
    ForEachSpan(destination, size, [&](uint8_t* p, size_t n) {
      std::memcpy(p, resp.inline_data().data() + at, n);
      at += n;
    });
  } else if (path != TransferPath::kRma && !(path == TransferPath::kNone && size == 0)) {
    return MakeError(ErrorCode::kInternal, "server reported an unknown transfer path");
  }
  const auto algo = static_cast<ChecksumAlgorithm>(resp.checksum_algorithm());
  if (algo != options_.checksum) {
    return MakeError(ErrorCode::kBadDigest, "server answered with another checksum algorithm");
  }
  if (ChecksumOf(algo, destination, size) != resp.checksum()) {
    return MakeError(
        ErrorCode::kBadDigest,
        absl::StrCat(ChecksumName(algo), " of the received bytes does not match the server's"));
  }
  TransferResult result{ObjectInfoFromProto(resp.metadata()), size, path};
  result.range = *range;
  return result;
}

absl::StatusOr<ObjectInfo> ClientImpl::Head(const CallContext& ctx, const std::string& bucket,
                                            const std::string& key) {
  return Head(ctx, bucket, key, Preconditions{});
}

absl::StatusOr<ObjectInfo> ClientImpl::Head(const CallContext& ctx, const std::string& bucket,
                                            const std::string& key,
                                            const Preconditions& conditions) {
  pb::HeadObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  SetPreconditions(conditions, &req);
  pb::HeadObjectResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kHeadObject, req, &resp); !s.ok()) return s;
  return ObjectInfoFromProto(resp.metadata());
}

absl::StatusOr<std::vector<BucketSummary>> ClientImpl::ListBuckets(const CallContext& ctx) {
  std::vector<BucketSummary> out;
  pb::ListBucketsRequest req;
  for (int page = 0;; ++page) {
    pb::ListBucketsResponse resp;
    if (absl::Status s = session_.Call(ctx, Method::kListBuckets, req, &resp); !s.ok()) return s;
    for (const pb::BucketEntry& b : resp.buckets()) {
      out.push_back({b.name(), b.creation_time_ms()});
    }
    if (!resp.is_truncated()) return out;
    // A server that keeps answering "truncated" with nothing new would loop us forever.
    if (resp.buckets_size() == 0 || resp.next_continuation_token().empty() || page > 100000) {
      return MakeError(ErrorCode::kInternal, "server sent a truncated page that does not advance");
    }
    req.set_continuation_token(resp.next_continuation_token());
  }
}

absl::StatusOr<ObjectListing> ClientImpl::ListObjects(const CallContext& ctx,
                                                      const std::string& bucket,
                                                      const ListObjectsOptions& options) {
  pb::ListObjectsV2Request req;
  req.set_bucket(bucket);
  req.set_prefix(options.prefix);
  req.set_delimiter(options.delimiter);
  req.set_start_after(options.start_after);
  req.set_continuation_token(options.continuation_token);
  req.set_max_keys(options.max_keys);
  pb::ListObjectsV2Response resp;
  if (absl::Status s = session_.Call(ctx, Method::kListObjectsV2, req, &resp); !s.ok()) return s;
  ObjectListing out;
  for (const pb::ObjectEntry& e : resp.objects()) out.objects.push_back(ObjectEntryFromProto(e));
  out.common_prefixes.assign(resp.common_prefixes().begin(), resp.common_prefixes().end());
  out.is_truncated = resp.is_truncated();
  out.next_continuation_token = resp.next_continuation_token();
  if (out.is_truncated && out.next_continuation_token.empty()) {
    return MakeError(ErrorCode::kInternal, "server sent a truncated page without a token");
  }
  return out;
}

absl::StatusOr<DeleteObjectsResult> ClientImpl::DeleteObjects(const CallContext& ctx,
                                                              const std::string& bucket,
                                                              const std::vector<std::string>& keys,
                                                              bool quiet) {
  constexpr size_t kBatch = 1000;  // AOBJ-OBJ-140
  DeleteObjectsResult out;
  for (size_t at = 0; at < keys.size(); at += kBatch) {
    pb::DeleteObjectsRequest req;
    req.set_bucket(bucket);
    req.set_quiet(quiet);
    for (size_t i = at; i < std::min(keys.size(), at + kBatch); ++i) req.add_keys(keys[i]);
    pb::DeleteObjectsResponse resp;
    if (absl::Status s = session_.Call(ctx, Method::kDeleteObjects, req, &resp); !s.ok()) return s;
    out.deleted.insert(out.deleted.end(), resp.deleted().begin(), resp.deleted().end());
    for (const pb::DeleteObjectsError& e : resp.errors()) {
      ErrorCode code = static_cast<ErrorCode>(e.error().code());
      if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
      out.errors.emplace_back(e.key(), MakeError(code, e.error().message()));
    }
  }
  return out;
}

absl::StatusOr<ObjectInfo> ClientImpl::Copy(const CallContext& ctx,
                                            const std::string& source_bucket,
                                            const std::string& source_key,
                                            const std::string& bucket, const std::string& key,
                                            const CopyOptions& options) {
  pb::CopyObjectRequest req;
  req.set_source_bucket(source_bucket);
  req.set_source_key(source_key);
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_metadata_directive(options.replace_metadata ? pb::METADATA_DIRECTIVE_REPLACE
                                                      : pb::METADATA_DIRECTIVE_COPY);
  req.set_content_type(options.content_type);
  req.mutable_user_metadata()->insert(options.user_metadata.begin(), options.user_metadata.end());
  if (!IsEmpty(options.source_conditions)) {
    ToProto(options.source_conditions, req.mutable_source_preconditions());
  }
  SetPreconditions(options.conditions, &req);
  pb::CopyObjectResponse resp;
  if (absl::Status s = session_.Call(ctx, Method::kCopyObject, req, &resp); !s.ok()) return s;
  return ObjectInfoFromProto(resp.metadata());
}

absl::Status ClientImpl::Delete(const CallContext& ctx, const std::string& bucket,
                                const std::string& key) {
  pb::DeleteObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  pb::DeleteObjectResponse resp;
  return session_.Call(ctx, Method::kDeleteObject, req, &resp);
}

absl::Status ClientImpl::CreateBucket(const CallContext& ctx, const std::string& bucket) {
  pb::CreateBucketRequest req;
  req.set_bucket(bucket);
  pb::CreateBucketResponse resp;
  return session_.Call(ctx, Method::kCreateBucket, req, &resp);
}

absl::Status ClientImpl::DeleteBucket(const CallContext& ctx, const std::string& bucket) {
  pb::DeleteBucketRequest req;
  req.set_bucket(bucket);
  pb::DeleteBucketResponse resp;
  return session_.Call(ctx, Method::kDeleteBucket, req, &resp);
}

absl::Status ClientImpl::HeadBucket(const CallContext& ctx, const std::string& bucket) {
  pb::HeadBucketRequest req;
  req.set_bucket(bucket);
  pb::HeadBucketResponse resp;
  return session_.Call(ctx, Method::kHeadBucket, req, &resp);
}

}  // namespace aobj::client_internal
