#include "wire/checksum.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "wire/checksum_internal.h"

namespace aobj {
namespace {

using checksum_internal::Crc32cHardware;
using checksum_internal::Crc32cHardwareAvailable;
using checksum_internal::Crc32cTable;
using checksum_internal::Crc64NvmeTable;
using checksum_internal::CrcFoldAvailable;

constexpr std::string_view kCheck = "123456789";

// Bit-at-a-time references, independent of the table and instruction code under test.
uint32_t ReferenceCrc32c(const std::string& data) {
  uint32_t reg = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    reg ^= byte;
    for (int bit = 0; bit < 8; ++bit) reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
  }
  return ~reg;
}

uint64_t ReferenceCrc64Nvme(const std::string& data) {
  uint64_t reg = ~uint64_t{0};
  for (unsigned char byte : data) {
    reg ^= byte;
    for (int bit = 0; bit < 8; ++bit) {
      reg = (reg & 1) ? (reg >> 1) ^ 0x9A6C9329AC4BC9B5ull : reg >> 1;
    }
  }
  return ~reg;
}

std::string RandomString(std::mt19937_64& rng, size_t size) {
  std::string s(size, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Sizes that cross every path of the hardware code: the byte tail, the 8-byte loop, and the
// three-stream loops over 256- and 8192-byte blocks.
std::vector<size_t> InterestingSizes() {
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 300; ++n) sizes.push_back(n);
  for (size_t base : {size_t{3 * 256}, size_t{3 * 8192}, size_t{2 * 3 * 8192}}) {
    for (size_t n = base - 17; n <= base + 17; ++n) sizes.push_back(n);
  }
  // Around the folding path's edges: 256 (its minimum), each 64- and 256-octet step, and the
  // 16-octet remainder loop.
  for (size_t base : {size_t{256}, size_t{512}, size_t{1024}}) {
    for (size_t n = base - 1; n <= base + 80; ++n) sizes.push_back(n);
  }
  for (size_t n : {1000, 4095, 4096, 65536, 100003, 1 << 20}) sizes.push_back(n);
  return sizes;
}

TEST(Crc32cTest, CheckValue) {
  EXPECT_EQ(Crc32c(0, kCheck.data(), kCheck.size()), 0xE3069283u);
  EXPECT_EQ(Crc32cTable(0, kCheck.data(), kCheck.size()), 0xE3069283u);
  EXPECT_EQ(Crc32cHardware(0, kCheck.data(), kCheck.size()), 0xE3069283u);
}

TEST(Crc32cTest, EmptyInputKeepsValue) {
  EXPECT_EQ(Crc32c(0, nullptr, 0), 0u);
  EXPECT_EQ(Crc32c(0xDEADBEEF, nullptr, 0), 0xDEADBEEFu);
}

// RFC 3720 (iSCSI) appendix B.4 vectors.
TEST(Crc32cTest, Rfc3720Vectors) {
  std::string zeros(32, '\0');
  std::string ones(32, '\xff');
  std::string inc(32, '\0');
  std::string dec(32, '\0');
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<char>(i);
    dec[i] = static_cast<char>(31 - i);
  }
  for (auto fn : {&Crc32c, &Crc32cTable, &Crc32cHardware}) {
    EXPECT_EQ(fn(0, zeros.data(), zeros.size()), 0x8A9136AAu);
    EXPECT_EQ(fn(0, ones.data(), ones.size()), 0x62A8AB43u);
    EXPECT_EQ(fn(0, inc.data(), inc.size()), 0x46DD794Eu);
    EXPECT_EQ(fn(0, dec.data(), dec.size()), 0x113FDB5Cu);
  }
}

TEST(Crc32cTest, TableMatchesBitwiseReference) {
  std::mt19937_64 rng(1);
  for (size_t n = 0; n < 200; ++n) {
    const std::string data = RandomString(rng, n);
    ASSERT_EQ(Crc32cTable(0, data.data(), data.size()), ReferenceCrc32c(data)) << "size " << n;
  }
}

TEST(Crc32cTest, HardwareMatchesTableAcrossSizesAndAlignments) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(2);
  const std::string buffer = RandomString(rng, (1 << 20) + 64);
  for (size_t size : InterestingSizes()) {
    for (size_t offset = 0; offset < 16; ++offset) {
      const char* p = buffer.data() + offset;
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(Crc32cHardware(seed, p, size), Crc32cTable(seed, p, size))
          << "size " << size << " offset " << offset;
    }
  }
}

