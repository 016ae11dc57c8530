#include "control/raw_call.h"

#include "absl/synchronization/notification.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "wire/signing.h"

namespace aobj {

RawChannel::RawChannel(const std::string& endpoint)
    // Tests send oversized messages on purpose, hence the larger send bound.
    : RawChannel(*MakeChannel(endpoint, TlsOptions{}, 16 << 20)) {}

RawChannel::RawChannel(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)), stub_(std::make_unique<grpc::GenericStub>(channel_)) {}

RawReply RawChannel::Call(const std::string& method_path, const std::string& body,
                          const std::vector<std::pair<std::string, std::string>>& metadata,
                          absl::Duration timeout) const {
  grpc::ClientContext ctx;
  for (const auto& [k, v] : metadata) ctx.AddMetadata(k, v);
  // AOBJ-CTL-010: every call has a deadline.
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
  grpc::Slice slice(body.data(), body.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  absl::Notification done;
  RawReply reply;
  stub_->UnaryCall(&ctx, method_path, grpc::StubOptions(), &request, &response,
                   [&](grpc::Status s) {
                     reply.grpc_status = std::move(s);
                     done.Notify();
                   });
  done.WaitForNotification();
  if (reply.grpc_status.ok()) {
    std::vector<grpc::Slice> slices;
    if (response.Dump(&slices).ok()) {
      for (const auto& s : slices) {
        reply.body.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  for (const auto& [k, v] : ctx.GetServerTrailingMetadata()) {
    if (k == kErrorTrailer && reply.error_trailers++ == 0) reply.error_trailer.assign(v.data(), v.size());
    if (k == kMetaResponseSignature && reply.response_signature.empty()) {
      reply.response_signature.assign(v.data(), v.size());
    }
  }
  reply.status = FromGrpcStatus(reply.grpc_status, ctx.GetServerTrailingMetadata(), &reply.error);
  return reply;
}

}  // namespace aobj
