// Shared helpers for the fuzz targets: a crash with a message when an invariant breaks.
#ifndef AOBJ_FUZZ_FUZZ_UTIL_H_
#define AOBJ_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>

#define AOBJ_FUZZ_CHECK(cond)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                   \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

#endif  // AOBJ_FUZZ_FUZZ_UTIL_H_
