// CRC folding with carry-less multiplication (AVX-512 VPCLMULQDQ), for the reflected CRCs of
// checksum.cc (CRC32C and CRC-64/NVME). See checksum_internal.h for the contract.
//
// The math. In the reflected convention a 16-octet block loaded as a little-endian 128-bit
// integer v stands for the polynomial sum(v_i * x^(127-i)): its first 8 octets (the low qword)
// carry degrees 127..64, the last 8 degrees 63..0. Moving a block D bits further down the
// message multiplies it by x^D, and modulo P
//   v * x^D  ==  lo * (x^(64+D) mod P)  +  hi * (x^D mod P),
// two 64 x 64 carry-less products of at most 127 bits, which fit in 128 bits and can be XORed
// into the block that sits D bits later. PCLMULQDQ of two reflected qwords yields the product
// shifted by one place, so the constants are x^(64+D-1) and x^(D-1) mod P. Folding keeps the
// message congruent modulo P and its length unchanged, so the CRC of the whole message equals
// the CRC (from a zero register) of the last accumulator's 16 octets followed by the tail; the
// caller computes that with its table or crc32-instruction code. The register's initial value
// is XORed into the first octets of the message, which is the same as starting from it.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/checksum_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define AOBJ_CRC_HAVE_FOLD 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define AOBJ_CRC_HAVE_FOLD 0
#endif

namespace aobj::checksum_internal {
namespace {

// x^e mod P, P given in normal form without its x^width term, as a polynomial of degree below
// `width` (bit d = coefficient of x^d).
constexpr uint64_t XPowMod(uint64_t e, uint64_t poly, int width) {
  uint64_t r = 1;
  const uint64_t top = uint64_t{1} << (width - 1);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  for (uint64_t i = 0; i < e; ++i) {
    const bool carry = (r & top) != 0;
    r = (r << 1) & mask;
    if (carry) r ^= poly;
  }
  return r;
}

// A polynomial of degree below 64 in the reflected qword form of PCLMULQDQ operands
// (coefficient of x^d in bit 63-d).
constexpr uint64_t ReflectQword(uint64_t p) {
  uint64_t out = 0;
  for (int d = 0; d < 64; ++d) {
    if ((p >> d) & 1) out |= uint64_t{1} << (63 - d);
  }
  return out;
}

struct Keys {
  uint64_t lo;  // x^(64+D-1) mod P: multiplies the block's first qword
  uint64_t hi;  // x^(D-1) mod P: multiplies its second qword
};

constexpr Keys MakeKeys(uint64_t distance_bits, uint64_t poly, int width) {
  return Keys{ReflectQword(XPowMod(64 + distance_bits - 1, poly, width)),
              ReflectQword(XPowMod(distance_bits - 1, poly, width))};
}

struct FoldKeys {
  Keys k2048, k512, k128;
};

constexpr FoldKeys MakeFoldKeys(uint64_t poly, int width) {
  return FoldKeys{MakeKeys(2048, poly, width), MakeKeys(512, poly, width),
                  MakeKeys(128, poly, width)};
}

constexpr FoldKeys kCrc32cKeys = MakeFoldKeys(0x1EDC6F41u, 32);
constexpr FoldKeys kCrc64NvmeKeys = MakeFoldKeys(0xAD93D23594C93659ull, 64);

#if AOBJ_CRC_HAVE_FOLD

#define AOBJ_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))

AOBJ_FOLD_TARGET inline __m512i Fold512(__m512i x, __m512i k, __m512i next) {
  const __m512i a = _mm512_clmulepi64_epi128(x, k, 0x00);
  const __m512i b = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(a, b, next, 0x96);  // a ^ b ^ next
}

AOBJ_FOLD_TARGET inline __m128i Fold128(__m128i x, __m128i k, __m128i next) {
  const __m128i a = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i b = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(a, b), next);
}

AOBJ_FOLD_TARGET size_t FoldImpl(const FoldKeys& keys, uint64_t raw_init, const uint8_t* p,
                                 size_t n, uint8_t out[16]) {
  const __m512i k2048 = _mm512_set_epi64(
      static_cast<int64_t>(keys.k2048.hi), static_cast<int64_t>(keys.k2048.lo),
      static_cast<int64_t>(keys.k2048.hi), static_cast<int64_t>(keys.k2048.lo),
      static_cast<int64_t>(keys.k2048.hi), static_cast<int64_t>(keys.k2048.lo),
      static_cast<int64_t>(keys.k2048.hi), static_cast<int64_t>(keys.k2048.lo));
  const __m512i k512 = _mm512_set_epi64(
      static_cast<int64_t>(keys.k512.hi), static_cast<int64_t>(keys.k512.lo),
      static_cast<int64_t>(keys.k512.hi), static_cast<int64_t>(keys.k512.lo),
      static_cast<int64_t>(keys.k512.hi), static_cast<int64_t>(keys.k512.lo),
      static_cast<int64_t>(keys.k512.hi), static_cast<int64_t>(keys.k512.lo));
  const __m128i k128 =
      _mm_set_epi64x(static_cast<int64_t>(keys.k128.hi), static_cast<int64_t>(keys.k128.lo));
  const size_t start = n;
  __m512i x0 = _mm512_loadu_si512(p);
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  x0 = _mm512_xor_si512(x0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<int64_t>(raw_init)));
  p += 256;
  n -= 256;
  while (n >= 256) {
    x0 = Fold512(x0, k2048, _mm512_loadu_si512(p));
    x1 = Fold512(x1, k2048, _mm512_loadu_si512(p + 64));
    x2 = Fold512(x2, k2048, _mm512_loadu_si512(p + 128));
    x3 = Fold512(x3, k2048, _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  x1 = Fold512(x0, k512, x1);
  x2 = Fold512(x1, k512, x2);
  x3 = Fold512(x2, k512, x3);
  while (n >= 64) {
    x3 = Fold512(x3, k512, _mm512_loadu_si512(p));
    p += 64;
    n -= 64;
  }
  // Its four lanes in message order (through memory: GCC 12 warns inside the extract intrinsic).
  alignas(64) uint8_t lanes[64];
  _mm512_store_si512(lanes, x3);
  const auto lane = [&](int i) {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 16 * i));
  };
  __m128i a = lane(0);
  a = Fold128(a, k128, lane(1));
  a = Fold128(a, k128, lane(2));
  a = Fold128(a, k128, lane(3));
  while (n >= 16) {
    a = Fold128(a, k128, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    p += 16;
    n -= 16;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), a);
  return start - n;
}

