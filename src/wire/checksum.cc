#include "wire/checksum.h"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "wire/checksum_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AOBJ_CRC32C_HAVE_SSE42 1
#include <nmmintrin.h>
#else
#define AOBJ_CRC32C_HAVE_SSE42 0
#endif

namespace aobj {
namespace {

// Both CRCs here are reflected (refin/refout), so the table algorithms shift right and the
// first byte of the message meets the low byte of the state. Internally all helpers work on the
// raw register (init and xorout already applied by the caller); only the public functions
// convert between raw and finalized values.
constexpr uint32_t kCrc32cPoly = 0x82F63B78u;               // reflected 0x1EDC6F41
constexpr uint64_t kCrc64NvmePoly = 0x9A6C9329AC4BC9B5ull;  // reflected 0xAD93D23594C93659

// Slicing-by-8: t[k][b] is the register contribution of byte b followed by k zero bytes, so
// eight input bytes fold into the register with eight independent lookups.
template <typename T>
struct SliceTables {
  T t[8][256];
};

template <typename T>
constexpr SliceTables<T> MakeSliceTables(T poly) {
  SliceTables<T> s{};
  for (uint32_t b = 0; b < 256; ++b) {
    T c = static_cast<T>(b);
    for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? static_cast<T>((c >> 1) ^ poly) : (c >> 1);
    s.t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const T prev = s.t[k - 1][b];
      s.t[k][b] = static_cast<T>((prev >> 8) ^ s.t[0][prev & 0xff]);
    }
  }
  return s;
}

constexpr SliceTables<uint32_t> kCrc32cTables = MakeSliceTables<uint32_t>(kCrc32cPoly);
constexpr SliceTables<uint64_t> kCrc64NvmeTables = MakeSliceTables<uint64_t>(kCrc64NvmePoly);

// Unaligned little-endian load; compiles to a single mov on x86-64.
inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

template <typename T>
T SliceBy8(const SliceTables<T>& tab, T reg, const uint8_t* p, size_t n) {
  while (n >= 8) {
    const uint64_t w = LoadLe64(p) ^ static_cast<uint64_t>(reg);
    reg =
        static_cast<T>(tab.t[7][w & 0xff] ^ tab.t[6][(w >> 8) & 0xff] ^ tab.t[5][(w >> 16) & 0xff] ^
                       tab.t[4][(w >> 24) & 0xff] ^ tab.t[3][(w >> 32) & 0xff] ^
                       tab.t[2][(w >> 40) & 0xff] ^ tab.t[1][(w >> 48) & 0xff] ^ tab.t[0][w >> 56]);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) reg = static_cast<T>((reg >> 8) ^ tab.t[0][(reg ^ *p++) & 0xff]);
  return reg;
}

#if AOBJ_CRC32C_HAVE_SSE42

// The three-stream hardware path computes independent CRCs of adjacent blocks and joins them
// with the linear "append N zero bytes" operator on the raw register:
//   crc(s, A || B) = Zeros_|B|(crc(s, A)) ^ crc(0, B).
// The crc32 instruction has latency 3 and throughput 1, so three streams keep it busy.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

// Zeros_n as four byte-indexed tables (the operator is linear in the 32 register bits).
struct ZerosOperator {
  uint32_t t[4][256];
};

constexpr ZerosOperator MakeZerosOperator(size_t n) {
  uint32_t column[32] = {};
  for (int i = 0; i < 32; ++i) {
    uint32_t reg = uint32_t{1} << i;
    for (size_t k = 0; k < n / 8; ++k) {
      reg = kCrc32cTables.t[7][reg & 0xff] ^ kCrc32cTables.t[6][(reg >> 8) & 0xff] ^
            kCrc32cTables.t[5][(reg >> 16) & 0xff] ^ kCrc32cTables.t[4][reg >> 24];
    }
    column[i] = reg;
  }
  ZerosOperator op{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t v = 0;
      for (int j = 0; j < 8; ++j) {
        if ((b >> j) & 1) v ^= column[8 * k + j];
      }
      op.t[k][b] = v;
    }
  }
  return op;
}

