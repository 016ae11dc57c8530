// Packed rkeys from a peer (spec AOBJ-MEM-003/004): CheckPackedRkey never reads past the blob,
// and whatever it accepts has a complete structure, walked here independently.
// AOBJ_FUZZ_COVERS: src/transport/rkey_check.cc
#include <bit>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "transport/rkey_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy to an exact-size heap buffer so ASan sees any read past the end.
  const std::string blob(reinterpret_cast<const char*>(data), size);
  if (!aobj::CheckPackedRkey(blob, 1024).ok()) return 0;
  AOBJ_FUZZ_CHECK(size >= 9 && size <= 1024);
  uint64_t md_map = 0;
  for (int i = 0; i < 8; ++i) md_map |= static_cast<uint64_t>(data[i]) << (8 * i);
  size_t off = 9;
  for (int i = 0; i < std::popcount(md_map); ++i) {
    AOBJ_FUZZ_CHECK(off < size);
    off += 1 + data[off];
    AOBJ_FUZZ_CHECK(off <= size);
  }
  AOBJ_FUZZ_CHECK(size - off <= aobj::kMaxRkeyTrailer);
  // AOBJ-MEM-012: the declared-segment bound reads only inside the entries, for any window,
  // and a window of nothing at an address it accepts with a length is accepted too.
  uint64_t address = 0, length = 0;
  for (size_t i = 0; i < 8 && i < size; ++i) address = address << 8 | data[size - 1 - i];
  for (size_t i = 0; i < 8 && 8 + i < size; ++i) length = length << 8 | data[size - 9 - i];
  if (aobj::CheckWindowInDeclaredSegments(blob, address, length).ok()) {
    AOBJ_FUZZ_CHECK(aobj::CheckWindowInDeclaredSegments(blob, address, 0).ok());
  }
  return 0;
}
