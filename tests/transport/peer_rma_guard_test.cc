// AOBJ-SEC-020: a server worker drops the put and get requests a peer initiates.
//
// The peer is a stock UCX 1.13.1 worker of its own context that has the server worker's address
// (in a real attack it reads it from UCX's wireup) and a remote key for its own memory, and aims
// ucp_put_nbx / ucp_get_nbx at memory of this process that nothing registered. Without the
// refusal both land: the server's memory is overwritten and read back (measured, tcp lanes, error
// modes NONE and PEER; see transport/peer_rma_guard.h).
#include "transport/peer_rma_guard.h"

#include <cstring>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"

namespace aobj {
namespace {

// A peer written against UCX's public API only, progressed by the test thread.
class StockPeer {
 public:
  ~StockPeer() {
    if (ep_ != nullptr) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      Finish(ucp_ep_close_nbx(ep_, &p), absl::Seconds(5));
    }
    for (void* r : outstanding_) {
      if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
    }
    if (rkey_ != nullptr) ucp_rkey_destroy(rkey_);
    if (packed_ != nullptr) ucp_rkey_buffer_release(packed_);
    if (memh_ != nullptr) ucp_mem_unmap(context_, memh_);
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
  }

  void Connect(const std::string& address, ucp_err_handling_mode_t mode) {
    ucp_config_t* config = nullptr;
    ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
    ASSERT_EQ(ucp_config_modify(config, "TLS", "tcp"), UCS_OK);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    const ucs_status_t st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    ASSERT_EQ(st, UCS_OK);
    ucp_worker_params_t wp{};
    ASSERT_EQ(ucp_worker_create(context_, &wp, &worker_), UCS_OK);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
    ep.err_mode = mode;
    ASSERT_EQ(ucp_ep_create(worker_, &ep, &ep_), UCS_OK);
    // A key for the peer's own memory: on these lanes nothing checks it against the target.
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = own_;
    mp.length = sizeof(own_);
    ASSERT_EQ(ucp_mem_map(context_, &mp, &memh_), UCS_OK);
    size_t packed_len = 0;
    ASSERT_EQ(ucp_rkey_pack(context_, memh_, &packed_, &packed_len), UCS_OK);
    ASSERT_EQ(ucp_ep_rkey_unpack(ep_, packed_, &rkey_), UCS_OK);
  }

  // Issues a put of `data` to `target`, and a get of `n` octets from `target` into `into`.
  void Put(const void* data, size_t n, const void* target) {
    ucp_request_param_t p{};
    Keep(ucp_put_nbx(ep_, data, n, reinterpret_cast<uint64_t>(target), rkey_, &p));
    Keep(ucp_ep_flush_nbx(ep_, &p));
  }
  void Get(void* into, size_t n, const void* target) {
    ucp_request_param_t p{};
    Keep(ucp_get_nbx(ep_, into, n, reinterpret_cast<uint64_t>(target), rkey_, &p));
    Keep(ucp_ep_flush_nbx(ep_, &p));
  }
  // Progresses the peer's worker for `d`, or until every request issued has completed.
  void Progress(absl::Duration d) {
    const absl::Time end = absl::Now() + d;
    while (absl::Now() < end && !AllDone()) ucp_worker_progress(worker_);
  }
  bool AllDone() {
    for (void* r : outstanding_) {
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
    }
    return true;
  }

