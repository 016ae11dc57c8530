// The fast-path frames of spec section 8.9 (AOBJ-DAT-165, AOBJ-DAT-170, AOBJ-DAT-171).
#include "wire/fast_frame.h"

#include <string>
#include <utility>

#include "aobj/status.h"
#include "golden/corpus.h"
#include "golden/fast_frames.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

FastRequest Sample() {
  FastRequest r;
  r.timeout_ms = 0x01020304;
  r.method = "HeadObject";
  r.auth.access_key_id = "AK";
  r.auth.timestamp = "17";
  r.auth.nonce_hex = "n";
  r.auth.session_hex = "s";
  r.auth.signature_hex = "sig";
  r.body = "xy";
  return r;
}

TEST(FastFrameTest, RequestWireImageIsTheSpecs) {
  auto f = EncodeFastRequest(Sample());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, golden::kGoldenFastRequest);
  auto back = ParseFastRequest(*f);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->timeout_ms, 0x01020304u);
  EXPECT_EQ(back->method, "HeadObject");
  EXPECT_EQ(back->auth.access_key_id, "AK");
  EXPECT_EQ(back->auth.timestamp, "17");
  EXPECT_EQ(back->auth.nonce_hex, "n");
  EXPECT_EQ(back->auth.session_hex, "s");
  EXPECT_EQ(back->auth.signature_hex, "sig");
  EXPECT_EQ(back->body, "xy");
}

TEST(FastFrameTest, ReplyWireImageIsTheSpecs) {
  FastReply r;
  r.nonce_hex = "ab";
  r.error = true;
  r.body = "e";
  auto f = EncodeFastReply(r);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, golden::kGoldenFastReply);
  auto back = ParseFastReply(*f);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->error);
  EXPECT_EQ(back->nonce_hex, "ab");
  EXPECT_EQ(back->body, "e");
  r.error = false;
  back = ParseFastReply(*EncodeFastReply(r));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->error);
}

// The fuzz target fast_frame seeds from the golden frames (fuzz/make_seeds.cc).
TEST(FastFrameTest, FuzzCorpusHoldsTheGoldenFrames) {
  for (const auto& [name, image] :
       {std::pair<const char*, const std::string*>{"golden-request", &golden::kGoldenFastRequest},
        {"golden-reply", &golden::kGoldenFastReply}}) {
    EXPECT_TRUE(golden::CorpusSeedHolds("fast_frame", name, *image));
  }
}

TEST(FastFrameTest, RefusesEveryMalformedRequest) {
  const std::string good = *EncodeFastRequest(Sample());
  auto refused = [](const std::string& f) {
    auto r = ParseFastRequest(f);
    return !r.ok() && ErrorCodeOf(r.status()) == ErrorCode::kInvalidArgument;
  };
  for (size_t n = 0; n < good.size(); ++n) EXPECT_TRUE(refused(good.substr(0, n))) << n;
  EXPECT_TRUE(refused(good + "z"));  // octets after the message
  std::string v = good;
  v[0] = 2;
  EXPECT_TRUE(refused(v));
  std::string k = good;
  k[1] = kFastKindReply;
  EXPECT_TRUE(refused(k));
  std::string fl = good;
  fl[3] = 0x80;  // no flag is defined for requests
  EXPECT_TRUE(refused(fl));
  EXPECT_TRUE(refused(std::string(kMaxFastFrame + 1, '\x01')));
  EXPECT_FALSE(ParseFastReply(good).ok());  // a request is never a reply
}

TEST(FastFrameTest, RefusesUndefinedReplyFlags) {
  FastReply r;
  r.nonce_hex = "ab";
  std::string f = *EncodeFastReply(r);
  f[2] = 2;  // only bit 0 is defined
  EXPECT_FALSE(ParseFastReply(f).ok());
}

TEST(FastFrameTest, EncodingBoundsFieldsAndFrames) {
  FastRequest r = Sample();
  r.auth.access_key_id = std::string(256, 'k');  // over a 1-octet length
  EXPECT_FALSE(EncodeFastRequest(r).ok());
  r = Sample();
  r.body = std::string(kMaxFastFrame, 'b');  // the frame would exceed the limit
  EXPECT_FALSE(EncodeFastRequest(r).ok());
  r.body.resize(kMaxFastFrame - 200);
  auto f = EncodeFastRequest(r);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(ParseFastRequest(*f).ok());
}

}  // namespace
}  // namespace aobj
