// NewShardedDataChannel (ServerOptions::data_workers): endpoints spread over the shards by
// their live endpoints, every call for an endpoint reaches the shard that holds it with the
// shard's own ID, unknown IDs reach nothing, and the counters add up.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aobj/status.h"
#include "gtest/gtest.h"
#include "server/data_channel.h"

namespace aobj {
namespace {

// A channel that records what reaches it; its endpoint IDs count up from 1.
class RecordingChannel final : public DataChannel {
 public:
  explicit RecordingChannel(std::string name) : name_(std::move(name)) {}
  absl::StatusOr<uint64_t> Connect(absl::string_view peer) override {
    ++connects;
    if (peer == "refuse") return absl::InvalidArgumentError("refused by " + name_);
    if (full) return MakeError(ErrorCode::kSlowDown, name_ + " is full");
    const uint64_t id = next_++;
    live_[id] = std::string(peer);
    return id;
  }
  absl::StatusOr<uint64_t> ConnectFor(absl::string_view peer,
                                      absl::string_view principal) override {
    principals.push_back(std::string(principal));
    return Connect(peer);
  }
  absl::StatusOr<Protection> GetProtection(uint64_t ep) override {
    if (!live_.count(ep)) return absl::NotFoundError("no endpoint");
    return Protection::kEmulated;
  }
  absl::StatusOr<std::string> SendChallenges(uint64_t ep, absl::string_view) override {
    if (!live_.count(ep)) return absl::NotFoundError("no endpoint");
    return name_ + ":" + std::to_string(ep);
  }
  absl::Status Bind(uint64_t ep) override {
    calls.push_back("bind " + std::to_string(ep));
    return absl::OkStatus();
  }
  void Disconnect(uint64_t ep) override { live_.erase(ep); }
  absl::Status Execute(uint64_t ep, const RmaBatch&) override {
    calls.push_back("execute " + std::to_string(ep));
    return absl::OkStatus();
  }
  size_t endpoint_count() override { return live_.size(); }
  uint64_t rkeys_outstanding() override { return 10; }
  uint64_t data_channels_failed() override { return 1; }
  PeerRmaRefusals peer_rma_refused() override { return {1, 2, 3}; }
  absl::Status StartFastPath(FastRequestSink sink) override {
    sink_ = std::move(sink);
    return absl::OkStatus();
  }
  std::string FastPathAddress(uint64_t ep) override {
    return sink_ ? name_ + "-fast-" + std::to_string(ep) : "";
  }
  void SendFastReply(uint64_t ep, std::string frame) override {
    calls.push_back("reply " + std::to_string(ep) + " " + frame);
  }
  uint64_t fast_messages_dropped() override { return 5; }
  Placement PlacementFor(absl::string_view principal) override {
    return {holds.count(std::string(principal)) > 0, crowded};
  }

  std::vector<std::string> calls;
  std::vector<std::string> principals;
  bool full = false;  // Connect answers SLOW_DOWN, as a confined shard at its process cap
  bool crowded = false;         // PlacementFor: half its processes or more
  std::set<std::string> holds;  // PlacementFor: principals it runs a process of
  int connects = 0;

