// Bucket names and object keys (spec 9.2) against independent reference checks: the validators
// never crash, and agree with a straightforward re-implementation of the rules.
// AOBJ_FUZZ_COVERS: src/wire/names.cc
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "wire/names.h"

namespace {

// Unicode Table 3-7, byte by byte.
bool ReferenceUtf8(const std::string& s) {
  size_t i = 0;
  auto in = [&](size_t k, int lo, int hi) {
    return k < s.size() && static_cast<uint8_t>(s[k]) >= lo && static_cast<uint8_t>(s[k]) <= hi;
  };
  while (i < s.size()) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c <= 0x7F) { i += 1; continue; }
    if (c >= 0xC2 && c <= 0xDF && in(i + 1, 0x80, 0xBF)) { i += 2; continue; }
    if (c == 0xE0 && in(i + 1, 0xA0, 0xBF) && in(i + 2, 0x80, 0xBF)) { i += 3; continue; }
    if (((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) && in(i + 1, 0x80, 0xBF) &&
        in(i + 2, 0x80, 0xBF)) { i += 3; continue; }
    if (c == 0xED && in(i + 1, 0x80, 0x9F) && in(i + 2, 0x80, 0xBF)) { i += 3; continue; }
    if (c == 0xF0 && in(i + 1, 0x90, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) {
      i += 4; continue;
    }
    if (c >= 0xF1 && c <= 0xF3 && in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) &&
        in(i + 3, 0x80, 0xBF)) { i += 4; continue; }
    if (c == 0xF4 && in(i + 1, 0x80, 0x8F) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)) {
      i += 4; continue;
    }
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  AOBJ_FUZZ_CHECK(aobj::IsValidUtf8(s) == ReferenceUtf8(s));
  const bool key_ok = aobj::ValidateObjectKey(s).ok();
  AOBJ_FUZZ_CHECK(key_ok == (!s.empty() && s.size() <= 1024 && ReferenceUtf8(s)));
  if (aobj::ValidateBucketName(s).ok()) {
    AOBJ_FUZZ_CHECK(s.size() >= 3 && s.size() <= 63);
    for (char c : s) {
      AOBJ_FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-');
    }
    AOBJ_FUZZ_CHECK(s.find("..") == std::string::npos && s.find('/') == std::string::npos);
  }
  return 0;
}
