// Client: one AOBJ/1 session over a gRPC channel, with a UCX worker as the RMA target
// (client/client_impl.h says which file holds which concern).
#include "client/client_impl.h"

namespace aobj::client_internal {

ClientImpl::~ClientImpl() {
  // Queued operations complete CANCELLED, running ones finish (each bounded by its deadline)
  // before the session closes under them.
  if (pool_ != nullptr) pool_->Stop();
  Close().IgnoreError();
  StopRenewer();
  // The worker's progress thread calls back into this object (fast replies, the fast
  // endpoint's failure), so it stops here, before the members those callbacks use are gone.
  std::unique_ptr<UcxWorker> worker;
  {
    absl::MutexLock l(&mu_);
    worker = std::move(worker_);
  }
  worker.reset();
}

absl::Status ClientImpl::Init(const ClientOptions& options) {
  options_ = options;
  if (options_.access_key_id.empty()) {
    return MakeError(ErrorCode::kMissingAuthentication, "no access key id configured");
  }
  signer_ = std::make_unique<RequestSigner>(options_.access_key_id, options_.secret);
  auto ctx = UcxContext::Create(options_.data_channel);
  if (!ctx.ok()) return ctx.status();
  context_ = std::move(*ctx);
  auto worker = UcxWorker::Create(*context_, "client");
  if (!worker.ok()) return worker.status();
  worker_ = std::move(*worker);

  auto channel = MakeChannel(options_.endpoint, options_.tls);
  if (!channel.ok()) return channel.status();
  control_ = *channel;
  rpc_ = std::make_unique<RawChannel>(std::move(*channel));

  pb::OpenSessionRequest req;
  req.mutable_versions()->set_min(options_.min_version);
  req.mutable_versions()->set_max(options_.max_version);
  // AOBJ-DAT-022: CRC32C always offered. AOBJ-EXT-005: every capability the client may use is
  // offered here, so HasCapability (the server's answer) never enables one it did not offer.
  for (uint32_t c : {kCapInline, kCapCrc32c, kCapCrc64Nvme, kCapMultiDescriptor, kCapCancel}) {
    req.add_capabilities(c);
  }
  if (options_.batch_get) req.add_capabilities(kCapBatchGet);
  if (options_.batch_put) req.add_capabilities(kCapBatchPut);
  if (options_.opaque_etags) req.add_capabilities(kCapOpaqueEtag);
  if (options_.fast_path) req.add_capabilities(kCapFastPath);
  if (options_.grease) req.add_capabilities(0x1A2A3A4A);  // AOBJ-EXT-002
  req.set_worker_address(worker_->address());
  LimitsToProto(options_.requested_limits, req.mutable_requested_limits());
  req.set_client_name(options_.client_name);
  req.set_require_hardware_protection(options_.require_hardware_protection);
  pb::OpenSessionResponse resp;
  if (absl::Status s = Call(CallContext(), Method::kOpenSession, req, &resp); !s.ok()) return s;
  if (resp.session_id().size() != kSessionIdBytes) {
    return MakeError(ErrorCode::kInternal, "server sent a malformed session id");
  }
  info_.session_id = HexEncode(resp.session_id());
  info_.version = resp.version();
  info_.capabilities.assign(resp.capabilities().begin(), resp.capabilities().end());
  info_.limits = AnnouncedLimitsFromProto(resp.limits());
  info_.protection = static_cast<MemoryProtection>(resp.memory_protection());
  info_.lease_ms = static_cast<int64_t>(resp.lease_ms());
  info_.server_name = resp.server_name();
  // AOBJ-SES-033: a hint; entries out of bounds are dropped, not followed.
  for (const std::string& g : resp.gateways()) {
    if (!g.empty() && g.size() <= kMaxGatewayAddressBytes && info_.gateways.size() < kMaxGateways) {
      info_.gateways.push_back(g);
    }
  }
  // AOBJ-SES-026: prove that this worker is the session's, over the challenges the server sent
  // it; until then the server moves no byte by RMA (AOBJ-SES-027). A server that sends none
  // predates endpoint binding.
  if (resp.endpoint_challenges() > 0) {
    auto challenges = worker_->AwaitChallenges(
        resp.session_id(), resp.endpoint_challenges(),
        absl::Milliseconds(std::clamp<int64_t>(options_.timeout_ms, 1000, 10000)));
    absl::Status s = challenges.status();
    if (s.ok()) {
      pb::ConfirmEndpointRequest confirm;
      confirm.set_proof(signer_->EndpointProof(resp.session_id(), *challenges));
      pb::ConfirmEndpointResponse ack;
      s = Call(CallContext(), Method::kConfirmEndpoint, confirm, &ack);
    }
    if (!s.ok()) {
      pb::CloseSessionResponse closed;
      Call(CallContext(), Method::kCloseSession, pb::CloseSessionRequest(), &closed).IgnoreError();
      return s;
    }
  }
  // AOBJ-DAT-163, AOBJ-DAT-164: fast requests only after the endpoint is confirmed, to the
  // address the server gave; without one (or when it cannot be reached) everything stays on
  // gRPC.
  if (HasCapability(kCapFastPath) && !resp.fast_path_address().empty() &&
      resp.fast_path_address().size() <= kMaxWorkerAddressBytes) {
    absl::Status s =
        worker_->SetMessageHandler(kFastReplyAmId, [this](absl::string_view m) { OnFastReply(m); });
    if (s.ok()) {
      // A server side that goes away fails the endpoint: the requests waiting for a reply
      // end at once, and later ones go by gRPC.
      auto ep =
          worker_->ConnectForMessages(resp.fast_path_address(), [this](const absl::Status& why) {
            fast_closed_.store(true);
            FailFastWaiters();
            (void)why;
          });
      if (ep.ok()) {
        fast_ep_ = *ep;
        info_.fast_path_address = resp.fast_path_address();
      }
    }
  }
  {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  pool_ = std::make_unique<AsyncPool>(options_.async_threads);
  renewer_ = std::thread([this] { RenewLoop(); });
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Buffer>> ClientImpl::AllocateBuffer(size_t size) {
  auto mem = RegisteredMemory::Allocate(*context_, size);
  if (!mem.ok()) return mem.status();
  return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
}

absl::StatusOr<std::unique_ptr<Buffer>> ClientImpl::RegisterBuffer(void* data, size_t size) {
  // AOBJ-MEM-026: UCX without CUDA support would take device memory for host memory.
  const MemoryKind kind =
      options_.classify_memory ? options_.classify_memory(data, size) : ClassifyMemory(data);
  if (kind != MemoryKind::kHost) {
    return MakeError(
        ErrorCode::kUnsupportedMemoryType,
        absl::StrCat("the buffer is CUDA ", kind == MemoryKind::kCudaDevice ? "device" : "managed",
                     " memory, which this client's UCX cannot register; move it "
                     "through host memory with aobj::DeviceStager (aobj/device.h)"));
  }
  if (options_.register_per_request) {
    if (data == nullptr || size == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "no memory to register");
    }
    return std::unique_ptr<Buffer>(new BufferImpl(this, static_cast<uint8_t*>(data), size));
  }
  auto mem = RegisteredMemory::Register(*context_, data, size);
  if (!mem.ok()) return mem.status();
  return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
}

absl::Status ClientImpl::Renew(const CallContext& ctx) {
  pb::RenewSessionRequest req;
  pb::RenewSessionResponse resp;
  return Call(ctx, Method::kRenewSession, req, &resp);
}

absl::Status ClientImpl::Close(const CallContext& ctx) {
  {
    absl::MutexLock l(&mu_);
    if (!open_) return absl::OkStatus();
    open_ = false;
  }
  StopRenewer();
  absl::Status closed = absl::OkStatus();
  if (session_gone_.load() == 0) {  // AOBJ-SES-022: otherwise nothing to close
    pb::CloseSessionRequest req;
    pb::CloseSessionResponse resp;
    closed = Call(ctx, Method::kCloseSession, req, &resp);
  }
  // Spec 8.9: the server forgets the session's endpoint once its transfers end, and drops fast
  // requests for it after that; from now on every request goes by gRPC (and learns that the
  // session is gone), and those still waiting for a fast reply end now.
  fast_closed_.store(true);
  FailFastWaiters();
  return closed;
}

absl::StatusOr<const BufferImpl*> ClientImpl::Issued(const Buffer& buffer) const {
  const auto* impl = dynamic_cast<const BufferImpl*>(&buffer);
  if (impl == nullptr || impl->issuer() != this) {
    return MakeError(ErrorCode::kInvalidArgument,
                     impl == nullptr
                         ? "the buffer is not one the library issued; pass a Buffer from this "
                           "Client's AllocateBuffer or RegisterBuffer"
                         : "the buffer was issued by another Client; each Client uses only the "
                           "buffers of its own AllocateBuffer or RegisterBuffer");
  }
  return impl;
}

absl::Status ClientImpl::AddWindow(const BufferSlice& s, pb::MemoryDescriptor* d,
                                   RequestRegistrations* registrations) {
  absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer);
  if (!issued.ok()) return issued.status();
  const BufferImpl& buf = **issued;
  d->set_address(reinterpret_cast<uint64_t>(buf.data()) + s.offset);
  d->set_length(s.length);
  d->set_memory_type(pb::MEMORY_TYPE_HOST);
  if (!buf.allocated_by_library()) registrations->emulated_windows = true;
  if (buf.registered()) {
    d->set_rkey(buf.rkey());  // AOBJ-MEM-017: the rkey of the registration of the whole buffer
    return absl::OkStatus();
  }
  // AOBJ-MEM-017, AOBJ-TRN-007: registered for this request only; AOBJ-MEM-025 says what
  // unmapping it afterwards does and does not achieve.
  auto mem = RegisteredMemory::Register(*context_, buf.data() + s.offset, s.length);
  if (!mem.ok()) return mem.status();
  d->set_rkey((*mem)->packed_rkey());
  registrations->memory.push_back(std::move(*mem));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ClientImpl::CheckSlices(const std::vector<BufferSlice>& slices) const {
  uint64_t total = 0;
  for (const BufferSlice& s : slices) {
    if (s.buffer == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "slice without buffer");
    }
    if (absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer); !issued.ok()) {
      return issued.status();
    }
    if (s.offset > s.buffer->size() || s.length > s.buffer->size() - s.offset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("slice [", s.offset, ", +", s.length,
                                    ") lies outside its buffer of ", s.buffer->size()));
    }
    total += s.length;
  }
  return total;
}

