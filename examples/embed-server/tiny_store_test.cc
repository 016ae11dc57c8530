// Runs the aobj store test kit (the tests aobj's own stores pass) against TinyStore.
#include "aobj/testing/store_test_kit.h"
#include "tiny_store.h"

namespace aobj {
INSTANTIATE_TEST_SUITE_P(TinyStore, ObjectStoreConformanceTest,
                         ::testing::Values(ObjectStoreFactory{"TinyStore",
                                                              [] { return NewTinyStore(); }}),
                         ObjectStoreFactoryName);
}  // namespace aobj
