// Implementation entry points of checksum.h, exposed so tests can compare the CRC32C hardware
// and table paths on the same input. Not for use outside src/wire/ and tests/wire/.
//
// Same convention as the public functions: `crc` and the result are finalized values, so
// Crc32cTable(0, "123456789", 9) == 0xE3069283.
#ifndef AOBJ_WIRE_CHECKSUM_INTERNAL_H_
#define AOBJ_WIRE_CHECKSUM_INTERNAL_H_

#include <cstddef>
#include <cstdint>

namespace aobj::checksum_internal {

// Portable slicing-by-8 CRC32C.
uint32_t Crc32cTable(uint32_t crc, const void* data, size_t size);

// True when this CPU and build can run Crc32cHardware (x86-64 with SSE4.2).
bool Crc32cHardwareAvailable();

// CRC32C with the SSE4.2 crc32 instruction, three interleaved streams on large buffers.
// Precondition: Crc32cHardwareAvailable(); otherwise it falls back to Crc32cTable.
uint32_t Crc32cHardware(uint32_t crc, const void* data, size_t size);

// Portable slicing-by-8 CRC-64/NVME.
uint64_t Crc64NvmeTable(uint64_t crc, const void* data, size_t size);

// Folding by carry-less multiplication (crc_fold.cc): true when this CPU and build have AVX-512
// with VPCLMULQDQ and the OS saves their registers.
bool CrcFoldAvailable();

enum class CrcFoldPoly { kCrc32c, kCrc64Nvme };
inline constexpr size_t kCrcFoldMinBytes = 256;

// Unlike the functions above, this works on the raw register (init applied, no final xor).
// Folds the longest prefix of `data` whose length is a multiple of 16 (at least 256 octets)
// into 16 octets written to `out` and returns that prefix's length, such that the raw CRC of
// `data` from `raw_init` equals the raw CRC from a zero register of `out` followed by the rest
// of `data`. Returns 0 (and writes nothing) when folding is unavailable or `size` is below
// kCrcFoldMinBytes.
size_t CrcFold(CrcFoldPoly poly, uint64_t raw_init, const void* data, size_t size,
               uint8_t out[16]);

}  // namespace aobj::checksum_internal

#endif  // AOBJ_WIRE_CHECKSUM_INTERNAL_H_