static_assert(kLongBlock % 8 == 0 && kShortBlock % 8 == 0);
constexpr ZerosOperator kZerosLong = MakeZerosOperator(kLongBlock);
constexpr ZerosOperator kZerosShort = MakeZerosOperator(kShortBlock);

inline uint32_t ApplyZeros(const ZerosOperator& op, uint32_t reg) {
  return op.t[0][reg & 0xff] ^ op.t[1][(reg >> 8) & 0xff] ^ op.t[2][(reg >> 16) & 0xff] ^
         op.t[3][reg >> 24];
}

template <size_t kBlock>
__attribute__((target("sse4.2"))) inline uint64_t Crc32cThreeStreams(const ZerosOperator& zeros,
                                                                     uint64_t reg,
                                                                     const uint8_t*& p, size_t& n) {
  while (n >= 3 * kBlock) {
    uint64_t reg1 = 0;
    uint64_t reg2 = 0;
    const uint8_t* const end = p + kBlock;
    do {
      reg = _mm_crc32_u64(reg, LoadLe64(p));
      reg1 = _mm_crc32_u64(reg1, LoadLe64(p + kBlock));
      reg2 = _mm_crc32_u64(reg2, LoadLe64(p + 2 * kBlock));
      p += 8;
    } while (p < end);
    reg = ApplyZeros(zeros, static_cast<uint32_t>(reg)) ^ reg1;
    reg = ApplyZeros(zeros, static_cast<uint32_t>(reg)) ^ reg2;
    p += 2 * kBlock;
    n -= 3 * kBlock;
  }
  return reg;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(uint32_t reg32, const uint8_t* p, size_t n) {
  uint64_t reg = reg32;
  // Align so the 8-byte loads of all three streams are aligned (block sizes are multiples of 8).
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    reg = _mm_crc32_u8(static_cast<uint32_t>(reg), *p++);
    --n;
  }
  reg = Crc32cThreeStreams<kLongBlock>(kZerosLong, reg, p, n);
  reg = Crc32cThreeStreams<kShortBlock>(kZerosShort, reg, p, n);
  while (n >= 8) {
    reg = _mm_crc32_u64(reg, LoadLe64(p));
    p += 8;
    n -= 8;
  }
  while (n-- > 0) reg = _mm_crc32_u8(static_cast<uint32_t>(reg), *p++);
  return static_cast<uint32_t>(reg);
}

bool DetectSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

#endif  // AOBJ_CRC32C_HAVE_SSE42

}  // namespace

namespace checksum_internal {

uint32_t Crc32cTable(uint32_t crc, const void* data, size_t size) {
  return ~SliceBy8<uint32_t>(kCrc32cTables, ~crc, static_cast<const uint8_t*>(data), size);
}

bool Crc32cHardwareAvailable() {
#if AOBJ_CRC32C_HAVE_SSE42
  static const bool available = DetectSse42();
  return available;
#else
  return false;
#endif
}

uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t size) {
#if AOBJ_CRC32C_HAVE_SSE42
  if (Crc32cHardwareAvailable()) {
    const auto* p = static_cast<const uint8_t*>(data);
    // Long inputs: fold by carry-less multiplication (about 80 GB/s in cache on AVX-512 CPUs,
    // against 17 for the crc32 instruction), then the instruction over the folded 16 octets and
    // the tail.
    if (size >= kCrcFoldMinBytes) {
      uint8_t folded[16];
      const size_t done = CrcFold(CrcFoldPoly::kCrc32c, static_cast<uint32_t>(~crc), p, size,
                                  folded);
      if (done > 0) {
        const uint32_t reg = Crc32cSse42(0, folded, sizeof(folded));
        return ~Crc32cSse42(reg, p + done, size - done);
      }
    }
    return ~Crc32cSse42(~crc, p, size);
  }
#endif
  return Crc32cTable(crc, data, size);
}

uint64_t Crc64NvmeTable(uint64_t crc, const void* data, size_t size) {
  return ~SliceBy8<uint64_t>(kCrc64NvmeTables, ~crc, static_cast<const uint8_t*>(data), size);
}

}  // namespace checksum_internal

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  return checksum_internal::Crc32cHardware(crc, data, size);
}