TEST(Crc32cTest, ContinuationEqualsOneShot) {
  std::mt19937_64 rng(3);
  const std::string data = RandomString(rng, 3 * 8192 * 2 + 777);
  const uint32_t whole = Crc32c(0, data.data(), data.size());
  EXPECT_EQ(whole, Crc32cTable(0, data.data(), data.size()));
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{255}, size_t{3 * 256},
                       size_t{3 * 8192 + 3}, data.size() - 1, data.size()}) {
    const uint32_t first = Crc32c(0, data.data(), split);
    EXPECT_EQ(Crc32c(first, data.data() + split, data.size() - split), whole) << split;
    const uint32_t first_table = Crc32cTable(0, data.data(), split);
    EXPECT_EQ(Crc32cTable(first_table, data.data() + split, data.size() - split), whole) << split;
  }
  const std::string small = data.substr(0, 100);
  const uint32_t small_whole = Crc32c(0, small.data(), small.size());
  for (size_t split = 0; split <= small.size(); ++split) {
    EXPECT_EQ(Crc32c(Crc32c(0, small.data(), split), small.data() + split, small.size() - split),
              small_whole)
        << split;
  }
}

TEST(Crc64NvmeTest, CheckValue) {
  EXPECT_EQ(Crc64Nvme(0, kCheck.data(), kCheck.size()), 0xAE8B14860A799888ull);
}

TEST(Crc64NvmeTest, EmptyInputKeepsValue) {
  EXPECT_EQ(Crc64Nvme(0, nullptr, 0), 0u);
  EXPECT_EQ(Crc64Nvme(0x0123456789ABCDEFull, nullptr, 0), 0x0123456789ABCDEFull);
}

TEST(Crc64NvmeTest, MatchesBitwiseReference) {
  std::mt19937_64 rng(4);
  for (size_t n = 0; n < 200; ++n) {
    const std::string data = RandomString(rng, n);
    for (size_t offset = 0; offset < 8 && offset <= n; ++offset) {
      const std::string_view view = std::string_view(data).substr(offset);
      ASSERT_EQ(Crc64Nvme(0, view.data(), view.size()), ReferenceCrc64Nvme(std::string(view)))
          << "size " << n << " offset " << offset;
    }
  }
}

// The folding path (AVX-512 VPCLMULQDQ) against slicing-by-8 for both polynomials, with random
// initial values, every alignment and the sizes around its loop edges.
TEST(CrcFoldTest, FoldedCrcsMatchTheTables) {
  if (!CrcFoldAvailable()) GTEST_SKIP() << "no AVX-512 VPCLMULQDQ on this CPU";
  std::mt19937_64 rng(6);
  const std::string buffer = RandomString(rng, (1 << 20) + 64);
  for (size_t size : InterestingSizes()) {
    for (size_t offset = 0; offset < 16; offset += 3) {
      const char* p = buffer.data() + offset;
      const uint64_t seed = rng();
      ASSERT_EQ(Crc32c(static_cast<uint32_t>(seed), p, size),
                Crc32cTable(static_cast<uint32_t>(seed), p, size))
          << "CRC32C size " << size << " offset " << offset;
      ASSERT_EQ(Crc64Nvme(seed, p, size), Crc64NvmeTable(seed, p, size))
          << "CRC64NVME size " << size << " offset " << offset;
    }
  }
  // Known answers over a long input, so a fold and a table that were wrong the same way would
  // still be caught: 1 MiB of the octet pattern i * 7 + 3.
  std::string pattern(1 << 20, '\0');
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<char>(i * 7 + 3);
  EXPECT_EQ(Crc32c(0, pattern.data(), pattern.size()), ReferenceCrc32c(pattern));
  EXPECT_EQ(Crc64Nvme(0, pattern.data(), pattern.size()), ReferenceCrc64Nvme(pattern));
}

TEST(Crc64NvmeTest, ContinuationEqualsOneShot) {
  std::mt19937_64 rng(5);
  const std::string data = RandomString(rng, 1000);
  const uint64_t whole = Crc64Nvme(0, data.data(), data.size());
  for (size_t split = 0; split <= data.size(); split += 7) {
    EXPECT_EQ(Crc64Nvme(Crc64Nvme(0, data.data(), split), data.data() + split, data.size() - split),
              whole)
        << split;
  }
}

