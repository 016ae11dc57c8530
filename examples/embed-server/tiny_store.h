// TinyStore: a vendor's own ObjectStore, the extension point of include/aobj/store.h. Objects
// live in a map of immutable snapshots under one mutex; enough for the store test kit.
#ifndef EMBED_SERVER_TINY_STORE_H_
#define EMBED_SERVER_TINY_STORE_H_

#include <memory>

#include "aobj/store.h"

std::unique_ptr<aobj::ObjectStore> NewTinyStore();

#endif  // EMBED_SERVER_TINY_STORE_H_
