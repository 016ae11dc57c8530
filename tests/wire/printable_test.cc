#include "wire/printable.h"

#include <string>

#include "gtest/gtest.h"

namespace aobj {
namespace {

TEST(PrintableAsciiTest, KeepsPrintableAsciiAndEscapesEverythingElse) {
  EXPECT_EQ(PrintableAscii("GetObject 1~"), "GetObject 1~");
  EXPECT_EQ(PrintableAscii(std::string("a\0b\n\x7f", 5)), "a\\x00b\\x0a\\x7f");
  // Octets above 0x7f are escaped one by one: the result is ASCII, valid UTF-8 whatever came in.
  EXPECT_EQ(PrintableAscii("\xc3\xa9\xff"), "\\xc3\\xa9\\xff");
  EXPECT_EQ(PrintableAscii(""), "");
}

}  // namespace
}  // namespace aobj
