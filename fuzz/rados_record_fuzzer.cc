// RadosStore's records as read back from a RADOS pool (src/store_rados/rados_format.h): octets
// another gateway wrote, or a damaged omap value. Never crash; whatever decodes encodes again to
// the same octets (one encoding per record), and a decoded head's segments add up to its size.
// AOBJ_FUZZ_COVERS: src/store_rados/rados_format.cc
#include <cstdint>
#include <string>

#include "aobj/status.h"
#include "fuzz_util.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "store_rados/rados_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace rf = aobj::rados_format;
  if (size == 0) return 0;
  const std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto storage_error = [](const absl::Status& s) {
    return aobj::ErrorCodeOf(s) == aobj::ErrorCode::kStorageError;
  };
  switch (data[0] % 7) {
    case 0:
      if (auto h = rf::DecodeHead(in); h.ok()) {
        uint64_t sum = 0;
        for (const rf::Segment& s : h->segments) sum += s.size;
        AOBJ_FUZZ_CHECK(sum == h->info.size);
        AOBJ_FUZZ_CHECK(rf::EncodeHead(*h) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(h.status()));
      }
      break;
    case 1:
      if (auto b = rf::DecodeBucket(in); b.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodeBucket(*b) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(b.status()));
      }
      break;
    case 2:
      if (auto g = rf::DecodeGcIntent(in); g.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodeGcIntent(*g) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(g.status()));
      }
      break;
    case 3:
      if (auto u = rf::DecodeUpload(in); u.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodeUpload(*u) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(u.status()));
      }
      break;
    case 4:
      if (auto p = rf::DecodePart(in); p.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodePart(*p) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(p.status()));
      }
      break;
    case 5:
      if (auto s = rf::DecodeUploadState(in); s.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodeUploadState(*s) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(s.status()));
      }
      break;
    default:
      // Keys: decoding then encoding gives the octets back; encoding never holds NUL or the
      // upload mark.
      if (auto k = rf::DecodeKey(in); k.ok()) {
        AOBJ_FUZZ_CHECK(rf::EncodeKey(*k) == in);
      } else {
        AOBJ_FUZZ_CHECK(storage_error(k.status()));
      }
      const std::string e = rf::EncodeKey(in);
      AOBJ_FUZZ_CHECK(e.find('\0') == std::string::npos);
      AOBJ_FUZZ_CHECK(e.find(rf::kMark) == std::string::npos);
      AOBJ_FUZZ_CHECK(*rf::DecodeKey(e) == in);
      break;
  }
  return 0;
}
