// The names every store of aobj refuses (store/store_rules.h): one rule for MemoryStore,
// FileStore, their multipart manager and RadosStore, which each used to carry a copy.
#include "store/store_rules.h"

#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

TEST(StoreRulesTest, BucketsThatCannotBeOnePathComponentAreRefused) {
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
                          std::string("a\0b", 3)}) {
    const absl::Status s = CheckStoreBucket(bad);
    EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kInvalidArgument) << "bucket of " << bad.size();
    EXPECT_EQ(s.message(), "invalid bucket name");
  }
  EXPECT_TRUE(CheckStoreBucket("photos").ok());
  EXPECT_TRUE(CheckStoreBucket(".hidden").ok());  // only a store that reserves them refuses
  EXPECT_EQ(ErrorCodeOf(CheckStoreBucket(".multipart", {.reserve_dot_names = true})),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(CheckStoreBucket("a.b", {.reserve_dot_names = true}).ok());
}

TEST(StoreRulesTest, KeysAreNonEmptyAndWithinWhatTheStoreHolds) {
  EXPECT_TRUE(CheckStoreKey("b", "k").ok());
  EXPECT_EQ(ErrorCodeOf(CheckStoreKey("b", "")), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(CheckStoreKey("", "k")), ErrorCode::kInvalidArgument);  // bucket first
  const StoreNameRules rules{.max_key_bytes = 8};
  EXPECT_TRUE(CheckStoreKey("b", std::string(8, 'k'), rules).ok());
  const absl::Status over = CheckStoreKey("b", std::string(9, 'k'), rules);
  EXPECT_EQ(ErrorCodeOf(over), ErrorCode::kInvalidArgument);
  EXPECT_NE(over.message().find("at most 8"), absl::string_view::npos) << over;
}

TEST(StoreRulesTest, AWriterCommitsOnlyWhatWasAnnouncedAndWritten) {
  EXPECT_TRUE(CheckWriteComplete(10, 10, 10, "object").ok());
  const absl::Status short_write = CheckWriteComplete(9, 10, 10, "part");
  EXPECT_EQ(ErrorCodeOf(short_write), ErrorCode::kInvalidArgument);
  EXPECT_EQ(short_write.message(), "only 9 of 10 part bytes were written");
  const absl::Status other_size = CheckWriteComplete(10, 10, 11, "object");
  EXPECT_EQ(ErrorCodeOf(other_size), ErrorCode::kInvalidArgument);
  EXPECT_NE(other_size.message().find("size 11"), absl::string_view::npos) << other_size;
}

}  // namespace
}  // namespace aobj