bool DetectFold() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid(1, eax, ebx, ecx, edx);
  const bool osxsave = (ecx >> 27) & 1;
  const bool pclmul = (ecx >> 1) & 1;
  const bool sse41 = (ecx >> 19) & 1;
  if (!osxsave || !pclmul || !sse41) return false;
  // The OS saves the SSE, AVX and AVX-512 register state (XCR0 bits 1, 2, 5, 6, 7).
  uint32_t xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0xE6) != 0xE6) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool avx512f = (ebx >> 16) & 1;
  const bool avx512vl = (ebx >> 31) & 1;
  const bool vpclmulqdq = (ecx >> 10) & 1;
  return avx512f && avx512vl && vpclmulqdq;
}

#endif  // AOBJ_CRC_HAVE_FOLD

}  // namespace

bool CrcFoldAvailable() {
#if AOBJ_CRC_HAVE_FOLD
  static const bool available = DetectFold();
  return available;
#else
  return false;
#endif
}

size_t CrcFold(CrcFoldPoly poly, uint64_t raw_init, const void* data, size_t size,
               uint8_t out[16]) {
#if AOBJ_CRC_HAVE_FOLD
  if (size < kCrcFoldMinBytes || !CrcFoldAvailable()) return 0;
  const FoldKeys& keys = poly == CrcFoldPoly::kCrc32c ? kCrc32cKeys : kCrc64NvmeKeys;
  return FoldImpl(keys, raw_init, static_cast<const uint8_t*>(data), size, out);
#else
  (void)poly;
  (void)raw_init;
  (void)data;
  (void)size;
  (void)out;
  return 0;
#endif
}

}  // namespace aobj::checksum_internal
