// The fakes of the `stateful` fuzz target (stateful_fuzzer.cc): an ObjectStore wrapper that hides
// MemoryStore's fast paths, and a deterministic DataChannel that checks every RMA operation
// against the descriptors of the request being handled and injects transport faults.
// Single-threaded: the fuzzer drives one request at a time (nested requests run inside Execute).
#ifndef AOBJ_FUZZ_STATEFUL_FAKES_H_
#define AOBJ_FUZZ_STATEFUL_FAKES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aobj/status.h"
#include "aobj/store.h"
#include "fuzz_util.h"
#include "server/data_channel.h"
#include "stateful_script.h"

namespace aobj_fuzz {

// ---- The store, optionally without its fast paths ----------------------------------------------
// MemoryStore offers DirectBuffer and ContiguousView; hiding them sends the handler through its
// staging-buffer loops (chunked RMA, a failure between chunks). Pure forwarding otherwise.

class PlainWriter final : public aobj::ObjectWriter {
 public:
  explicit PlainWriter(std::unique_ptr<aobj::ObjectWriter> w) : w_(std::move(w)) {}
  absl::Status Append(absl::Span<const uint8_t> data) override { return w_->Append(data); }
  absl::StatusOr<aobj::ObjectInfo> Commit(const aobj::ObjectInfo& info) override {
    return w_->Commit(info);
  }

 private:
  std::unique_ptr<aobj::ObjectWriter> w_;
};

class PlainReader final : public aobj::ObjectReader {
 public:
  explicit PlainReader(std::unique_ptr<aobj::ObjectReader> r) : r_(std::move(r)) {}
  const aobj::ObjectInfo& info() const override { return r_->info(); }
  absl::StatusOr<size_t> ReadAt(uint64_t offset, absl::Span<uint8_t> out) override {
    return r_->ReadAt(offset, out);
  }

 private:
  std::unique_ptr<aobj::ObjectReader> r_;
};

class PlainStore final : public aobj::ObjectStore {
 public:
  explicit PlainStore(aobj::ObjectStore* base) : base_(base) {}
  using aobj::ObjectStore::BeginPut;
  bool AnswersFromMemory() const override { return base_->AnswersFromMemory(); }
  absl::Status CreateBucket(std::string_view b) override { return base_->CreateBucket(b); }
  absl::Status DeleteBucket(std::string_view b) override { return base_->DeleteBucket(b); }
  absl::Status HeadBucket(std::string_view b) override { return base_->HeadBucket(b); }
  absl::StatusOr<std::unique_ptr<aobj::ObjectWriter>> BeginPut(
      std::string_view b, std::string_view k, uint64_t size,
      const aobj::WriteOptions& options) override {
    auto w = base_->BeginPut(b, k, size, options);
    if (!w.ok()) return w.status();
    return std::unique_ptr<aobj::ObjectWriter>(new PlainWriter(std::move(*w)));
  }
  absl::StatusOr<std::unique_ptr<aobj::ObjectReader>> OpenRead(std::string_view b,
                                                               std::string_view k) override {
    auto r = base_->OpenRead(b, k);
    if (!r.ok()) return r.status();
    return std::unique_ptr<aobj::ObjectReader>(new PlainReader(std::move(*r)));
  }
  absl::StatusOr<aobj::ObjectInfo> Head(std::string_view b, std::string_view k) override {
    return base_->Head(b, k);
  }
  absl::Status Delete(std::string_view b, std::string_view k) override {
    return base_->Delete(b, k);
  }
  absl::StatusOr<std::vector<aobj::ObjectSummary>> ListObjects(std::string_view b,
                                                               std::string_view prefix,
                                                               std::string_view start_after,
                                                               size_t limit) override {
    return base_->ListObjects(b, prefix, start_after, limit);
  }
  absl::StatusOr<std::vector<aobj::BucketSummary>> ListBuckets() override {
    return base_->ListBuckets();
  }

 private:
  aobj::ObjectStore* base_;
};

// ---- The fake data channel ---------------------------------------------------------------------

// One descriptor of the request being handled, and the client memory behind it.
struct GrantWindow {
  uint64_t address = 0;
  uint64_t length = 0;
  std::string rkey;
  std::string* memory = nullptr;  // `length` bytes
};

// What the request being handled lets the server touch (AOBJ-MEM-009, AOBJ-TRN-008).
struct Grant {
  uint64_t endpoint = 0;
  aobj::RmaDirection direction = aobj::RmaDirection::kWrite;
  std::vector<GrantWindow> windows;
};

class FakeChannel final : public aobj::DataChannel {
 public:
  static constexpr size_t kRkeyCache = 8;  // as RkeyCache::kEntries

