// Compiled by ctest `layering_compiler_view` with the store layer's include view
// (build/layers/aobj_store, CMakeLists.txt aobj_layer): the store layer links no server, so this
// include must not resolve. The test passes only on the compiler's "not found" for it.
#include "server/handler.h"
