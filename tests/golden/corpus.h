// The fuzz targets seed from the golden images (fuzz/make_seeds.cc writes them into
// fuzz/corpus/<target>/): one check that a seed holds exactly its image, for every golden test.
#ifndef AOBJ_TESTS_GOLDEN_CORPUS_H_
#define AOBJ_TESTS_GOLDEN_CORPUS_H_

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace aobj::golden {

// Success when fuzz/corpus/<target>/<seed> holds exactly `image`. Needs AOBJ_SOURCE_DIR, which
// tests/CMakeLists.txt defines for the binaries that use it.
inline testing::AssertionResult CorpusSeedHolds(const std::string& target, const std::string& seed,
                                                const std::string& image) {
  const std::string path = std::string(AOBJ_SOURCE_DIR) + "/fuzz/corpus/" + target + "/" + seed;
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) {
    return testing::AssertionFailure()
           << path << " is missing: run aobj_fuzz_seeds (fuzz/README.md)";
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (bytes.str() != image) {
    return testing::AssertionFailure()
           << path << " differs from its golden image (" << bytes.str().size() << " octets, "
           << image.size() << " expected): run aobj_fuzz_seeds (fuzz/README.md)";
  }
  return testing::AssertionSuccess();
}

}  // namespace aobj::golden

#endif  // AOBJ_TESTS_GOLDEN_CORPUS_H_
