// The shared-memory window guard (spec AOBJ-MEM-012) over hostile maps text and windows: it never
// crashes, and whatever it accepts lies inside one shared System V mapping listed in the text.
// AOBJ_FUZZ_COVERS: src/transport/shm_guard.cc
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fuzz_util.h"
#include "transport/shm_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint64_t local = in.ConsumeIntegral<uint64_t>();
  const uint64_t length = in.ConsumeIntegral<uint64_t>();
  const uint64_t foreign_id = in.ConsumeIntegral<uint8_t>();
  const std::string maps = in.ConsumeRemainingBytesAsString();
  const absl::Status s = aobj::CheckForeignSharedWindowIn(
      maps, local, length, [&](uint64_t shmid) { return shmid == foreign_id; });
  if (!s.ok() || length == 0) return 0;
  AOBJ_FUZZ_CHECK(local + length > local);  // no wrap-around accepted
  bool inside = false;
  for (absl::string_view line : absl::StrSplit(maps, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 6 || !absl::StartsWith(f[5], "/SYSV")) continue;
    std::vector<absl::string_view> r = absl::StrSplit(f[0], '-');
    uint64_t lo, hi;
    if (r.size() == 2 && absl::SimpleHexAtoi(r[0], &lo) && absl::SimpleHexAtoi(r[1], &hi) &&
        local >= lo && local + length <= hi) {
      inside = true;
    }
  }
  AOBJ_FUZZ_CHECK(inside);
  return 0;
}