  // Set by the harness for the duration of one data request; null otherwise.
  const Grant* grant = nullptr;
  // One-shot faults of the next OpenSession: 1 Connect fails, 2 GetProtection fails.
  uint32_t open_fault = 0;
  bool hardware = false;
  // Faults of the current data request (reset by BeginRequest).
  Fault fault = kFaultNone;
  uint64_t fault_at = 0;
  uint32_t fail_batches = 0;
  std::function<void()> hook;
  // What happened during the current data request.
  bool failed = false;     // an Execute returned an error
  bool corrupted = false;  // a wrong byte was delivered to the server
  uint64_t ops = 0;

  uint64_t last_connected = 0;

  void BeginRequest(const Grant* g, Fault f, uint64_t at, std::function<void()> h) {
    grant = g;
    fault = f;
    fault_at = at;
    fail_batches = f == kFaultFailBatches ? static_cast<uint32_t>(at) + 1 : 0;
    hook = std::move(h);
    failed = corrupted = false;
    ops = 0;
  }
  void EndRequest() {
    grant = nullptr;
    fault = kFaultNone;
    fail_batches = 0;
    hook = nullptr;
  }

  bool IsOpen(uint64_t ep) const { return endpoints_.count(ep) != 0; }
  void Lose(uint64_t ep) {
    auto it = endpoints_.find(ep);
    if (it != endpoints_.end()) it->second.lost = true;
  }
  std::vector<uint64_t> open_endpoints() const {
    std::vector<uint64_t> out;
    for (const auto& [ep, state] : endpoints_) out.push_back(ep);
    return out;
  }

  absl::StatusOr<uint64_t> Connect(absl::string_view peer) override {
    AOBJ_FUZZ_CHECK(!peer.empty());
    if (std::exchange(open_fault, open_fault == 1 ? 0 : open_fault) == 1) {
      return aobj::MakeError(aobj::ErrorCode::kDataChannelUnavailable, "fake: connect failed");
    }
    const uint64_t ep = ++next_endpoint_;
    endpoints_[ep] = Endpoint{};
    last_connected = ep;
    return ep;
  }
  absl::StatusOr<aobj::Protection> GetProtection(uint64_t ep) override {
    AOBJ_FUZZ_CHECK(IsOpen(ep));
    if (std::exchange(open_fault, 0) == 2) {
      return aobj::MakeError(aobj::ErrorCode::kDataChannelUnavailable, "fake: endpoint failed");
    }
    return hardware ? aobj::Protection::kHardware : aobj::Protection::kEmulated;
  }
  // Endpoint binding: the challenge of an endpoint is fixed by its number; RMA only once bound.
  absl::StatusOr<std::string> SendChallenges(uint64_t ep, absl::string_view session_id) override {
    AOBJ_FUZZ_CHECK(IsOpen(ep) && session_id.size() == 16);
    AOBJ_FUZZ_CHECK(endpoints_[ep].challenge.empty());  // once per endpoint
    endpoints_[ep].challenge = ChallengeOf(ep);
    return endpoints_[ep].challenge;
  }
  absl::Status Bind(uint64_t ep) override {
    AOBJ_FUZZ_CHECK(IsOpen(ep) && !endpoints_[ep].challenge.empty());
    endpoints_[ep].bound = true;
    return absl::OkStatus();
  }
  static std::string ChallengeOf(uint64_t ep) {
    std::string c(32, 'c');
    for (int i = 0; i < 8; ++i) c[i] = static_cast<char>(ep >> (8 * i));
    return c;
  }
  bool IsLost(uint64_t ep) const {
    auto it = endpoints_.find(ep);
    return it != endpoints_.end() && it->second.lost;
  }
  bool IsBound(uint64_t ep) const {
    auto it = endpoints_.find(ep);
    return it != endpoints_.end() && it->second.bound;
  }
  void Disconnect(uint64_t ep) override {
    auto it = endpoints_.find(ep);
    AOBJ_FUZZ_CHECK(it != endpoints_.end());  // released once, and only what was handed out
    rkeys_destroyed_ += it->second.rkeys.size();
    endpoints_.erase(it);
  }
  absl::Status Execute(uint64_t ep, const aobj::RmaBatch& batch) override {
    // AOBJ-SES-010: never on a released endpoint.
    AOBJ_FUZZ_CHECK(IsOpen(ep));
    // Only a data request that carries descriptors moves bytes, only on its own session's
    // endpoint (AOBJ-TRN-008), only in its direction.
    AOBJ_FUZZ_CHECK(grant != nullptr);
    const Grant& g = *grant;
    AOBJ_FUZZ_CHECK(ep == g.endpoint);
    AOBJ_FUZZ_CHECK(batch.direction == g.direction);
    AOBJ_FUZZ_CHECK(batch.windows.size() == g.windows.size());
    for (size_t i = 0; i < g.windows.size(); ++i) {
      AOBJ_FUZZ_CHECK(batch.windows[i].address == g.windows[i].address);
      AOBJ_FUZZ_CHECK(batch.windows[i].length == g.windows[i].length);
      AOBJ_FUZZ_CHECK(batch.windows[i].rkey == g.windows[i].rkey);
    }
    if (!endpoints_[ep].bound) {  // AOBJ-SES-027, as UcxWorker refuses it
      failed = true;
      return aobj::MakeError(aobj::ErrorCode::kEndpointUnconfirmed, "fake: not confirmed");
    }
    if (endpoints_[ep].lost) {
      failed = true;
      return aobj::MakeError(aobj::ErrorCode::kDataChannelUnavailable, "fake: endpoint lost");
    }
    if (fail_batches > 0) {
      --fail_batches;
      failed = true;
      return aobj::MakeError(aobj::ErrorCode::kTransferFailed, "fake: batch failed");
    }
    for (const aobj::RmaOp& op : batch.ops) {
      AOBJ_FUZZ_CHECK(op.window < g.windows.size());
      Unpack(ep, g.windows[op.window].rkey);
    }
    for (const aobj::RmaOp& op : batch.ops) {
      const GrantWindow& w = g.windows[op.window];
      // AOBJ-MEM-009: inside the descriptor, without wrapping.
      AOBJ_FUZZ_CHECK(op.length > 0 && op.local != nullptr);
      AOBJ_FUZZ_CHECK(op.remote >= w.address && op.length <= w.length &&
                      op.remote - w.address <= w.length - op.length);
      const uint64_t n = ops++;
      bool corrupt = false;
      if (n == fault_at) {
        switch (fault) {
          case kFaultFailAt:
            // AOBJ-DAT-157/158, as UcxWorker does: an operation failed after RMA was issued, so
            // the endpoint is failed before the reply and later requests of the session get
            // DATA_CHANNEL_UNAVAILABLE (the state "data channel failed" of spec 13.7).
            endpoints_[ep].lost = true;
            failed = true;
            return aobj::MakeError(aobj::ErrorCode::kTransferFailed, "fake: operation failed");
          case kFaultLoseAt:
            endpoints_[ep].lost = true;
            failed = true;
            return aobj::MakeError(aobj::ErrorCode::kDataChannelUnavailable, "fake: endpoint lost");
          case kFaultCorruptAt:
            corrupt = batch.direction == aobj::RmaDirection::kRead;
            break;
          case kFaultHookAt:
            if (hook) {
              auto h = std::move(hook);
              hook = nullptr;
              h();
              // The transfer is still in flight: its endpoint must not have been released.
              AOBJ_FUZZ_CHECK(IsOpen(ep));
            }
            break;
          default:
            break;
        }
      }
      const uint64_t at = op.remote - w.address;
      if (batch.direction == aobj::RmaDirection::kRead) {
        std::memcpy(op.local, w.memory->data() + at, op.length);
        if (corrupt) {
          op.local[op.length / 2] ^= 0x20;
          corrupted = true;
        }
      } else {
        std::memcpy(w.memory->data() + at, op.local, op.length);
      }
    }
    return absl::OkStatus();
  }
  size_t endpoint_count() override { return endpoints_.size(); }
  uint64_t rkeys_outstanding() override { return rkeys_unpacked_ - rkeys_destroyed_; }
  uint64_t data_channels_failed() override {
    uint64_t n = 0;
    for (const auto& [id, e] : endpoints_) n += e.lost ? 1 : 0;
    return n;
  }