 private:
  void Keep(void* r) {
    ASSERT_FALSE(UCS_PTR_IS_ERR(r)) << ucs_status_string(UCS_PTR_STATUS(r));
    if (r != nullptr) outstanding_.push_back(r);
  }
  void Finish(void* r, absl::Duration d) {
    if (r == nullptr || UCS_PTR_IS_ERR(r)) return;
    const absl::Time end = absl::Now() + d;
    while (absl::Now() < end && ucp_request_check_status(r) == UCS_INPROGRESS) {
      ucp_worker_progress(worker_);
    }
    if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  ucp_mem_h memh_ = nullptr;
  void* packed_ = nullptr;
  ucp_rkey_h rkey_ = nullptr;
  alignas(64) char own_[4096] = {};
  std::vector<void*> outstanding_;
};

class PeerRmaGuardTest : public ::testing::TestWithParam<ucp_err_handling_mode_t> {
 protected:
  void SetUp() override {
    DataChannelOptions o;
    o.transports = "tcp";
    auto ctx = UcxContext::CreateForServer(o);
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    context_ = std::move(*ctx);
    auto w = UcxWorker::Create(*context_, "guarded-server");
    ASSERT_TRUE(w.ok()) << w.status();
    worker_ = std::move(*w);
    ASSERT_TRUE(worker_->peer_rma_refusal().ok()) << worker_->peer_rma_refusal();
  }
  void TearDown() override {
    worker_.reset();
    context_.reset();
  }
  // Waits until the server's progress thread has dropped `n` more requests of a kind.
  static bool AwaitRefusals(uint64_t PeerRmaRefusals::*kind, uint64_t at_least, StockPeer& peer) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (absl::Now() < end) {
      if (PeerRmaRefused().*kind >= at_least) return true;
      peer.Progress(absl::Milliseconds(10));
    }
    return false;
  }

  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
};

// Memory of the server's process that nothing registered. The put and get are large enough
// for UCX's zero-copy protocols (the tcp transport's own put request, when it is offered).
constexpr char kOwn[] = "the server's own memory";
constexpr size_t kSize = 256 << 10;
alignas(64) char server_memory[kSize] = "the server's own memory";

TEST_P(PeerRmaGuardTest, APeersPutDoesNotLand) {
  StockPeer peer;
  ASSERT_NO_FATAL_FAILURE(peer.Connect(worker_->address(), GetParam()));
  const uint64_t before = PeerRmaRefused().puts;
  static char scribble[kSize];
  std::memset(scribble, 'X', sizeof(scribble));
  ASSERT_NO_FATAL_FAILURE(peer.Put(scribble, sizeof(scribble), server_memory));
  EXPECT_TRUE(AwaitRefusals(&PeerRmaRefusals::puts, before + 1, peer))
      << "the server's worker never saw the put as a software RMA request";
  peer.Progress(absl::Milliseconds(200));
  EXPECT_FALSE(peer.AllDone()) << "the peer's put completed";
  EXPECT_STREQ(server_memory, kOwn);
  EXPECT_EQ(server_memory[kSize - 1], '\0');
}

TEST_P(PeerRmaGuardTest, APeersGetReadsNothing) {
  StockPeer peer;
  ASSERT_NO_FATAL_FAILURE(peer.Connect(worker_->address(), GetParam()));
  const uint64_t before = PeerRmaRefused().gets;
  std::string got(kSize, '\0');
  ASSERT_NO_FATAL_FAILURE(peer.Get(got.data(), got.size(), server_memory));
  EXPECT_TRUE(AwaitRefusals(&PeerRmaRefusals::gets, before + 1, peer));
  peer.Progress(absl::Milliseconds(200));
  EXPECT_FALSE(peer.AllDone()) << "the peer's get completed";
  EXPECT_EQ(got, std::string(kSize, '\0'));
}

INSTANTIATE_TEST_SUITE_P(Modes, PeerRmaGuardTest,
                         ::testing::Values(UCP_ERR_HANDLING_MODE_NONE, UCP_ERR_HANDLING_MODE_PEER),
                         [](const auto& info) {
                           return info.param == UCP_ERR_HANDLING_MODE_PEER ? std::string("Peer")
                                                                           : std::string("None");
                         });

// The other direction still works: a client worker in the same process (not marked) serves the
// server's software RMA, which is how GET and PUT move bytes on these lanes.
TEST(PeerRmaGuardClientTest, AnUnmarkedWorkerStillServesItsServer) {
  DataChannelOptions o;
  o.transports = "tcp";
  auto ctx = UcxContext::Create(o);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto w = UcxWorker::Create(**ctx, "client");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_FALSE((*w)->peer_rma_refusal().ok());
  StockPeer peer;
  ASSERT_NO_FATAL_FAILURE(peer.Connect((*w)->address(), UCP_ERR_HANDLING_MODE_PEER));
  alignas(64) static char client_memory[32] = "before";
  static const char kData[] = "written by its server";
  ASSERT_NO_FATAL_FAILURE(peer.Put(kData, sizeof(kData), client_memory));
  peer.Progress(absl::Seconds(10));
  EXPECT_TRUE(peer.AllDone());
  EXPECT_STREQ(client_memory, kData);
}

}  // namespace
}  // namespace aobj
