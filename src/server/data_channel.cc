#include "server/data_channel.h"

#include <algorithm>
#include <atomic>

#include "aobj/status.h"
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
        kFastRequestAmId, [sink = std::move(sink)](absl::string_view m) { sink(m, "", false); });
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

class ShardedDataChannel final : public DataChannel {
 public:
  ShardedDataChannel(std::vector<std::unique_ptr<DataChannel>> shards, bool refusals_process_wide)
      : shards_(std::move(shards)),
        live_(shards_.size()),
        refusals_process_wide_(refusals_process_wide) {}

  absl::StatusOr<uint64_t> Connect(absl::string_view peer_address) override {
    return ConnectFor(peer_address, "");
  }
  absl::StatusOr<uint64_t> ConnectFor(absl::string_view peer_address,
                                      absl::string_view principal) override {
    // The emptiest shard first; one that is full (SLOW_DOWN: a confined shard at its process
    // cap) passes the endpoint to the next emptiest. Any other refusal is the peer's.
    absl::Status refused;
    std::vector<size_t> order = ByLiveEndpoints();
    if (!principal.empty()) {
      // A crowded shard that would start a second process of the principal goes last.
      std::vector<Placement> at(shards_.size());
      for (size_t i = 0; i < shards_.size(); ++i) at[i] = shards_[i]->PlacementFor(principal);
      const bool held =
          std::any_of(at.begin(), at.end(), [](const Placement& p) { return p.holds; });
      if (held) {
        std::stable_partition(order.begin(), order.end(),
                              [&](size_t i) { return at[i].holds || !at[i].crowded; });
      }
    }
    for (size_t shard : order) {
      absl::StatusOr<uint64_t> inner = principal.empty()
                                           ? shards_[shard]->Connect(peer_address)
                                           : shards_[shard]->ConnectFor(peer_address, principal);
      if (!inner.ok()) {
        if (ErrorCodeOf(inner.status()) != ErrorCode::kSlowDown) return inner.status();
        refused = inner.status();
        continue;
      }
      if (*inner >> kShift != 0) {  // never in practice: IDs count up from 1
        shards_[shard]->Disconnect(*inner);
        return absl::ResourceExhaustedError("endpoint IDs of a data-channel shard ran out");
      }
      live_[shard].fetch_add(1, std::memory_order_relaxed);
      return (uint64_t{shard} << kShift) | *inner;
    }
    return refused;
  }
  absl::StatusOr<Protection> GetProtection(uint64_t endpoint) override {
    DataChannel* c = ShardOf(endpoint);
    if (c == nullptr) return Unknown();
    return c->GetProtection(Inner(endpoint));
  }
  absl::StatusOr<std::string> SendChallenges(uint64_t endpoint,
                                             absl::string_view session_id) override {
    DataChannel* c = ShardOf(endpoint);
    if (c == nullptr) return Unknown();
    return c->SendChallenges(Inner(endpoint), session_id);
  }
  absl::Status Bind(uint64_t endpoint) override {
    DataChannel* c = ShardOf(endpoint);
    return c == nullptr ? Unknown() : c->Bind(Inner(endpoint));
  }
  void Disconnect(uint64_t endpoint) override {
    DataChannel* c = ShardOf(endpoint);
    if (c == nullptr) return;
    c->Disconnect(Inner(endpoint));
    live_[endpoint >> kShift].fetch_sub(1, std::memory_order_relaxed);
  }
  absl::Status Execute(uint64_t endpoint, const RmaBatch& batch) override {
    DataChannel* c = ShardOf(endpoint);
    return c == nullptr ? Unknown() : c->Execute(Inner(endpoint), batch);
  }
  absl::Status ExecuteWatched(uint64_t endpoint, const RmaBatch& batch,
                              const std::function<bool()>& abandoned) override {
    DataChannel* c = ShardOf(endpoint);
    return c == nullptr ? Unknown() : c->ExecuteWatched(Inner(endpoint), batch, abandoned);
  }
  size_t endpoint_count() override {
    size_t n = 0;
    for (auto& c : shards_) n += c->endpoint_count();
    return n;
  }
  uint64_t rkeys_outstanding() override {
    uint64_t n = 0;
    for (auto& c : shards_) n += c->rkeys_outstanding();
    return n;
  }
  PeerRmaRefusals peer_rma_refused() override {
    if (refusals_process_wide_) return PeerRmaRefused();
    PeerRmaRefusals t;
    for (auto& c : shards_) {
      const PeerRmaRefusals r = c->peer_rma_refused();
      t.puts += r.puts;
      t.gets += r.gets;
      t.atomics += r.atomics;
    }
    return t;
  }
  uint64_t data_channels_failed() override {
    uint64_t n = 0;
    for (auto& c : shards_) n += c->data_channels_failed();
    return n;
  }
  void BeginShutdown(absl::Duration grace) override {
    for (auto& c : shards_) c->BeginShutdown(grace);
  }
  absl::Status StartFastPath(FastRequestSink sink) override {
    for (auto& c : shards_) {
      if (absl::Status s = c->StartFastPath(sink); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  std::string FastPathAddress(uint64_t endpoint) override {
    DataChannel* c = ShardOf(endpoint);
    return c == nullptr ? "" : c->FastPathAddress(Inner(endpoint));
  }
  void SendFastReply(uint64_t endpoint, std::string frame) override {
    if (DataChannel* c = ShardOf(endpoint); c != nullptr) {
      c->SendFastReply(Inner(endpoint), std::move(frame));
    }
  }
  uint64_t fast_messages_dropped() override {
    uint64_t n = 0;
    for (auto& c : shards_) n += c->fast_messages_dropped();
    return n;
  }

 private:
  static constexpr int kShift = 56;
  static uint64_t Inner(uint64_t endpoint) { return endpoint & ((uint64_t{1} << kShift) - 1); }
  DataChannel* ShardOf(uint64_t endpoint) const {
    const uint64_t shard = endpoint >> kShift;
    return shard < shards_.size() ? shards_[shard].get() : nullptr;
  }
  static absl::Status Unknown() { return absl::NotFoundError("unknown data-channel endpoint"); }
  // The shards, fewest live endpoints first; on a tie, the lower index first.
  std::vector<size_t> ByLiveEndpoints() const {
    std::vector<std::pair<int64_t, size_t>> load;
    for (size_t i = 0; i < live_.size(); ++i) {
      load.push_back({live_[i].load(std::memory_order_relaxed), i});
    }
    std::sort(load.begin(), load.end());
    std::vector<size_t> order;
    for (const auto& l : load) order.push_back(l.second);
    return order;
  }

  const std::vector<std::unique_ptr<DataChannel>> shards_;
  std::vector<std::atomic<int64_t>> live_;  // endpoints connected and not yet disconnected
  const bool refusals_process_wide_;
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

std::unique_ptr<DataChannel> NewShardedDataChannel(std::vector<std::unique_ptr<DataChannel>> shards,
                                                   bool refusals_process_wide) {
  if (shards.size() == 1) return std::move(shards[0]);
  return std::make_unique<ShardedDataChannel>(std::move(shards), refusals_process_wide);
}

}  // namespace aobj