  // The fast request path (spec 8.9): every session may use it; a reply is kept for the harness,
  // which takes it right after the request (the fake's server runs requests inline). As
  // UcxWorker, nothing goes to an endpoint that is gone or not bound (AOBJ-DAT-168).
  std::string FastPathAddress(uint64_t ep) override { return "fake-fast-worker"; }
  void SendFastReply(uint64_t ep, std::string frame) override {
    auto it = endpoints_.find(ep);
    if (it == endpoints_.end() || !it->second.bound || it->second.lost) {
      ++fast_dropped;
      return;
    }
    fast_replies.emplace_back(ep, std::move(frame));
  }
  std::vector<std::pair<uint64_t, std::string>> fast_replies;
  uint64_t fast_dropped = 0;

 private:
  struct Endpoint {
    bool lost = false;
    std::string challenge;
    bool bound = false;
    std::vector<std::string> rkeys;  // unpacked, least recently used first
  };
  // The rkey cache of the real worker: unpacked once per endpoint, evicted when full, destroyed
  // with the endpoint.
  void Unpack(uint64_t ep, const std::string& rkey) {
    auto& cache = endpoints_[ep].rkeys;
    auto it = std::find(cache.begin(), cache.end(), rkey);
    if (it != cache.end()) {
      cache.erase(it);
    } else {
      ++rkeys_unpacked_;
      if (cache.size() == kRkeyCache) {
        cache.erase(cache.begin());
        ++rkeys_destroyed_;
      }
    }
    cache.push_back(rkey);
  }

  uint64_t next_endpoint_ = 0;
  std::map<uint64_t, Endpoint> endpoints_;
  uint64_t rkeys_unpacked_ = 0;
  uint64_t rkeys_destroyed_ = 0;
};

}  // namespace aobj_fuzz

#endif  // AOBJ_FUZZ_STATEFUL_FAKES_H_