TEST(ChecksummerTest, FinishIsBigEndianCheckValue) {
  Checksummer crc32c(ChecksumAlgorithm::kCrc32c);
  crc32c.Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(crc32c.Finish(), std::string("\xE3\x06\x92\x83", 4));

  Checksummer crc64(ChecksumAlgorithm::kCrc64Nvme);
  crc64.Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(crc64.Finish(), std::string("\xAE\x8B\x14\x86\x0A\x79\x98\x88", 8));
}

TEST(ChecksummerTest, EmptyMessageAndNone) {
  EXPECT_EQ(Checksummer(ChecksumAlgorithm::kCrc32c).Finish(), std::string(4, '\0'));
  EXPECT_EQ(Checksummer(ChecksumAlgorithm::kCrc64Nvme).Finish(), std::string(8, '\0'));
  Checksummer none(ChecksumAlgorithm::kNone);
  none.Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(none.Finish(), "");
}

TEST(ChecksummerTest, ChunkedUpdatesEqualOneShot) {
  std::mt19937_64 rng(6);
  const std::string data = RandomString(rng, 50000);
  for (ChecksumAlgorithm algorithm : {ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme}) {
    Checksummer whole(algorithm);
    whole.Update(data.data(), data.size());
    Checksummer chunked(algorithm);
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t n = std::min<size_t>(rng() % 3000, data.size() - pos);
      chunked.Update(data.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(chunked.Finish(), whole.Finish()) << ChecksumName(algorithm);
    // Finish does not consume the state.
    EXPECT_EQ(chunked.Finish(), whole.Finish());
  }
}

TEST(ChecksumTest, SizesAndNames) {
  EXPECT_EQ(ChecksumSize(ChecksumAlgorithm::kNone), 0u);
  EXPECT_EQ(ChecksumSize(ChecksumAlgorithm::kCrc32c), 4u);
  EXPECT_EQ(ChecksumSize(ChecksumAlgorithm::kCrc64Nvme), 8u);
  EXPECT_STREQ(ChecksumName(ChecksumAlgorithm::kNone), "NONE");
  EXPECT_STREQ(ChecksumName(ChecksumAlgorithm::kCrc32c), "CRC32C");
  EXPECT_STREQ(ChecksumName(ChecksumAlgorithm::kCrc64Nvme), "CRC64NVME");
}

TEST(ChecksumTest, UnknownAlgorithmHasNoEncoding) {
  const auto unknown = static_cast<ChecksumAlgorithm>(0x0A0A);
  EXPECT_EQ(ChecksumSize(unknown), 0u);
  EXPECT_STREQ(ChecksumName(unknown), "UNKNOWN");
  Checksummer summer(unknown);
  summer.Update(kCheck.data(), kCheck.size());
  EXPECT_EQ(summer.Finish(), "");
}

// Checksumming pieces on several threads: combining the pieces' CRCs gives the CRC of the
// whole, for every split point (empty pieces included) and both algorithms.
TEST(ChecksumTest, CombinedPiecesEqualTheWhole) {
  std::mt19937 rng(7);
  std::string data(70000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t split : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{65535},
                       size_t{69999}, size_t{70000}}) {
    const std::string_view a(data.data(), split);
    const std::string_view b(data.data() + split, data.size() - split);
    EXPECT_EQ(Crc32cCombine(Crc32c(0, a.data(), a.size()), Crc32c(0, b.data(), b.size()),
                            b.size()),
              Crc32c(0, data.data(), data.size()))
        << "split at " << split;
    EXPECT_EQ(Crc64NvmeCombine(Crc64Nvme(0, a.data(), a.size()),
                               Crc64Nvme(0, b.data(), b.size()), b.size()),
              Crc64Nvme(0, data.data(), data.size()))
        << "split at " << split;
    for (auto algo : {ChecksumAlgorithm::kCrc32c, ChecksumAlgorithm::kCrc64Nvme}) {
      Checksummer whole(algo), first(algo), second(algo);
      whole.Update(data.data(), data.size());
      first.Update(a.data(), a.size());
      second.Update(b.data(), b.size());
      first.Append(second, b.size());
      EXPECT_EQ(first.Finish(), whole.Finish()) << ChecksumName(algo) << " split at " << split;
    }
  }
  // A length past 4 GiB exercises the high bits of the operator's exponent.
  const uint32_t a = Crc32c(0, "abc", 3);
  EXPECT_NE(Crc32cCombine(a, 0, uint64_t{5} << 32), Crc32cCombine(a, 0, uint64_t{4} << 32));
}

}  // namespace
}  // namespace aobj
