#include "wire/names.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

ErrorCode BucketCode(absl::string_view name) { return ErrorCodeOf(ValidateBucketName(name)); }
ErrorCode KeyCode(absl::string_view key) { return ErrorCodeOf(ValidateObjectKey(key)); }

// Reference well-formedness check written from the Unicode Standard, Table 3-7 ("Well-Formed
// UTF-8 Byte Sequences"), independent of the implementation under test.
bool ReferenceUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  auto in = [&](size_t k, unsigned lo, unsigned hi) {
    return i + k < n && p[i + k] >= lo && p[i + k] <= hi;
  };
  while (i < n) {
    const unsigned b = p[i];
    if (b <= 0x7F) {
      i += 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      if (!in(1, 0x80, 0xBF)) return false;
      i += 2;
    } else if (b == 0xE0) {
      if (!in(1, 0xA0, 0xBF) || !in(2, 0x80, 0xBF)) return false;
      i += 3;
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
      if (!in(1, 0x80, 0xBF) || !in(2, 0x80, 0xBF)) return false;
      i += 3;
    } else if (b == 0xED) {
      if (!in(1, 0x80, 0x9F) || !in(2, 0x80, 0xBF)) return false;
      i += 3;
    } else if (b == 0xF0) {
      if (!in(1, 0x90, 0xBF) || !in(2, 0x80, 0xBF) || !in(3, 0x80, 0xBF)) return false;
      i += 4;
    } else if (b >= 0xF1 && b <= 0xF3) {
      if (!in(1, 0x80, 0xBF) || !in(2, 0x80, 0xBF) || !in(3, 0x80, 0xBF)) return false;
      i += 4;
    } else if (b == 0xF4) {
      if (!in(1, 0x80, 0x8F) || !in(2, 0x80, 0xBF) || !in(3, 0x80, 0xBF)) return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

// Calls IsValidUtf8 on an exact-size heap copy, so that a read past the end is caught by
// AddressSanitizer when the tests are built with it.
bool ExactIsValidUtf8(absl::string_view s) {
  std::unique_ptr<char[]> copy(new char[s.size() == 0 ? 1 : s.size()]);
  for (size_t k = 0; k < s.size(); ++k) copy[k] = s[k];
  return IsValidUtf8(absl::string_view(copy.get(), s.size()));
}

// --- Bucket names (AOBJ-OBJ-001) ---

TEST(ValidateBucketNameTest, AcceptsValidNames) {
  // AOBJ-OBJ-001
  for (const char* name : {"abc", "my-bucket", "my.bucket.example", "a1b2c3", "123",
                           "0-9", "bucket-2024.logs", "1.2.3", "1.2.3.4.5", "256.1.1.1x",
                           "a.b-c.d"}) {
    EXPECT_EQ(BucketCode(name), ErrorCode::kOk) << name;
  }
  EXPECT_EQ(BucketCode(std::string(63, 'a')), ErrorCode::kOk);
}

TEST(ValidateBucketNameTest, RejectsTooShort) {
  // AOBJ-OBJ-001: 3 to 63 characters.
  EXPECT_EQ(BucketCode(""), ErrorCode::kInvalidBucketName);
  EXPECT_EQ(BucketCode("a"), ErrorCode::kInvalidBucketName);
  EXPECT_EQ(BucketCode("ab"), ErrorCode::kInvalidBucketName);
}

TEST(ValidateBucketNameTest, RejectsTooLong) {
  // AOBJ-OBJ-001
  EXPECT_EQ(BucketCode(std::string(64, 'a')), ErrorCode::kInvalidBucketName);
}

TEST(ValidateBucketNameTest, RejectsUpperCase) {
  // AOBJ-OBJ-001: lower-case letters only.
  EXPECT_EQ(BucketCode("MyBucket"), ErrorCode::kInvalidBucketName);
  EXPECT_EQ(BucketCode("buckeT"), ErrorCode::kInvalidBucketName);
}

TEST(ValidateBucketNameTest, RejectsUnderscoreAndOtherCharacters) {
  // AOBJ-OBJ-001
  for (const char* name : {"my_bucket", "my bucket", "my/bucket", "bücket", "my:bucket"}) {
    EXPECT_EQ(BucketCode(name), ErrorCode::kInvalidBucketName) << name;
  }
  EXPECT_EQ(BucketCode(absl::string_view("ab\0c", 4)), ErrorCode::kInvalidBucketName);
}

TEST(ValidateBucketNameTest, RejectsLeadingOrTrailingDotOrDash) {
  // AOBJ-OBJ-001: starts and ends with a letter or digit.
  for (const char* name : {".bucket", "bucket.", "-bucket", "bucket-", "-ab-", ".a."}) {
    EXPECT_EQ(BucketCode(name), ErrorCode::kInvalidBucketName) << name;
  }
}

TEST(ValidateBucketNameTest, RejectsAdjacentDots) {
  // AOBJ-OBJ-001 (reference server also refuses "..", as S3 does).
  EXPECT_EQ(BucketCode("my..bucket"), ErrorCode::kInvalidBucketName);
}

TEST(ValidateBucketNameTest, RejectsIpv4LookingNames) {
  // AOBJ-OBJ-001: the form of an IPv4 address in dotted decimal.
  for (const char* name : {"192.168.5.4", "0.0.0.0", "255.255.255.255", "10.0.0.1"}) {
    EXPECT_EQ(BucketCode(name), ErrorCode::kInvalidBucketName) << name;
  }
}

TEST(ValidateBucketNameTest, AcceptsNamesThatAreNotIpv4) {
  // AOBJ-OBJ-001: only dotted-decimal addresses are refused.
  for (const char* name : {"256.1.1.1", "1.2.3.4a", "1.2.3", "1.2.3.4.5", "1234.1.1.1"}) {
    EXPECT_EQ(BucketCode(name), ErrorCode::kOk) << name;
  }
}

// --- Object keys (AOBJ-OBJ-002) ---

TEST(ValidateObjectKeyTest, AcceptsOneAnd1024Bytes) {
  // AOBJ-OBJ-002: 1 to 1024 octets.
  EXPECT_EQ(KeyCode("a"), ErrorCode::kOk);
  EXPECT_EQ(KeyCode(std::string(1024, 'k')), ErrorCode::kOk);
}

TEST(ValidateObjectKeyTest, Rejects1025BytesAsTooLong) {
  // AOBJ-OBJ-002
  EXPECT_EQ(KeyCode(std::string(1025, 'k')), ErrorCode::kKeyTooLong);
}

TEST(ValidateObjectKeyTest, CountsOctetsNotCharacters) {
  // AOBJ-OBJ-002: 342 three-octet characters = 1026 octets.
  std::string key;
  for (int i = 0; i < 342; ++i) key += "\xE2\x82\xAC";  // U+20AC
  EXPECT_EQ(KeyCode(key), ErrorCode::kKeyTooLong);
  key.resize(1023);  // 341 characters, 1023 octets
  EXPECT_EQ(KeyCode(key), ErrorCode::kOk);
}

TEST(ValidateObjectKeyTest, RejectsEmptyAsInvalidArgument) {
  // AOBJ-OBJ-002
  EXPECT_EQ(KeyCode(""), ErrorCode::kInvalidArgument);
}

TEST(ValidateObjectKeyTest, AcceptsValidMultiByteUtf8) {
  // AOBJ-OBJ-002
  for (const char* key : {"caf\xC3\xA9",               // é, 2 octets
                          "\xE2\x82\xAC",              // €, 3 octets
                          "\xEF\xBF\xBF",              // U+FFFF
                          "photos/\xF0\x9F\x98\x80.png",  // 😀, 4 octets
                          "\xF4\x8F\xBF\xBF",          // U+10FFFF, the highest
                          "\xED\x9F\xBF",              // U+D7FF, just below surrogates
                          "\xEE\x80\x80",              // U+E000, just above surrogates
                          "\xC2\x80",                  // U+0080, smallest 2-octet
                          "\xE0\xA0\x80",              // U+0800, smallest 3-octet
                          "\xF0\x90\x80\x80"}) {       // U+10000, smallest 4-octet
    EXPECT_EQ(KeyCode(key), ErrorCode::kOk) << key;
  }
}

TEST(ValidateObjectKeyTest, AcceptsEmbeddedNul) {
  // AOBJ-OBJ-002: U+0000 is valid UTF-8; keys are octet strings (AOBJ-OBJ-015).
  EXPECT_EQ(KeyCode(absl::string_view("a\0b", 3)), ErrorCode::kOk);
}

TEST(ValidateObjectKeyTest, RejectsLoneContinuationByte) {
  // AOBJ-OBJ-002
  EXPECT_EQ(KeyCode("\x80"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KeyCode("abc\xBF" "def"), ErrorCode::kInvalidArgument);
}

TEST(ValidateObjectKeyTest, RejectsTruncatedSequenceAtEnd) {
  // AOBJ-OBJ-002
  for (const char* key : {"a\xC3", "a\xE2\x82", "a\xE2", "a\xF0\x9F\x98", "a\xF0\x9F",
                          "a\xF0"}) {
    EXPECT_EQ(KeyCode(key), ErrorCode::kInvalidArgument) << key;
  }
}

TEST(ValidateObjectKeyTest, RejectsTruncatedSequenceInMiddle) {
  // AOBJ-OBJ-002: a lead byte followed by too few continuation bytes.
  EXPECT_EQ(KeyCode("\xE2\x82z"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KeyCode("\xF0\x9F\x98z"), ErrorCode::kInvalidArgument);
}

TEST(ValidateObjectKeyTest, RejectsOverlongEncodings) {
  // AOBJ-OBJ-002
  for (const char* key : {"\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xE0\x9F\xBF",
                          "\xF0\x80\x80\xAF", "\xF0\x8F\xBF\xBF"}) {
    EXPECT_EQ(KeyCode(key), ErrorCode::kInvalidArgument) << key;
  }
}

TEST(ValidateObjectKeyTest, RejectsSurrogates) {
  // AOBJ-OBJ-002
  EXPECT_EQ(KeyCode("\xED\xA0\x80"), ErrorCode::kInvalidArgument);  // U+D800
  EXPECT_EQ(KeyCode("\xED\xBF\xBF"), ErrorCode::kInvalidArgument);  // U+DFFF
}

TEST(ValidateObjectKeyTest, RejectsCodePointsAbove10FFFF) {
  // AOBJ-OBJ-002
  EXPECT_EQ(KeyCode("\xF4\x90\x80\x80"), ErrorCode::kInvalidArgument);  // U+110000
  EXPECT_EQ(KeyCode("\xF7\xBF\xBF\xBF"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KeyCode("\xF8\x88\x80\x80\x80"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KeyCode("\xFF"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KeyCode("\xFE"), ErrorCode::kInvalidArgument);
}

TEST(ValidateObjectKeyTest, LengthIsCheckedBeforeEncoding) {
  // AOBJ-OBJ-002: too long wins over invalid UTF-8.
  EXPECT_EQ(KeyCode(std::string(1025, '\x80')), ErrorCode::kKeyTooLong);
}

// --- IsValidUtf8 against the reference, exhaustively for short inputs ---

TEST(IsValidUtf8Test, EmptyIsValid) { EXPECT_TRUE(ExactIsValidUtf8("")); }

TEST(IsValidUtf8Test, AgreesWithReferenceOnAllOneAndTwoByteStrings) {
  // AOBJ-OBJ-002
  for (unsigned a = 0; a < 256; ++a) {
    const char one[1] = {static_cast<char>(a)};
    ASSERT_EQ(ExactIsValidUtf8(absl::string_view(one, 1)),
              ReferenceUtf8(absl::string_view(one, 1)))
        << a;
    for (unsigned b = 0; b < 256; ++b) {
      const char two[2] = {static_cast<char>(a), static_cast<char>(b)};
      ASSERT_EQ(ExactIsValidUtf8(absl::string_view(two, 2)),
                ReferenceUtf8(absl::string_view(two, 2)))
          << a << " " << b;
    }
  }
}

TEST(IsValidUtf8Test, AgreesWithReferenceOnAllThreeByteStrings) {
  // AOBJ-OBJ-002: 2^24 inputs, every truncation and boundary of 1- to 3-octet sequences.
  std::unique_ptr<char[]> buf(new char[3]);
  size_t valid = 0;
  for (uint32_t v = 0; v < (1u << 24); ++v) {
    buf[0] = static_cast<char>(v >> 16);
    buf[1] = static_cast<char>(v >> 8);
    buf[2] = static_cast<char>(v);
    const absl::string_view s(buf.get(), 3);
    const bool got = IsValidUtf8(s);
    if (got != ReferenceUtf8(s)) {
      FAIL() << "disagrees on " << std::hex << v;
    }
    valid += got;
  }
  // 128^3 ASCII + 2 * 128 * 1920 (ASCII with a 2-octet char) + 61440 (3-octet chars:
  // U+0800..U+FFFF minus 2048 surrogates).
  EXPECT_EQ(valid, 128u * 128 * 128 + 2 * 128 * 1920 + 61440);
}

TEST(IsValidUtf8Test, AgreesWithReferenceOnFourByteStringsWithLeadF0ToF7) {
  // AOBJ-OBJ-002: every 4-octet string whose first octet is a 4-octet lead (or past U+10FFFF),
  // with the other three octets drawn from a set that covers every class boundary.
  const unsigned interesting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                  0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xF0, 0xF4, 0xFF};
  std::unique_ptr<char[]> buf(new char[4]);
  for (unsigned a = 0xF0; a <= 0xF7; ++a) {
    for (unsigned b : interesting) {
      for (unsigned c : interesting) {
        for (unsigned d : interesting) {
          buf[0] = static_cast<char>(a);
          buf[1] = static_cast<char>(b);
          buf[2] = static_cast<char>(c);
          buf[3] = static_cast<char>(d);
          const absl::string_view s(buf.get(), 4);
          ASSERT_EQ(IsValidUtf8(s), ReferenceUtf8(s)) << std::hex << a << " " << b << " " << c
                                                      << " " << d;
        }
      }
    }
  }
}

TEST(IsValidUtf8Test, DoesNotReadPastTheView) {
  // AOBJ-OBJ-002: a lead octet at the end of a view is judged on the view alone, even when the
  // octets after it in memory would complete the sequence.
  const char backing[] = "\xF0\x9F\x98\x80";
  EXPECT_FALSE(IsValidUtf8(absl::string_view(backing, 1)));
  EXPECT_FALSE(IsValidUtf8(absl::string_view(backing, 2)));
  EXPECT_FALSE(IsValidUtf8(absl::string_view(backing, 3)));
  EXPECT_TRUE(IsValidUtf8(absl::string_view(backing, 4)));
  const char two[] = "a\xC3\xA9";
  EXPECT_FALSE(IsValidUtf8(absl::string_view(two, 2)));
  EXPECT_TRUE(IsValidUtf8(absl::string_view(two, 3)));
}

}  // namespace
}  // namespace aobj
