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

}  // namespace aobj::checksum_internal

#endif  // AOBJ_WIRE_CHECKSUM_INTERNAL_H_