 private:
  const std::string name_;
  uint64_t next_ = 1;
  std::map<uint64_t, std::string> live_;
  FastRequestSink sink_;
};

struct Sharded {
  std::vector<RecordingChannel*> shards;
  std::unique_ptr<DataChannel> channel;
};

Sharded Make(size_t n, bool process_wide = false) {
  Sharded s;
  std::vector<std::unique_ptr<DataChannel>> v;
  for (size_t i = 0; i < n; ++i) {
    auto c = std::make_unique<RecordingChannel>("shard" + std::to_string(i));
    s.shards.push_back(c.get());
    v.push_back(std::move(c));
  }
  s.channel = NewShardedDataChannel(std::move(v), process_wide);
  return s;
}

TEST(ShardedChannelTest, OneShardIsTheChannelItself) {
  Sharded s = Make(1);
  EXPECT_EQ(s.channel.get(), static_cast<DataChannel*>(s.shards[0]));
}

TEST(ShardedChannelTest, EndpointsGoToTheEmptiestShardAndStayThere) {
  Sharded s = Make(3);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 6; ++i) {
    auto id = s.channel->ConnectFor("peer" + std::to_string(i), "AKONE");
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  for (RecordingChannel* c : s.shards) {
    EXPECT_EQ(c->endpoint_count(), 2u);
    EXPECT_EQ(c->principals, (std::vector<std::string>{"AKONE", "AKONE"}));
  }
  EXPECT_EQ(s.channel->endpoint_count(), 6u);
  // Each call reaches the shard that made the endpoint, with that shard's own ID.
  for (uint64_t id : ids) {
    auto challenge = s.channel->SendChallenges(id, "session");
    ASSERT_TRUE(challenge.ok()) << challenge.status();
    const uint64_t shard = id >> 56;
    EXPECT_EQ(*challenge, "shard" + std::to_string(shard) + ":" + std::to_string(id & 0xff));
    ASSERT_TRUE(s.channel->Execute(id, RmaBatch{}).ok());
    EXPECT_EQ(s.shards[shard]->calls.back(), "execute " + std::to_string(id & 0xff));
  }
  // Freed endpoints make their shard the emptiest again.
  s.channel->Disconnect(ids[1]);
  s.channel->Disconnect(ids[4]);
  const uint64_t freed = ids[1] >> 56;
  ASSERT_EQ(ids[4] >> 56, freed);
  auto next = s.channel->Connect("again");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next >> 56, freed);
  EXPECT_EQ(s.shards[freed]->endpoint_count(), 1u);
}

TEST(ShardedChannelTest, UnknownEndpointsReachNoShard) {
  Sharded s = Make(2);
  auto id = s.channel->Connect("peer");
  ASSERT_TRUE(id.ok());
  const uint64_t past = uint64_t{7} << 56 | 1;  // no shard 7
  EXPECT_FALSE(s.channel->GetProtection(past).ok());
  EXPECT_FALSE(s.channel->SendChallenges(past, "x").ok());
  EXPECT_FALSE(s.channel->Bind(past).ok());
  EXPECT_FALSE(s.channel->Execute(past, RmaBatch{}).ok());
  EXPECT_EQ(s.channel->FastPathAddress(past), "");
  s.channel->SendFastReply(past, "frame");
  s.channel->Disconnect(past);
  for (RecordingChannel* c : s.shards) {
    EXPECT_TRUE(c->calls.empty());
  }
  EXPECT_EQ(s.channel->endpoint_count(), 1u);
  // A shard's refusal is the caller's, and no endpoint is counted for it.
  EXPECT_EQ(s.channel->Connect("refuse").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.channel->endpoint_count(), 1u);
}

// A full shard (SLOW_DOWN) passes the endpoint to the next emptiest; SLOW_DOWN only when all
// are full; any other refusal is final at once.
TEST(ShardedChannelTest, AFullShardPassesTheEndpointOn) {
  Sharded s = Make(3);
  s.shards[0]->full = true;
  auto id = s.channel->Connect("p");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id >> 56, 1u);
  auto next = s.channel->Connect("p");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next >> 56, 2u);
  for (RecordingChannel* c : s.shards) c->full = true;
  EXPECT_EQ(ErrorCodeOf(s.channel->Connect("p").status()), ErrorCode::kSlowDown);
  EXPECT_EQ(s.channel->endpoint_count(), 2u);
  for (RecordingChannel* c : s.shards) {
    c->full = false;
    c->connects = 0;
  }
  EXPECT_EQ(s.channel->Connect("refuse").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.shards[0]->connects + s.shards[1]->connects + s.shards[2]->connects, 1);
}

