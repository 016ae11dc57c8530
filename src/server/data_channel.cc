#include "server/data_channel.h"

#include <algorithm>
#include <atomic>

#include "wire/fast_frame.h"

namespace aobj {
namespace {

class UcxDataChannel final : public DataChannel {
 public:
  UcxDataChannel(UcxWorker* worker, absl::Duration wait_bound)
      : worker_(worker), wait_bound_(wait_bound) {}
  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address) override {
    return worker_->Connect(peer_address);
  }
  absl::StatusOr<Protection> GetProtection(uint64_t endpoint) override {
    return worker_->GetProtection(endpoint);
  }
  absl::StatusOr<std::string> SendChallenges(uint64_t endpoint,
                                             absl::string_view session_id) override {
    return worker_->SendChallenges(endpoint, session_id);
  }
  absl::Status Bind(uint64_t endpoint) override { return worker_->Bind(endpoint); }
  void Disconnect(uint64_t endpoint) override { worker_->Disconnect(endpoint); }
  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch) override {
    return worker_->Execute(endpoint, batch, Bound(batch));
  }
  absl::Status ExecuteWatched(uint64_t endpoint, const RmaBatch& batch,
                              const std::function<bool()>& abandoned) override {
    return worker_->Execute(endpoint, batch, Bound(batch), abandoned);
  }
  size_t endpoint_count() override { return worker_->endpoint_count(); }
  void BeginShutdown(absl::Duration grace) override { worker_->BeginShutdown(grace); }
  uint64_t rkeys_outstanding() override { return worker_->rkeys_outstanding(); }
  uint64_t data_channels_failed() override { return worker_->endpoints_failed(); }

  absl::Status StartFastPath(FastRequestSink sink) override {
    auto address = worker_->StartMessageWorker(
        kFastRequestAmId, [sink = std::move(sink)](absl::string_view m) { sink(m, ""); });
    if (!address.ok()) return address.status();
    fast_address_ = std::move(*address);  // before any session can ask for it
    return absl::OkStatus();
  }
  std::string FastPathAddress(uint64_t endpoint) override {
    (void)endpoint;  // one worker serves every session
    return fast_address_;
  }
  void SendFastReply(uint64_t endpoint, std::string frame) override {
    worker_->SendMessage(endpoint, kFastReplyAmId, std::move(frame)).IgnoreError();
  }
  uint64_t fast_messages_dropped() override { return worker_->messages_dropped(); }

 private:
  absl::Duration Bound(const RmaBatch& batch) const { return BatchWaitBound(wait_bound_, batch); }
  UcxWorker* worker_;
  const absl::Duration wait_bound_;
  std::string fast_address_;  // StartFastPath's, set before sessions open
};

}  // namespace

absl::Duration BatchWaitBound(absl::Duration wait_bound, const RmaBatch& batch) {
  // AOBJ-OPS-008: the bound, plus the batch's octets at 50 MB/s (slow TCP-emulated lanes).
  uint64_t bytes = 0;
  for (const RmaOp& op : batch.ops) bytes += op.length;
  return wait_bound + absl::Seconds(static_cast<double>(bytes) / 50e6);
}

std::unique_ptr<DataChannel> NewUcxDataChannel(UcxWorker* worker, absl::Duration wait_bound) {
  return std::make_unique<UcxDataChannel>(worker, wait_bound);
}

}  // namespace aobj