uint64_t Crc64Nvme(uint64_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (size >= checksum_internal::kCrcFoldMinBytes) {
    uint8_t folded[16];
    const size_t done = checksum_internal::CrcFold(checksum_internal::CrcFoldPoly::kCrc64Nvme,
                                                   ~crc, p, size, folded);
    if (done > 0) {
      const uint64_t reg = SliceBy8<uint64_t>(kCrc64NvmeTables, 0, folded, sizeof(folded));
      return ~SliceBy8<uint64_t>(kCrc64NvmeTables, reg, p + done, size - done);
    }
  }
  return checksum_internal::Crc64NvmeTable(crc, p, size);
}

namespace {

// zlib's crc32_combine, for any width: `mat` is the operator "one zero bit" (or a power of it)
// as DIM column vectors.
template <class T>
T Gf2Times(const T* mat, T vec) {
  T sum = 0;
  for (int i = 0; vec != 0; ++i, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

template <class T>
void Gf2Square(T* square, const T* mat) {
  constexpr int kDim = 8 * sizeof(T);
  for (int n = 0; n < kDim; ++n) square[n] = Gf2Times(mat, mat[n]);
}

template <class T>
T CrcCombine(T crc_a, T crc_b, uint64_t size_b, T reflected_poly) {
  constexpr int kDim = 8 * sizeof(T);
  if (size_b == 0) return crc_a;
  T even[kDim];
  T odd[kDim];
  odd[0] = reflected_poly;  // the operator for one zero bit
  T row = 1;
  for (int n = 1; n < kDim; ++n) {
    odd[n] = row;
    row <<= 1;
  }
  Gf2Square(even, odd);  // two zero bits
  Gf2Square(odd, even);  // four zero bits
  do {
    Gf2Square(even, odd);  // 8, 32, 128, ... zero bits: one octet first
    if (size_b & 1) crc_a = Gf2Times(even, crc_a);
    size_b >>= 1;
    if (size_b == 0) break;
    Gf2Square(odd, even);
    if (size_b & 1) crc_a = Gf2Times(odd, crc_a);
    size_b >>= 1;
  } while (size_b != 0);
  return crc_a ^ crc_b;
}

}  // namespace

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  return CrcCombine<uint32_t>(crc_a, crc_b, size_b, kCrc32cPoly);
}

uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t size_b) {
  return CrcCombine<uint64_t>(crc_a, crc_b, size_b, kCrc64NvmePoly);
}

void Checksummer::Append(const Checksummer& next, uint64_t next_size) {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32c:
      state_ = Crc32cCombine(static_cast<uint32_t>(state_), static_cast<uint32_t>(next.state_),
                             next_size);
      break;
    case ChecksumAlgorithm::kCrc64Nvme:
      state_ = Crc64NvmeCombine(state_, next.state_, next_size);
      break;
    default:
      break;
  }
}

void Checksummer::Update(const void* data, size_t size) {
  switch (algorithm_) {
    case ChecksumAlgorithm::kCrc32c:
      state_ = Crc32c(static_cast<uint32_t>(state_), data, size);
      break;
    case ChecksumAlgorithm::kCrc64Nvme:
      state_ = Crc64Nvme(state_, data, size);
      break;
    default:
      break;
  }
}

std::string Checksummer::Finish() const {
  const size_t size = ChecksumSize(algorithm_);
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    out[i] = static_cast<char>((state_ >> (8 * (size - 1 - i))) & 0xff);
  }
  return out;
}

size_t ChecksumSize(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::kCrc32c:
      return 4;
    case ChecksumAlgorithm::kCrc64Nvme:
      return 8;
    case ChecksumAlgorithm::kNone:
      return 0;
  }
  // A value off the enum (e.g. cast from an unknown wire value) has no encoding.
  return 0;
}

const char* ChecksumName(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::kCrc32c:
      return "CRC32C";
    case ChecksumAlgorithm::kCrc64Nvme:
      return "CRC64NVME";
    case ChecksumAlgorithm::kNone:
      return "NONE";
  }
  return "UNKNOWN";
}

}  // namespace aobj