TEST(ShardedChannelTest, FastPathOnEveryShardAndCountersAddUp) {
  Sharded s = Make(4);
  ASSERT_TRUE(s.channel->StartFastPath([](absl::string_view, absl::string_view, bool) {}).ok());
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(*s.channel->Connect("p"));
  for (uint64_t id : ids) {
    EXPECT_EQ(s.channel->FastPathAddress(id),
              "shard" + std::to_string(id >> 56) + "-fast-" + std::to_string(id & 0xff));
    s.channel->SendFastReply(id, "f");
    EXPECT_EQ(s.shards[id >> 56]->calls.back(), "reply " + std::to_string(id & 0xff) + " f");
  }
  EXPECT_EQ(s.channel->rkeys_outstanding(), 40u);
  EXPECT_EQ(s.channel->data_channels_failed(), 4u);
  EXPECT_EQ(s.channel->fast_messages_dropped(), 20u);
  const PeerRmaRefusals r = s.channel->peer_rma_refused();
  EXPECT_EQ(r.puts, 4u);
  EXPECT_EQ(r.gets, 8u);
  EXPECT_EQ(r.atomics, 12u);
  // In-process shards share the process's one count: it is read once, not added up.
  Sharded in_process = Make(4, /*process_wide=*/true);
  const PeerRmaRefusals once = in_process.channel->peer_rma_refused();
  const PeerRmaRefusals global = PeerRmaRefused();
  EXPECT_EQ(once.puts, global.puts);
  EXPECT_EQ(once.gets, global.gets);
  EXPECT_EQ(once.atomics, global.atomics);
}

// One principal's sessions spread over the shards while they have room, but a shard that runs
// half its processes or more takes a session of a principal that runs a process elsewhere only
// when it runs one of that principal's too, or when no other shard takes it: with two workers,
// 32 principals spreading over both took the server's 64 processes and a 33rd was refused.
TEST(ShardedChannelTest, ACrowdedShardStartsNoSecondProcessOfAPrincipal) {
  Sharded s = Make(2);
  // Shard 1 is busier, but runs AKONE's process; shard 0, the emptiest, is crowded.
  ASSERT_TRUE(s.channel->ConnectFor("a", "AKOTHER").ok());
  ASSERT_TRUE(s.channel->ConnectFor("b", "AKOTHER").ok());
  auto busy = s.channel->ConnectFor("c", "AKOTHER");
  ASSERT_TRUE(busy.ok());
  const size_t holder = *busy >> 56;
  const size_t crowded = 1 - holder;
  s.shards[holder]->holds.insert("AKONE");
  s.shards[crowded]->crowded = true;
  ASSERT_LT(s.shards[crowded]->endpoint_count(), s.shards[holder]->endpoint_count());
  auto id = s.channel->ConnectFor("d", "AKONE");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id >> 56, holder) << "a second process of AKONE on a crowded shard";
  // A principal that runs no process anywhere takes the emptiest, crowded or not.
  auto fresh = s.channel->ConnectFor("e", "AKNEW");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(*fresh >> 56, crowded);
  // Not crowded, the emptiest shard takes AKONE's session (its sessions spread).
  s.shards[crowded]->crowded = false;
  while (s.shards[crowded]->endpoint_count() >= s.shards[holder]->endpoint_count()) {
    ASSERT_TRUE(s.channel->ConnectFor("f", "AKOTHER").ok());
  }
  auto spread = s.channel->ConnectFor("g", "AKONE");
  ASSERT_TRUE(spread.ok());
  EXPECT_EQ(*spread >> 56, crowded);
  // Crowded again, and the holder full: the crowded shard still takes it rather than none.
  s.shards[crowded]->crowded = true;
  s.shards[holder]->full = true;
  auto last = s.channel->ConnectFor("h", "AKONE");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last >> 56, crowded);
}

}  // namespace
}  // namespace aobj
