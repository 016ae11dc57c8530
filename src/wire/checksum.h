// End-to-end checksums: CRC32C (Castagnoli) and CRC-64/NVME (spec "End-to-end checksums").
//
// Pure functions and a small incremental state; no I/O, no threads. The wire encoding of a
// checksum value is big-endian: 4 bytes for CRC32C, 8 bytes for CRC64NVME (AOBJ-DAT-021).
#ifndef AOBJ_WIRE_CHECKSUM_H_
#define AOBJ_WIRE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "aobj/types.h"

namespace aobj {

// CRC32C continuation: Crc32c(Crc32c(0, a), b) == Crc32c(0, a||b). Uses SSE4.2 when the CPU has
// it, a table otherwise. Check value: Crc32c(0, "123456789") == 0xE3069283.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

// CRC-64/NVME continuation, same convention. Check value for "123456789": 0xAE8B14860A799888.
uint64_t Crc64Nvme(uint64_t crc, const void* data, size_t size);

// The CRC of a||b from crc(a), crc(b) and the length of b (zlib's crc32_combine method: b's
// length in zero octets applied to crc(a) as a GF(2) matrix power). For checksumming the pieces
// of a body on several threads. O(log(size_b)) small matrix products.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);
uint64_t Crc64NvmeCombine(uint64_t crc_a, uint64_t crc_b, uint64_t size_b);

// Incremental checksum of one algorithm. Copyable (a plain value).
class Checksummer {
 public:
  explicit Checksummer(ChecksumAlgorithm algorithm) : algorithm_(algorithm) {}
  void Update(const void* data, size_t size);
  // As if the `next_size` octets that `next` (same algorithm) checksummed were passed to
  // Update() now.
  void Append(const Checksummer& next, uint64_t next_size);
  // The value in wire encoding (big-endian; empty for kNone).
  std::string Finish() const;
  ChecksumAlgorithm algorithm() const { return algorithm_; }

 private:
  ChecksumAlgorithm algorithm_;
  uint64_t state_ = 0;
};

// Wire size of a checksum value: 4, 8, or 0 for kNone.
size_t ChecksumSize(ChecksumAlgorithm algorithm);

// "CRC32C", "CRC64NVME", "NONE".
const char* ChecksumName(ChecksumAlgorithm algorithm);

}  // namespace aobj

#endif  // AOBJ_WIRE_CHECKSUM_H_
