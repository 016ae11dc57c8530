// Runs the ObjectStore conformance kit against the two reference stores.
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/status/statusor.h"
#include "aobj/store.h"
#include "gtest/gtest.h"
#include "store/store_test_kit.h"

namespace aobj {
namespace {

// A FileStore in a fresh scratch directory that is removed with the store.
class ScratchFileStore final : public ObjectStore {
 public:
  ScratchFileStore(std::unique_ptr<ObjectStore> inner, std::string dir)
      : inner_(std::move(inner)), dir_(std::move(dir)) {}
  ~ScratchFileStore() override {
    inner_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  absl::Status CreateBucket(std::string_view b) override { return inner_->CreateBucket(b); }
  absl::Status DeleteBucket(std::string_view b) override { return inner_->DeleteBucket(b); }
  absl::Status HeadBucket(std::string_view b) override { return inner_->HeadBucket(b); }
  using ObjectStore::BeginPut;
  absl::StatusOr<std::unique_ptr<ObjectWriter>> BeginPut(std::string_view b, std::string_view k,
                                                         uint64_t size,
                                                         const WriteOptions& options) override {
    return inner_->BeginPut(b, k, size, options);
  }
  absl::StatusOr<std::unique_ptr<ObjectReader>> OpenRead(std::string_view b,
                                                         std::string_view k) override {
    return inner_->OpenRead(b, k);
  }
  absl::StatusOr<ObjectInfo> Head(std::string_view b, std::string_view k) override {
    return inner_->Head(b, k);
  }
  absl::Status Delete(std::string_view b, std::string_view k) override {
    return inner_->Delete(b, k);
  }
  absl::StatusOr<std::vector<ObjectSummary>> ListObjects(std::string_view b,
                                                         std::string_view prefix,
                                                         std::string_view start_after,
                                                         size_t limit) override {
    return inner_->ListObjects(b, prefix, start_after, limit);
  }
  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    return inner_->ListBuckets();
  }

 private:
  std::unique_ptr<ObjectStore> inner_;
  const std::string dir_;
};

std::unique_ptr<ObjectStore> MakeScratchFileStore() {
  std::string templ = ::testing::TempDir() + "aobj_store_XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ;
    return nullptr;
  }
  // A subdirectory, so that OpenFileStore also creates its root.
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = OpenFileStore(templ + "/root");
  if (!store.ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  return std::make_unique<ScratchFileStore>(*std::move(store), templ);
}

INSTANTIATE_TEST_SUITE_P(ReferenceStores, ObjectStoreConformanceTest,
                         ::testing::Values(ObjectStoreFactory{"MemoryStore",
                                                              [] { return NewMemoryStore(); }},
                                           ObjectStoreFactory{"FileStore", MakeScratchFileStore}),
                         ObjectStoreFactoryName);

}  // namespace
}  // namespace aobj
