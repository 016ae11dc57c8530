// Client: Connect, shutdown, and the buffer and session methods of ClientImpl
// (client/client_impl.h says which type and file holds which concern).
#include "client/client_impl.h"

namespace aobj::client_internal {

ClientImpl::~ClientImpl() {
  // Queued operations complete CANCELLED, running ones finish (each bounded by its deadline)
  // before the session closes under them (~SessionChannel).
  if (pool_ != nullptr) pool_->Stop();
}

absl::Status ClientImpl::Init(const ClientOptions& options) {
  options_ = options;
  AOBJ_RETURN_IF_ERROR(session_.Open(options));
  buffers_.Init(&session_.context(), options);
  pool_ = std::make_unique<AsyncPool>(options_.async_threads);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Buffer>> ClientImpl::AllocateBuffer(size_t size) {
  return buffers_.Allocate(size);
}

absl::StatusOr<std::unique_ptr<Buffer>> ClientImpl::RegisterBuffer(void* data, size_t size) {
  return buffers_.Register(data, size);
}

absl::Status ClientImpl::Renew(const CallContext& ctx) { return session_.Renew(ctx); }

absl::Status ClientImpl::Close(const CallContext& ctx) { return session_.Close(ctx); }

std::unique_ptr<Client> ClientImpl::WithCallOptions(const CallOptions& call) {
  return client_internal::NewCallScopedClient(this, call);
}

}  // namespace aobj::client_internal

namespace aobj {
absl::StatusOr<ByteRange> ByteRange::Parse(std::string_view text) {
  absl::StatusOr<RangeSpec> spec = ParseHttpRange(absl::string_view(text.data(), text.size()));
  if (!spec.ok()) return spec.status();
  ByteRange out;
  out.kind = spec->kind == RangeSpec::Kind::kFirstLast ? Kind::kFirstLast
             : spec->kind == RangeSpec::Kind::kFrom    ? Kind::kFrom
                                                       : Kind::kSuffix;
  out.first = spec->first;
  out.last = spec->last;
  out.suffix_length = spec->suffix_length;
  return out;
}

std::string ByteRange::ToString() const {
  switch (kind) {
    case Kind::kFirstLast:
      return absl::StrCat("bytes=", first, "-", last);
    case Kind::kFrom:
      return absl::StrCat("bytes=", first, "-");
    case Kind::kSuffix:
      return absl::StrCat("bytes=-", suffix_length);
  }
  return "bytes=?";
}

absl::StatusOr<ObjectListing> Client::ListAllObjects(const std::string& bucket,
                                                     ListObjectsOptions options,
                                                     size_t max_entries) {
  ObjectListing all;
  for (;;) {
    absl::StatusOr<ObjectListing> page = ListObjects(bucket, options);
    if (!page.ok()) return page.status();
    const size_t got = page->objects.size() + page->common_prefixes.size();
    for (ObjectSummary& o : page->objects) all.objects.push_back(std::move(o));
    for (std::string& p : page->common_prefixes) all.common_prefixes.push_back(std::move(p));
    all.is_truncated = page->is_truncated;
    all.next_continuation_token = page->next_continuation_token;
    if (!page->is_truncated || all.objects.size() + all.common_prefixes.size() >= max_entries) {
      return all;
    }
    if (got == 0) {
      return MakeError(ErrorCode::kInternal, "server sent a truncated page that does not advance");
    }
    options.continuation_token = page->next_continuation_token;  // AOBJ-OBJ-106: unchanged
  }
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto client = std::make_unique<client_internal::ClientImpl>();
  if (absl::Status s = client->Init(options); !s.ok()) return s;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace aobj