absl::Status ClientImpl::AddWindows(const std::vector<BufferSlice>& slices,
                                    google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* out,
                                    RequestRegistrations* registrations) {
  const size_t windows = std::count_if(slices.begin(), slices.end(),
                                       [](const BufferSlice& s) { return s.length > 0; });
  const uint32_t max = HasCapability(kCapMultiDescriptor) ? info_.limits.max_descriptors : 1;
  if (windows > max) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(windows, " windows; the session allows ", max));
  }
  for (const BufferSlice& s : slices) {
    if (s.length > 0) AOBJ_RETURN_IF_ERROR(AddWindow(s, out->Add(), registrations));
  }
  return absl::OkStatus();
}

void ClientImpl::RenewLoop() {
  const absl::Duration period = absl::Milliseconds(std::max<int64_t>(info_.lease_ms / 3, 100));
  absl::MutexLock l(&mu_);
  while (open_) {
    if (mu_.AwaitWithTimeout(absl::Condition(
                                 +[](bool* open) { return !*open; }, &open_),
                             period)) {
      break;
    }
    mu_.Unlock();
    const absl::Status renewed = Renew();
    mu_.Lock();
    // AOBJ-SES-022: a session the server no longer knows is not renewed again; other failures
    // (a slow server) surface on the next operation and renewal goes on.
    const ErrorCode code = ErrorCodeOf(renewed);
    if (code == ErrorCode::kSessionExpired || code == ErrorCode::kNoSuchSession) break;
  }
}

void ClientImpl::StopRenewer() {
  if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) renewer_.join();
}

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
