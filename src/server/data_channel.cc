#include "server/data_channel.h"

#include <algorithm>

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

 private:
  absl::Duration Bound(const RmaBatch& batch) const { return BatchWaitBound(wait_bound_, batch); }
  UcxWorker* worker_;
  const absl::Duration wait_bound_;
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
