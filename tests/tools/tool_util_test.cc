// Shared helpers of the command-line tools.
#include "tool_util.h"

#include "absl/strings/cord.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/error_registry.h"

namespace aobj::tools {
namespace {

TEST(ParseArgsTest, KeepsTheOrderOfFlagsForFilters) {
  const char* argv[] = {"aobj",        "--exclude", "*",     "cp", "--include=*.txt",
                        "--recursive", "--exclude", "tmp/*", "a",  "b"};
  ParsedArgs args;
  ASSERT_TRUE(
      ParseArgs(10, const_cast<char**>(argv), 1, {"exclude", "include"}, {"recursive"}, &args)
          .ok());
  ASSERT_EQ(args.sequence.size(), 4u);
  EXPECT_EQ(args.sequence[0], std::make_pair(std::string("exclude"), std::string("*")));
  EXPECT_EQ(args.sequence[1], std::make_pair(std::string("include"), std::string("*.txt")));
  EXPECT_EQ(args.sequence[2], std::make_pair(std::string("recursive"), std::string("true")));
  EXPECT_EQ(args.sequence[3], std::make_pair(std::string("exclude"), std::string("tmp/*")));
  EXPECT_EQ(args.positional, (std::vector<std::string>{"cp", "a", "b"}));
  EXPECT_EQ(args.flags.at("exclude").size(), 2u);
}

// Issue 16 finding 6: names from a server never reach a terminal raw.
TEST(PrintableTest, EscapesControlCharactersAndKeepsTheRest) {
  EXPECT_EQ(Printable("plain/key.txt"), "plain/key.txt");
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");  // UTF-8 as is
  EXPECT_EQ(Printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(Printable(std::string("\0\t\n\r\x7f", 5)), "\\x00\\x09\\x0a\\x0d\\x7f");
  EXPECT_EQ(Printable(""), "");
}

// Tenth hostile probe, F5: C1 controls (U+009B is an 8-bit CSI to xterm) and bidirectional
// overrides in a key were printed raw, and so was a server's error message.
TEST(PrintableTest, EscapesC1AndBidirectionalControlsAndMalformedUtf8) {
  EXPECT_EQ(Printable("a\xc2\x9b"
                      "2Jb"),
            "a\\xc2\\x9b2Jb");  // U+009B
  EXPECT_EQ(Printable("x\xe2\x80\xae"
                      "evil"),
            "x\\xe2\\x80\\xaeevil");                                                     // U+202E
  EXPECT_EQ(Printable("\xe2\x81\xa6i\xe2\x81\xa9"), "\\xe2\\x81\\xa6i\\xe2\\x81\\xa9");  // isolates
  EXPECT_EQ(Printable("\x9b"), "\\x9b");                    // a lone C1 octet (not UTF-8)
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");           // an overlong '/'
  EXPECT_EQ(Printable("\xe2\x80"), "\\xe2\\x80");           // cut short
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(Printable("\xc2\xa0\xf0\x9f\x98\x80"), "\xc2\xa0\xf0\x9f\x98\x80");  // kept
  EXPECT_EQ(Printable("\xe2\x80\x8c"), "\xe2\x80\x8c");  // U+200C, no bidi control: kept
}

}  // namespace
}  // namespace aobj::tools

// Issue 23: a command whose connection was lost says so, not "INTERNAL (InternalError): control
// channel: ..."; a server's own error keeps its AOBJ and S3 names.
namespace aobj::tools {
namespace {

TEST(DescribeErrorTest, NoReplyFromTheServerIsSaidPlainly) {
  absl::Status lost = MakeError(ErrorCode::kInternal, "control channel: Socket closed");
  lost.SetPayload(kControlChannelPayloadUrl, absl::Cord("connection refused"));
  EXPECT_EQ(
      aobj::tools::DescribeError(lost),
      "INTERNAL (InternalError): no reply from the server: connection refused (is aobj-server "
      "still running?)");
  EXPECT_EQ(aobj::tools::DescribeError(MakeError(ErrorCode::kAccessDenied, "bucket a\nb\x1b[2J")),
            "ACCESS_DENIED (AccessDenied): bucket a\\x0ab\\x1b[2J");  // a server's text, escaped
  EXPECT_EQ(aobj::tools::DescribeError(MakeError(ErrorCode::kNoSuchKey, "no such key")),
            "NO_SUCH_KEY (NoSuchKey): no such key");
}

}  // namespace
}  // namespace aobj::tools
