#include "wire/etag.h"

#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

TEST(EtagTest, BareMd5EtagAcceptsQuotesAndCase) {
  EXPECT_EQ(BareMd5Etag("\"D41D8CD98F00B204E9800998ECF8427E\""),
            "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(BareMd5Etag("d41d8cd98f00b204e9800998ecf8427e"), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(BareMd5Etag("\"d41d8cd98f00b204e9800998ecf8427e-2\""), "");
  EXPECT_EQ(BareMd5Etag("\"zz1d8cd98f00b204e9800998ecf8427e\""), "");
  EXPECT_EQ(BareMd5Etag(""), "");
  EXPECT_EQ(BareMd5Etag("\""), "");
}

// AOBJ-OBJ-217: checked against Python's hashlib:
// md5(b"".join(md5(p).digest() for p in [b"part-one", b"part-two", b"3"])).hexdigest() + "-3"
TEST(EtagTest, MultipartEtagGoldenValue) {
  auto etag = MultipartEtag({"\"dede9db222ee612853f44e6e6b1ca792\"",
                             "093064bee9fa39309997041a6e03f29f",
                             "\"ECCBC87E4B5CE2FE28308FD9F2A7BAF3\""});
  ASSERT_TRUE(etag.ok()) << etag.status();
  EXPECT_EQ(*etag, "\"cd39340ff940c629cf67a5b48b149a13-3\"");
  EXPECT_EQ(ErrorCodeOf(MultipartEtag({"\"abc\""}).status()), ErrorCode::kInvalidArgument);
}

// AOBJ-OBJ-016
TEST(EtagTest, OpaqueEtagFormAndFreshness) {
  const std::string a = OpaqueEtag(), b = OpaqueEtag();
  EXPECT_TRUE(IsOpaqueEtag(a)) << a;
  EXPECT_TRUE(IsOpaqueEtag(b)) << b;
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 36u);
  EXPECT_EQ(BareMd5Etag(a), "");  // never mistaken for an MD5
  EXPECT_TRUE(IsOpaqueEtag("\"0123456789abcdef0123456789abcdef-0\""));
  EXPECT_FALSE(IsOpaqueEtag("\"0123456789ABCDEF0123456789abcdef-0\""));
  EXPECT_FALSE(IsOpaqueEtag("\"0123456789abcdef0123456789abcdef-1\""));
  EXPECT_FALSE(IsOpaqueEtag("0123456789abcdef0123456789abcdef-0"));
  EXPECT_FALSE(IsOpaqueEtag("\"0123456789abcdef0123456789abcdef\""));
  EXPECT_FALSE(IsOpaqueEtag("\"0123456789abcdef0123456789abcdeg-0\""));
}

// AOBJ-OBJ-254: the form of a part's MD5 ETag, new digits each time, and the multipart ETag
// (AOBJ-OBJ-217) is computed over the octets those digits denote.
TEST(EtagTest, OpaquePartEtagHasTheMd5FormAndFeedsTheMultipartEtag) {
  const std::string a = OpaquePartEtag(), b = OpaquePartEtag();
  EXPECT_NE(a, b);
  ASSERT_EQ(a.size(), 34u);
  EXPECT_EQ(a.front(), '"');
  EXPECT_EQ(a.back(), '"');
  EXPECT_EQ(BareMd5Etag(a), a.substr(1, 32)) << "lower-case hex digits";
  EXPECT_FALSE(IsOpaqueEtag(a));
  auto whole = MultipartEtag({a, b});
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::string raw_a, raw_b;
  ASSERT_TRUE(HexDecode(a.substr(1, 32), &raw_a));
  ASSERT_TRUE(HexDecode(b.substr(1, 32), &raw_b));
  Md5 md5;
  const std::string both = raw_a + raw_b;
  md5.Update(both.data(), both.size());
  EXPECT_EQ(*whole, "\"" + HexEncode(md5.Finish()) + "-2\"");
}

}  // namespace
}  // namespace aobj
