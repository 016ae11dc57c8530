// JSON string literals of the tools' reports (src/wire/json.cc).
#include "wire/json.h"

#include "gtest/gtest.h"

namespace aobj {
namespace {

TEST(JsonQuoteTest, EscapesWhatJsonNeedsAndKeepsUtf8) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(JsonQuote(std::string("\0\x1b\x7f", 3)), "\"\\u0000\\u001b\\u007f\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\"");
  EXPECT_EQ(JsonQuote(""), "\"\"");
}

TEST(JsonQuoteTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(JsonQuote("a\xff"
                      "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(JsonQuote("\xc3"), "\"\\ufffd\"");                                   // truncated
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                        // overlong '/'
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");             // a surrogate
  EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
  EXPECT_EQ(JsonQuote("\xe2\x9c"), "\"\\ufffd\\ufffd\"");
}

}  // namespace
}  // namespace aobj
