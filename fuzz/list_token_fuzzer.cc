// Listing (spec 9.12): continuation tokens are hostile input. A token that decodes is exactly one
// the server encoded (canonical: re-encoding gives the same octets); a genuine token with any one
// octet changed is refused. The ListObjectsV2 walk over an arbitrary key set returns sorted,
// bounded pages that resume where they stopped.
// AOBJ_FUZZ_COVERS: src/wire/listing.cc
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "aobj/status.h"
#include "fuzz_util.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "wire/listing.h"
#include "wire/names.h"

namespace {

constexpr char kKey[] = "fuzz-token-key";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const std::string scope =
      aobj::ListScope("ListObjectsV2", "bucket", fdp.ConsumeRandomLengthString(8),
                      fdp.ConsumeRandomLengthString(3));
  // 1. Arbitrary octets as a token.
  const std::string token = fdp.ConsumeRandomLengthString(1200);
  if (auto p = aobj::DecodeListToken(kKey, scope, token); p.ok()) {
    AOBJ_FUZZ_CHECK(aobj::EncodeListToken(kKey, scope, *p) == token);
  } else {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(p.status()) == aobj::ErrorCode::kInvalidContinuationToken);
  }
  // 2. A genuine token, then one octet changed.
  aobj::ListPosition pos;
  pos.kind = fdp.ConsumeBool() ? aobj::ListPosition::Kind::kAfterPrefix
                               : aobj::ListPosition::Kind::kAfterKey;
  pos.position = fdp.ConsumeRandomLengthString(40);
  const std::string good = aobj::EncodeListToken(kKey, scope, pos);
  auto back = aobj::DecodeListToken(kKey, scope, good);
  AOBJ_FUZZ_CHECK(back.ok() == aobj::IsValidUtf8(pos.position));
  if (back.ok()) AOBJ_FUZZ_CHECK(back->position == pos.position && back->kind == pos.kind);
  std::string bad = good;
  const size_t at = fdp.ConsumeIntegralInRange<size_t>(0, bad.size() - 1);
  const uint8_t flip = fdp.ConsumeIntegralInRange<uint8_t>(1, 255);
  bad[at] = static_cast<char>(bad[at] ^ flip);
  AOBJ_FUZZ_CHECK(!aobj::DecodeListToken(kKey, scope, bad).ok());

  // 3. The walk over a key set drawn from a small alphabet.
  std::set<std::string> keys;
  const int n = fdp.ConsumeIntegralInRange<int>(0, 60);
  for (int i = 0; i < n; ++i) {
    std::string k;
    const int len = fdp.ConsumeIntegralInRange<int>(1, 6);
    for (int j = 0; j < len; ++j) k.push_back("ab/-"[fdp.ConsumeIntegralInRange<int>(0, 3)]);
    keys.insert(k);
  }
  const std::string prefix = fdp.ConsumeBool() ? "a" : "";
  const std::string delimiter = fdp.ConsumeBool() ? "/" : "";
  const uint32_t max_keys = fdp.ConsumeIntegralInRange<uint32_t>(1, 7);
  aobj::ObjectScan scan = [&](absl::string_view after,
                              size_t limit) -> absl::StatusOr<std::vector<aobj::ObjectSummary>> {
    std::vector<aobj::ObjectSummary> out;
    for (const std::string& k : keys) {
      if (out.size() >= limit) break;
      if (absl::string_view(k) > after && absl::StartsWith(k, prefix)) out.push_back({k, 0, "", 0});
    }
    return out;
  };
  aobj::ListPosition start;
  std::string last;
  for (int page_no = 0; page_no < 200; ++page_no) {
    auto page = aobj::ListObjectsPage(scan, prefix, delimiter, start, max_keys);
    AOBJ_FUZZ_CHECK(page.ok());
    std::vector<std::string> entries;
    for (const auto& o : page->objects) entries.push_back(o.key);
    for (const auto& p : page->common_prefixes) entries.push_back(p);
    std::sort(entries.begin(), entries.end());
    AOBJ_FUZZ_CHECK(entries.size() <= max_keys);
    AOBJ_FUZZ_CHECK(std::adjacent_find(entries.begin(), entries.end()) == entries.end());
    for (const std::string& e : entries) {
      AOBJ_FUZZ_CHECK(absl::StartsWith(e, prefix));
      AOBJ_FUZZ_CHECK(last.empty() || e > last);  // pages never repeat or go back
      last = e;
    }
    if (!page->truncated) break;
    AOBJ_FUZZ_CHECK(entries.size() == max_keys);
    start = page->next;
  }
  return 0;
}
