#include "wire/crypto.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace aobj {
namespace {

TEST(Sha256Test, KnownAnswers) {
  EXPECT_EQ(HexEncode(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexEncode(Sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// RFC 4231 section 4.2, test case 1.
TEST(HmacSha256Test, Rfc4231Case1) {
  const std::string key(20, '\x0b');
  EXPECT_EQ(HexEncode(HmacSha256(key, "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

// RFC 4231 section 4.3, test case 2.
TEST(HmacSha256Test, Rfc4231Case2) {
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// RFC 4231 section 4.7, test case 6: a key longer than the block size is hashed first.
TEST(HmacSha256Test, Rfc4231Case6LongKey) {
  const std::string key(131, '\xaa');
  EXPECT_EQ(HexEncode(HmacSha256(key, "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256Test, EmptyKeyAndMessage) {
  EXPECT_EQ(HexEncode(HmacSha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(Md5Test, KnownAnswers) {
  Md5 empty;
  EXPECT_EQ(HexEncode(empty.Finish()), "d41d8cd98f00b204e9800998ecf8427e");
  Md5 abc;
  abc.Update("abc", 3);
  EXPECT_EQ(HexEncode(abc.Finish()), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(Md5Test, IncrementalEqualsOneShotAndResetsAfterFinish) {
  const std::string message = "The quick brown fox jumps over the lazy dog";
  Md5 md5;
  for (char c : message) md5.Update(&c, 1);
  EXPECT_EQ(HexEncode(md5.Finish()), "9e107d9d372bb6826bd81d3542a419d6");
  // After Finish the object starts a new message.
  md5.Update("abc", 3);
  EXPECT_EQ(HexEncode(md5.Finish()), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(Md5Test, MoveKeepsState) {
  Md5 a;
  a.Update("a", 1);
  Md5 b(std::move(a));
  b.Update("bc", 2);
  Md5 c;
  c = std::move(b);
  EXPECT_EQ(HexEncode(c.Finish()), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(HexTest, EncodeIsLowerCase) {
  EXPECT_EQ(HexEncode(std::string("\x00\x01\xab\xff", 4)), "0001abff");
  EXPECT_EQ(HexEncode(std::string()), "");
}

TEST(HexTest, RoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  std::string decoded;
  ASSERT_TRUE(HexDecode(HexEncode(all), &decoded));
  EXPECT_EQ(decoded, all);
}

TEST(HexTest, DecodesUpperAndMixedCase) {
  std::string out;
  ASSERT_TRUE(HexDecode("ABcdEF09", &out));
  EXPECT_EQ(out, std::string("\xab\xcd\xef\x09", 4));
  ASSERT_TRUE(HexDecode("", &out));
  EXPECT_EQ(out, "");
}

TEST(HexTest, RejectsBadHexAndLeavesOutputUntouched) {
  std::string out = "unchanged";
  EXPECT_FALSE(HexDecode("abc", &out));                  // odd length
  EXPECT_FALSE(HexDecode("0g", &out));                   // non-hex letter
  EXPECT_FALSE(HexDecode("zz00", &out));                 // non-hex first pair
  EXPECT_FALSE(HexDecode("00 1", &out));                 // space
  EXPECT_FALSE(HexDecode("-1", &out));                   // sign
  EXPECT_FALSE(HexDecode("0x00", &out));                 // prefix
  EXPECT_FALSE(HexDecode(std::string("0\0", 2), &out));  // embedded NUL
  EXPECT_EQ(out, "unchanged");
}

TEST(ConstantTimeEqualsTest, ComparesContentsAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_TRUE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0b", 3)));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(RandomBytesTest, ReturnsRequestedLengthAndVaries) {
  EXPECT_EQ(RandomBytes(0), "");
  const std::string a = RandomBytes(32);
  const std::string b = RandomBytes(32);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(b.size(), 32u);
  // Equal with probability 2^-256.
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace aobj
