#include "server/data_channel.h"

#include <algorithm>

namespace aobj {
namespace {

class UcxDataChannel final : public DataChannel {
 public:
  explicit UcxDataChannel(UcxWorker* worker) : worker_(worker) {}
  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address) override {
    return worker_->Connect(peer_address);
  }
  absl::StatusOr<Protection> GetProtection(uint64_t endpoint) override {
    return worker_->GetProtection(endpoint);
  }
  void Disconnect(uint64_t endpoint) override { worker_->Disconnect(endpoint); }
  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch) override {
    // A minute, or longer for big batches on slow (TCP-emulated) lanes: at least 50 MB/s.
    uint64_t bytes = 0;
    for (const RmaOp& op : batch.ops) bytes += op.length;
    const absl::Duration timeout =
        std::max(absl::Seconds(60), absl::Seconds(static_cast<double>(bytes) / 50e6));
    return worker_->Execute(endpoint, batch, timeout);
  }
  size_t endpoint_count() override { return worker_->endpoint_count(); }
  uint64_t rkeys_outstanding() override { return worker_->rkeys_outstanding(); }

 private:
  UcxWorker* worker_;
};

}  // namespace

std::unique_ptr<DataChannel> NewUcxDataChannel(UcxWorker* worker) {
  return std::make_unique<UcxDataChannel>(worker);
}

}  // namespace aobj
