// S3 object semantics over AOBJ/1 (issue 4; spec sections 9.8 to 9.14), end to end: the client
// library against a separate aobj-server process over UCX on loopback, both stores. S3's edge
// cases: empty objects, special keys, pagination boundaries, nested delimiters, overlapping and
// unsatisfiable ranges, conditional requests and their races, batch deletes, server-side copies.
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

constexpr char kBucket[] = "test-bucket";

std::string Pattern(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  std::mt19937_64 rng(seed);
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

std::string Md5Etag(const std::string& content) {
  Md5 md5;
  md5.Update(content.data(), content.size());
  return absl::StrCat("\"", HexEncode(md5.Finish()), "\"");
}

#define EXPECT_CODE(expr, code)                                                       \
  do {                                                                                \
    const absl::Status expect_status = (expr);                                        \
    EXPECT_EQ(GetErrorInfo(ErrorCodeOf(expect_status)).name, GetErrorInfo(code).name) \
        << expect_status;                                                             \
  } while (0)

class S3SemanticsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), GetParam());
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }

  std::unique_ptr<Client> Connect(bool allow_inline = true) {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    o.allow_inline = allow_inline;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  absl::StatusOr<TransferResult> PutString(const std::string& key, const std::string& content,
                                           const PutOptions& options = {},
                                           Client* client = nullptr) {
    Client& c = client ? *client : *client_;
    auto buf = c.AllocateBuffer(std::max<size_t>(content.size(), 1));
    if (!buf.ok()) return buf.status();
    if (!content.empty()) std::memcpy((*buf)->data(), content.data(), content.size());
    return c.Put(kBucket, key, **buf, content.size(), options);
  }

  // GETs into a fresh buffer; returns the bytes moved.
  absl::StatusOr<std::string> GetString(const std::string& key, const GetOptions& options = {},
                                        TransferResult* result = nullptr, Client* client = nullptr,
                                        size_t capacity = 0) {
    Client& c = client ? *client : *client_;
    if (capacity == 0) {
      auto head = c.Head(kBucket, key);
      if (!head.ok()) return head.status();
      capacity = std::max<size_t>(head->size, 1);
    }
    auto buf = c.AllocateBuffer(capacity);
    if (!buf.ok()) return buf.status();
    auto got = c.Get(kBucket, key, **buf, options);
    if (!got.ok()) return got.status();
    if (result) *result = *got;
    return std::string(reinterpret_cast<const char*>((*buf)->data()), got->bytes_transferred);
  }

  std::vector<std::string> Keys(const ObjectListing& l) {
    std::vector<std::string> out;
    for (const ObjectSummary& o : l.objects) out.push_back(o.key);
    return out;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

// ---- buckets (AOBJ-OBJ-110, AOBJ-OBJ-111) -----------------------------------------------------

TEST_P(S3SemanticsTest, ListBucketsInNameOrderWithCreationTimes) {
  const int64_t before = absl::ToUnixMillis(absl::Now());
  for (const char* b : {"zz-last", "aa-first", "mm.middle"})
    ASSERT_TRUE(client_->CreateBucket(b).ok());
  auto buckets = client_->ListBuckets();
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  std::vector<std::string> names;
  for (const BucketSummary& b : *buckets) {
    names.push_back(b.name);
    if (b.name != kBucket) {
      EXPECT_GE(b.creation_time_ms, before - 2000) << b.name;
      EXPECT_LE(b.creation_time_ms, absl::ToUnixMillis(absl::Now()) + 2000) << b.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"aa-first", "mm.middle", "test-bucket", "zz-last"}));
  ASSERT_TRUE(client_->DeleteBucket("mm.middle").ok());
  buckets = client_->ListBuckets();
  ASSERT_TRUE(buckets.ok());
  EXPECT_EQ(buckets->size(), 3u);
}

// ---- ListObjectsV2 (AOBJ-OBJ-100..109) ------------------------------------------------------

TEST_P(S3SemanticsTest, ListingOfAnEmptyBucketAndAMissingOne) {
  auto page = client_->ListObjects(kBucket, {});
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->objects.empty());
  EXPECT_TRUE(page->common_prefixes.empty());
  EXPECT_FALSE(page->is_truncated);
  EXPECT_CODE(client_->ListObjects("no-such-bucket", {}).status(), ErrorCode::kNoSuchBucket);
}

TEST_P(S3SemanticsTest, SpecialKeysListInByteOrderAndRoundTrip) {
  std::string long_key(1024, 'x');
  const std::vector<std::string> keys = {"a b",
                                         "a+b",
                                         "a%20b",
                                         "a/b",
                                         "a//b",
                                         "/lead",
                                         "trail/",
                                         "dot/./dot",
                                         "../up",
                                         "tab\there",
                                         "new\nline",
                                         "\xC3\xA4",
                                         "\xE6\x97\xA5\xE6\x9C\xAC",
                                         "\xF0\x9F\x99\x82",
                                         "Upper",
                                         "lower",
                                         "\x7F",
                                         long_key,
                                         "empty-object"};
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string content = keys[i] == "empty-object" ? "" : Pattern(i, 10 + i);
    ASSERT_TRUE(PutString(keys[i], content).ok()) << i;
  }
  auto all = client_->ListAllObjects(kBucket, {});
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());  // std::string: unsigned octet order
  EXPECT_EQ(Keys(*all), sorted);
  for (const ObjectSummary& o : all->objects) {
    const std::string content =
        o.key == "empty-object"
            ? ""
            : Pattern(std::find(keys.begin(), keys.end(), o.key) - keys.begin(),
                      10 + (std::find(keys.begin(), keys.end(), o.key) - keys.begin()));
    EXPECT_EQ(o.size, content.size()) << o.key;
    EXPECT_EQ(o.etag, Md5Etag(content)) << o.key;
    auto got = GetString(o.key);
    ASSERT_TRUE(got.ok()) << o.key << ": " << got.status();
    EXPECT_EQ(*got, content) << o.key;
  }
}

TEST_P(S3SemanticsTest, DelimiterWithNestedPrefixes) {
  for (const char* k :
       {"readme", "photos/2023/jan/a.jpg", "photos/2023/feb/b.jpg", "photos/2024/c.jpg",
        "photos/index", "photos/", "videos/x.mp4", "photosynthesis"}) {
    ASSERT_TRUE(PutString(k, k).ok()) << k;
  }
  ListObjectsOptions o;
  o.delimiter = "/";
  auto top = client_->ListAllObjects(kBucket, o);
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(Keys(*top), (std::vector<std::string>{"photosynthesis", "readme"}));
  EXPECT_EQ(top->common_prefixes, (std::vector<std::string>{"photos/", "videos/"}));
  o.prefix = "photos/";
  auto photos = client_->ListAllObjects(kBucket, o);
  ASSERT_TRUE(photos.ok()) << photos.status();
  EXPECT_EQ(Keys(*photos), (std::vector<std::string>{"photos/", "photos/index"}));
  EXPECT_EQ(photos->common_prefixes, (std::vector<std::string>{"photos/2023/", "photos/2024/"}));
  o.prefix = "photos/2023/";
  auto y2023 = client_->ListAllObjects(kBucket, o);
  ASSERT_TRUE(y2023.ok()) << y2023.status();
  EXPECT_TRUE(y2023->objects.empty());
  EXPECT_EQ(y2023->common_prefixes,
            (std::vector<std::string>{"photos/2023/feb/", "photos/2023/jan/"}));
  // Paging one entry at a time gives the same entries, each once.
  o.prefix = "";
  o.max_keys = 1;
  std::vector<std::string> paged;
  for (int i = 0; i < 20; ++i) {
    auto page = client_->ListObjects(kBucket, o);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->objects.size() + page->common_prefixes.size(), 1u);
    paged.push_back(page->objects.empty() ? page->common_prefixes[0] : page->objects[0].key);
    if (!page->is_truncated) break;
    o.continuation_token = page->next_continuation_token;
  }
  EXPECT_EQ(paged, (std::vector<std::string>{"photos/", "photosynthesis", "readme", "videos/"}));
  // Without a delimiter, every key.
  auto flat = client_->ListAllObjects(kBucket, {});
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->objects.size(), 8u);
  EXPECT_TRUE(flat->common_prefixes.empty());
}

TEST_P(S3SemanticsTest, PaginationBoundaries) {
  constexpr int kKeys = 1001;
  {
    // 1001 empty objects, from a few clients at once.
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto c = Connect();
        for (int i = t; i < kKeys; i += 4) {
          if (!PutString(absl::StrCat("k", 10000 + i), "", {}, c.get()).ok()) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);
  }
  // Default page: 1000 of 1001, truncated; the next page holds the last one.
  auto first = client_->ListObjects(kBucket, {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->objects.size(), 1000u);
  EXPECT_TRUE(first->is_truncated);
  ListObjectsOptions o;
  o.continuation_token = first->next_continuation_token;
  auto second = client_->ListObjects(kBucket, o);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->objects.size(), 1u);
  EXPECT_EQ(second->objects[0].key, absl::StrCat("k", 10000 + kKeys - 1));
  EXPECT_FALSE(second->is_truncated);
  EXPECT_TRUE(second->next_continuation_token.empty());
  // max_keys exactly the number of keys under a prefix: one full page, not truncated.
  o = {};
  o.prefix = "k100";  // k10000..k10099: 100 keys
  o.max_keys = 100;
  auto exact = client_->ListObjects(kBucket, o);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->objects.size(), 100u);
  EXPECT_FALSE(exact->is_truncated);
  // max_keys 1000 with 1000 keys left after start_after: not truncated.
  o = {};
  o.start_after = "k10000";
  o.max_keys = 1000;
  auto tail = client_->ListObjects(kBucket, o);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(tail->objects.size(), 1000u);
  EXPECT_FALSE(tail->is_truncated);
  // max_keys 1: a thousand and one pages, every key once, in order.
  o = {};
  o.max_keys = 1;
  o.prefix = "k1000";  // k10000..k10009
  std::vector<std::string> one_by_one;
  for (;;) {
    auto page = client_->ListObjects(kBucket, o);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& obj : page->objects) one_by_one.push_back(obj.key);
    if (!page->is_truncated) break;
    o.continuation_token = page->next_continuation_token;
  }
  ASSERT_EQ(one_by_one.size(), 10u);
  EXPECT_TRUE(std::is_sorted(one_by_one.begin(), one_by_one.end()));
  // The helper pages through all of it.
  auto all = client_->ListAllObjects(kBucket, {});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->objects.size(), static_cast<size_t>(kKeys));
  // Batch delete of all 1001 (two requests of at most 1000).
  std::vector<std::string> keys;
  for (const auto& obj : all->objects) keys.push_back(obj.key);
  auto deleted = client_->DeleteObjects(kBucket, keys, /*quiet=*/true);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_TRUE(deleted->deleted.empty());
  EXPECT_TRUE(deleted->errors.empty());
  auto none = client_->ListObjects(kBucket, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->objects.empty());
}

// AOBJ-OBJ-104, AOBJ-OBJ-105, AOBJ-OBJ-107
TEST_P(S3SemanticsTest, HostileListingRequestsAreRefused) {
  ASSERT_TRUE(PutString("a", "1").ok());
  ASSERT_TRUE(PutString("b", "2").ok());
  ListObjectsOptions o;
  o.max_keys = 1001;
  EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidArgument);
  o.max_keys = 0xFFFFFFFFu;
  EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidArgument);
  o = {};
  o.prefix = std::string(1025, 'p');
  EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidArgument);
  o = {};
  o.delimiter = std::string(1025, '/');
  EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidArgument);
  // Tokens: garbage, empty-looking, flipped, and one from another listing.
  o = {};
  o.max_keys = 1;
  auto page = client_->ListObjects(kBucket, o);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_TRUE(page->is_truncated);
  const std::string token = page->next_continuation_token;
  for (std::string bad : {std::string("x"), std::string(2000, 'A'), std::string(40, '\0'),
                          token.substr(0, token.size() - 1), token + "x"}) {
    o.continuation_token = bad;
    EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidContinuationToken);
  }
  for (size_t i = 0; i < token.size(); ++i) {
    std::string flipped = token;
    flipped[i] ^= 0x20;
    o.continuation_token = flipped;
    SCOPED_TRACE(absl::StrCat("byte ", i));
    EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidContinuationToken);
  }
  o.continuation_token = token;
  o.prefix = "b";  // another listing
  EXPECT_CODE(client_->ListObjects(kBucket, o).status(), ErrorCode::kInvalidContinuationToken);
  o.prefix = "";
  auto rest = client_->ListObjects(kBucket, o);  // the genuine one still works
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_EQ(rest->objects.size(), 1u);
  EXPECT_EQ(rest->objects[0].key, "b");
  // The token wins over start_after (AOBJ-OBJ-108).
  o.start_after = "zzz";
  rest = client_->ListObjects(kBucket, o);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->objects.size(), 1u);
}

// ---- DeleteObjects (AOBJ-OBJ-140..144) -----------------------------------------------------

TEST_P(S3SemanticsTest, BatchDeleteWithMissingAndInvalidKeys) {
  ASSERT_TRUE(PutString("one", "1").ok());
  ASSERT_TRUE(PutString("two", "2").ok());
  const std::string too_long(1025, 'k');
  auto result = client_->DeleteObjects(kBucket, {"one", "missing", too_long, "two", "one"}, false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->deleted, (std::vector<std::string>{"one", "missing", "two", "one"}));
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].first, std::string(1024, 'k'));  // echoed, cut to 1024 octets
  EXPECT_CODE(result->errors[0].second, ErrorCode::kKeyTooLong);
  EXPECT_CODE(client_->Head(kBucket, "one").status(), ErrorCode::kNoSuchKey);
  EXPECT_CODE(client_->Head(kBucket, "two").status(), ErrorCode::kNoSuchKey);
  // Quiet mode reports failures only.
  ASSERT_TRUE(PutString("three", "3").ok());
  result = client_->DeleteObjects(kBucket, {"three", ""}, true);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->deleted.empty());
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_CODE(result->errors[0].second, ErrorCode::kInvalidArgument);
  EXPECT_CODE(client_->Head(kBucket, "three").status(), ErrorCode::kNoSuchKey);
  EXPECT_CODE(client_->DeleteObjects("no-such-bucket", {"k"}, false).status(),
              ErrorCode::kNoSuchBucket);
  // No keys at all is malformed (the client sends no request for an empty list; see hostile).
  auto empty = client_->DeleteObjects(kBucket, {}, false);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->deleted.empty());
}

// ---- CopyObject (AOBJ-OBJ-150..157) --------------------------------------------------------

TEST_P(S3SemanticsTest, CopyKeepsOrReplacesMetadata) {
  PutOptions po;
  po.content_type = "text/plain";
  po.user_metadata = {{"Owner", "alice"}, {"purpose", "test"}};
  const std::string content = Pattern(1, 20000);
  auto put = PutString("src", content, po);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->info.user_metadata,
            (std::map<std::string, std::string>{{"owner", "alice"}, {"purpose", "test"}}));
  ASSERT_TRUE(client_->CreateBucket("other-bucket").ok());

  auto copied = client_->Copy(kBucket, "src", "other-bucket", "dst", {});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->etag, put->info.etag);
  EXPECT_EQ(copied->size, content.size());
  EXPECT_EQ(copied->content_type, "text/plain");
  EXPECT_EQ(copied->user_metadata, put->info.user_metadata);
  EXPECT_GE(copied->last_modified_ms, put->info.last_modified_ms);
  auto buf = client_->AllocateBuffer(content.size());
  ASSERT_TRUE(buf.ok());
  auto got = client_->Get("other-bucket", "dst", **buf);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::string(reinterpret_cast<char*>((*buf)->data()), content.size()), content);

  CopyOptions replace;
  replace.replace_metadata = true;
  replace.content_type = "application/json";
  replace.user_metadata = {{"new", "yes"}};
  copied = client_->Copy(kBucket, "src", kBucket, "src", replace);  // onto itself, REPLACE
  ASSERT_TRUE(copied.ok()) << copied.status();
  auto head = client_->Head(kBucket, "src");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->content_type, "application/json");
  EXPECT_EQ(head->user_metadata, (std::map<std::string, std::string>{{"new", "yes"}}));
  EXPECT_EQ(head->etag, put->info.etag);
  // Onto itself without REPLACE: S3's InvalidRequest.
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "src", {}).status(),
              ErrorCode::kInvalidRequest);
  // Attributes without REPLACE would be dropped silently: refused.
  CopyOptions sloppy;
  sloppy.content_type = "x/y";
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "dst2", sloppy).status(),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(client_->Copy(kBucket, "absent", kBucket, "dst3", {}).status(),
              ErrorCode::kNoSuchKey);
  EXPECT_CODE(client_->Copy("no-such-bucket", "src", kBucket, "dst3", {}).status(),
              ErrorCode::kNoSuchBucket);
  EXPECT_CODE(client_->Copy(kBucket, "src", "no-such-bucket", "dst3", {}).status(),
              ErrorCode::kNoSuchBucket);
}

TEST_P(S3SemanticsTest, CopyOfLargeAndEmptyObjects) {
  const std::string big = Pattern(2, (size_t{20} << 20) + 13);  // several staging chunks
  ASSERT_TRUE(PutString("big", big).ok());
  auto copied = client_->Copy(kBucket, "big", kBucket, "big-copy", {});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->etag, Md5Etag(big));
  auto got = GetString("big-copy");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == big);
  ASSERT_TRUE(PutString("empty", "").ok());
  copied = client_->Copy(kBucket, "empty", kBucket, "empty-copy", {});
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->size, 0u);
  EXPECT_EQ(copied->etag, Md5Etag(""));
}

TEST_P(S3SemanticsTest, CopyConditions) {
  auto put = PutString("src", "source");
  ASSERT_TRUE(put.ok());
  CopyOptions o;
  o.source_conditions.if_match = put->info.etag;
  EXPECT_TRUE(client_->Copy(kBucket, "src", kBucket, "d1", o).ok());
  o.source_conditions.if_match = Md5Etag("other");
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "d2", o).status(),
              ErrorCode::kPreconditionFailed);
  o = {};
  o.source_conditions.if_none_match = put->info.etag;  // 412 for a copy, not 304
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "d2", o).status(),
              ErrorCode::kPreconditionFailed);
  o = {};
  o.source_conditions.if_modified_since_ms = put->info.last_modified_ms;
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "d2", o).status(),
              ErrorCode::kPreconditionFailed);
  o = {};
  o.source_conditions.if_unmodified_since_ms = put->info.last_modified_ms;
  EXPECT_TRUE(client_->Copy(kBucket, "src", kBucket, "d2", o).ok());
  // Destination create-only.
  o = {};
  o.conditions.if_none_match = "*";
  EXPECT_CODE(client_->Copy(kBucket, "src", kBucket, "d1", o).status(),
              ErrorCode::kPreconditionFailed);
  EXPECT_TRUE(client_->Copy(kBucket, "src", kBucket, "d3", o).ok());
  EXPECT_CODE(client_->Head(kBucket, "d2").status(), ErrorCode::kOk);
}

// ---- user metadata (AOBJ-OBJ-120..123) -----------------------------------------------------

TEST_P(S3SemanticsTest, UserMetadataLimitsAndNames) {
  PutOptions po;
  po.user_metadata = {{"K", std::string(2047, 'v')}};  // exactly 2 KiB
  auto put = PutString("meta", "x", po);
  ASSERT_TRUE(put.ok()) << put.status();
  auto head = client_->Head(kBucket, "meta");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->user_metadata.at("k").size(), 2047u);
  auto listed = client_->ListObjects(kBucket, {});
  ASSERT_TRUE(listed.ok());
  po.user_metadata = {{"k", std::string(2048, 'v')}};
  EXPECT_CODE(PutString("meta", "y", po).status(), ErrorCode::kMetadataTooLarge);
  po.user_metadata = {{"bad name", "v"}};
  EXPECT_CODE(PutString("meta", "y", po).status(), ErrorCode::kInvalidArgument);
  po.user_metadata = {{"a", "x"}, {"A", "y"}};
  EXPECT_CODE(PutString("meta", "y", po).status(), ErrorCode::kInvalidArgument);
  po.user_metadata = {{"v", "line\nbreak"}};
  EXPECT_CODE(PutString("meta", "y", po).status(), ErrorCode::kInvalidArgument);
  // Nothing of the refused PUTs was stored.
  auto got = GetString("meta");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "x");
  // GET reports the metadata too.
  TransferResult r;
  ASSERT_TRUE(GetString("meta", {}, &r).ok());
  EXPECT_EQ(r.info.user_metadata.size(), 1u);
}

// ---- ranged GET (AOBJ-DAT-100..107) --------------------------------------------------------

TEST_P(S3SemanticsTest, RangesOfEveryFormAndPath) {
  const std::string content = Pattern(3, 300000);
  ASSERT_TRUE(PutString("obj", content).ok());
  struct Case {
    ByteRange range;
    size_t first;
    size_t length;
  };
  for (const Case& c : {
           Case{ByteRange::FirstLast(0, 0), 0, 1},
           Case{ByteRange::FirstLast(0, 99), 0, 100},                  // inline
           Case{ByteRange::FirstLast(1000, 200999), 1000, 200000},     // RMA
           Case{ByteRange::FirstLast(299990, 999999999), 299990, 10},  // clamped
           Case{ByteRange::From(299999), 299999, 1},
           Case{ByteRange::From(100), 100, 299900},
           Case{ByteRange::Suffix(5), 299995, 5},
           Case{ByteRange::Suffix(300000), 0, 300000},
           Case{ByteRange::Suffix(UINT64_MAX), 0, 300000},
       }) {
    SCOPED_TRACE(c.range.ToString());
    GetOptions o;
    o.range = c.range;
    TransferResult r;
    auto got = GetString("obj", o, &r, nullptr, 300000);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got == content.substr(c.first, c.length));
    ASSERT_TRUE(r.range.has_value());
    EXPECT_EQ(r.range->first, c.first);
    EXPECT_EQ(r.range->last, c.first + c.length - 1);
    EXPECT_EQ(r.range->complete_length, content.size());
    EXPECT_EQ(r.info.size, content.size());
    EXPECT_EQ(r.path, c.length <= 16384 ? TransferPath::kInline : TransferPath::kRma);
  }
  // Overlapping ranges read independently give consistent bytes.
  GetOptions a, b;
  a.range = ByteRange::FirstLast(100, 5000);
  b.range = ByteRange::FirstLast(4000, 9000);
  auto ga = GetString("obj", a, nullptr, nullptr, 10000);
  auto gb = GetString("obj", b, nullptr, nullptr, 10000);
  ASSERT_TRUE(ga.ok() && gb.ok());
  EXPECT_EQ(ga->substr(3900), gb->substr(0, 1001));
  // A whole GET reports no range.
  TransferResult whole;
  ASSERT_TRUE(GetString("obj", {}, &whole).ok());
  EXPECT_FALSE(whole.range.has_value());
}

TEST_P(S3SemanticsTest, RangesOverRmaWithoutInline) {
  auto c = Connect(/*allow_inline=*/false);
  const std::string content = Pattern(4, (size_t{9} << 20) + 77);  // crosses staging chunks
  ASSERT_TRUE(PutString("obj", content, {}, c.get()).ok());
  for (const ByteRange& range :
       {ByteRange::FirstLast(1, 1), ByteRange::From(8 << 20),
        ByteRange::FirstLast(3, (size_t{9} << 20) + 5), ByteRange::Suffix(17)}) {
    SCOPED_TRACE(range.ToString());
    GetOptions o;
    o.range = range;
    TransferResult r;
    auto got = GetString("obj", o, &r, c.get(), content.size());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(r.path, TransferPath::kRma);
    EXPECT_TRUE(*got == content.substr(r.range->first, r.range->last - r.range->first + 1));
  }
}

// AOBJ-DAT-102
TEST_P(S3SemanticsTest, UnsatisfiableRangesAndRangesOfEmptyObjects) {
  ASSERT_TRUE(PutString("obj", "0123456789").ok());
  ASSERT_TRUE(PutString("empty", "").ok());
  for (const ByteRange& range :
       {ByteRange::FirstLast(10, 10), ByteRange::From(10), ByteRange::From(UINT64_MAX),
        ByteRange::Suffix(0), ByteRange::FirstLast(UINT64_MAX, UINT64_MAX)}) {
    GetOptions o;
    o.range = range;
    SCOPED_TRACE(range.ToString());
    EXPECT_CODE(GetString("obj", o, nullptr, nullptr, 100).status(), ErrorCode::kInvalidRange);
  }
  for (const ByteRange& range :
       {ByteRange::FirstLast(0, 0), ByteRange::From(0), ByteRange::Suffix(1)}) {
    GetOptions o;
    o.range = range;
    SCOPED_TRACE(range.ToString());
    EXPECT_CODE(GetString("empty", o, nullptr, nullptr, 100).status(), ErrorCode::kInvalidRange);
  }
  // Malformed (first > last) is refused by the parser and by the server.
  EXPECT_CODE(ByteRange::Parse("bytes=5-4").status(), ErrorCode::kInvalidArgument);
  GetOptions o;
  o.range = ByteRange::FirstLast(5, 4);
  EXPECT_CODE(GetString("obj", o, nullptr, nullptr, 100).status(), ErrorCode::kInvalidArgument);
}

// Scatter-gather: a range into the middle of a buffer, and an object across several windows;
// octets outside the windows are untouched (AOBJ-MEM-016, AOBJ-DAT-107).
TEST_P(S3SemanticsTest, ScatterGatherIntoSlicesOfBuffers) {
  auto c = Connect(/*allow_inline=*/false);
  const std::string content = Pattern(5, 100000);
  ASSERT_TRUE(PutString("obj", content, {}, c.get()).ok());
  auto buf = c->AllocateBuffer(200000);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), 0xEE, 200000);
  GetOptions o;
  o.range = ByteRange::FirstLast(500, 60499);  // 60000 octets
  auto got = c->Get(kBucket, "obj", {{buf->get(), 70000, 60000}}, o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(std::memcmp((*buf)->data() + 70000, content.data() + 500, 60000), 0);
  for (size_t i : {size_t{0}, size_t{69999}, size_t{130000}, size_t{199999}}) {
    EXPECT_EQ((*buf)->data()[i], 0xEE) << i;
  }
  // The whole object into three windows of two buffers, out of address order.
  auto other = c->AllocateBuffer(50000);
  ASSERT_TRUE(other.ok());
  std::memset((*buf)->data(), 0, 200000);
  auto whole =
      c->Get(kBucket, "obj",
             {{buf->get(), 150000, 30000}, {other->get(), 0, 50000}, {buf->get(), 0, 40000}},
             GetOptions{});
  ASSERT_TRUE(whole.ok()) << whole.status();
  std::string joined(reinterpret_cast<char*>((*buf)->data()) + 150000, 30000);
  joined.append(reinterpret_cast<char*>((*other)->data()), 50000);
  joined.append(reinterpret_cast<char*>((*buf)->data()), 20000);
  EXPECT_TRUE(joined == content);
  EXPECT_EQ((*buf)->data()[20000], 0);  // past the body: untouched
  // A PUT gathered from slices.
  auto put = c->Put(kBucket, "gathered",
                    {{buf->get(), 150000, 30000}, {other->get(), 0, 50000}, {buf->get(), 0, 20000}},
                    PutOptions{});
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->info.etag, Md5Etag(content));
  // Windows outside their buffer are refused before anything is sent.
  EXPECT_CODE(c->Get(kBucket, "obj", {{buf->get(), 199999, 2}}, GetOptions{}).status(),
              ErrorCode::kInvalidArgument);
  EXPECT_CODE(c->Get(kBucket, "obj", {{buf->get(), 10, 100}}, GetOptions{}).status(),
              ErrorCode::kDescriptorTooSmall);
}

// Bodies of 16 MiB and more are checksummed in pieces on several threads (client.cc,
// ChecksumOf); here the pieces' boundaries fall inside windows of a scatter-gather GET and PUT,
// and a corrupted octet in any piece would fail the call with BAD_DIGEST.
TEST_P(S3SemanticsTest, LargeScatterGatherBodiesVerifyAcrossWindows) {
  auto c = Connect(/*allow_inline=*/false);
  constexpr size_t kMiB = 1 << 20;
  const std::string content = Pattern(9, 27 * kMiB + 5);
  auto a = c->AllocateBuffer(20 * kMiB);
  auto b = c->AllocateBuffer(12 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  // Windows of 5 MiB + 1, 11 MiB and the rest, out of address order.
  const std::vector<BufferSlice> windows = {
      {a->get(), 14 * kMiB, 5 * kMiB + 1}, {b->get(), 0, 11 * kMiB}, {a->get(), 0, 11 * kMiB + 4}};
  size_t at = 0;
  for (const BufferSlice& w : windows) {
    std::memcpy(w.buffer->data() + w.offset, content.data() + at, w.length);
    at += w.length;
  }
  ASSERT_EQ(at, content.size());
  auto put = c->Put(kBucket, "large-gathered", windows, PutOptions{});
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->info.etag, Md5Etag(content));
  for (const BufferSlice& w : windows) std::memset(w.buffer->data() + w.offset, 0, w.length);
  auto got = c->Get(kBucket, "large-gathered", windows, GetOptions{});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_transferred, content.size());
  std::string joined;
  for (const BufferSlice& w : windows) {
    joined.append(reinterpret_cast<char*>(w.buffer->data()) + w.offset, w.length);
  }
  EXPECT_TRUE(joined == content);
}

// ---- conditional requests (AOBJ-OBJ-130..137) ----------------------------------------------

TEST_P(S3SemanticsTest, ConditionalGetAndHead) {
  auto put = PutString("obj", "content");
  ASSERT_TRUE(put.ok());
  const std::string etag = put->info.etag;
  const int64_t modified = put->info.last_modified_ms;
  auto get = [&](Preconditions c) {
    GetOptions o;
    o.conditions = c;
    return GetString("obj", o, nullptr, nullptr, 100).status();
  };
  auto head = [&](Preconditions c) { return client_->Head(kBucket, "obj", c).status(); };
  Preconditions c;
  c.if_match = etag;
  EXPECT_CODE(get(c), ErrorCode::kOk);
  c.if_match = etag.substr(1, etag.size() - 2);  // unquoted
  EXPECT_CODE(get(c), ErrorCode::kOk);
  c.if_match = Md5Etag("other");
  EXPECT_CODE(get(c), ErrorCode::kPreconditionFailed);
  EXPECT_CODE(head(c), ErrorCode::kPreconditionFailed);
  c = {};
  c.if_none_match = etag;
  EXPECT_CODE(get(c), ErrorCode::kNotModified);
  EXPECT_CODE(head(c), ErrorCode::kNotModified);
  c.if_none_match = "*";
  EXPECT_CODE(get(c), ErrorCode::kNotModified);
  c = {};
  c.if_modified_since_ms = modified;
  EXPECT_CODE(get(c), ErrorCode::kNotModified);
  c.if_modified_since_ms = modified - 1;
  EXPECT_CODE(get(c), ErrorCode::kOk);
  c = {};
  c.if_unmodified_since_ms = modified - 1;
  EXPECT_CODE(get(c), ErrorCode::kPreconditionFailed);
  EXPECT_CODE(head(c), ErrorCode::kPreconditionFailed);
  // Preconditions are evaluated before the range (AOBJ-OBJ-137).
  GetOptions o;
  o.conditions.if_match = Md5Etag("other");
  o.range = ByteRange::From(1000);
  EXPECT_CODE(GetString("obj", o, nullptr, nullptr, 100).status(), ErrorCode::kPreconditionFailed);
  // Malformed entity tags are refused.
  c = {};
  c.if_match = "\"a\", \"b\"";
  EXPECT_CODE(get(c), ErrorCode::kInvalidArgument);
  // A missing key stays NoSuchKey whatever the conditions (AOBJ-OBJ-138).
  c = {};
  c.if_none_match = "*";
  EXPECT_CODE(client_->Head(kBucket, "absent", c).status(), ErrorCode::kNoSuchKey);
}

TEST_P(S3SemanticsTest, ConditionalPuts) {
  PutOptions create_only;
  create_only.conditions.if_none_match = "*";
  auto first = PutString("k", "first", create_only);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_CODE(PutString("k", "second", create_only).status(), ErrorCode::kPreconditionFailed);
  PutOptions if_match;
  if_match.conditions.if_match = first->info.etag;
  auto second = PutString("k", "second", if_match);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_CODE(PutString("k", "third", if_match).status(), ErrorCode::kPreconditionFailed);
  EXPECT_CODE(PutString("absent", "x", if_match).status(), ErrorCode::kNoSuchKey);
  // Other conditions are not allowed on a write (AOBJ-OBJ-133).
  PutOptions bad;
  bad.conditions.if_none_match = first->info.etag;
  EXPECT_CODE(PutString("k", "x", bad).status(), ErrorCode::kInvalidArgument);
  bad = {};
  bad.conditions.if_modified_since_ms = 0;
  EXPECT_CODE(PutString("k", "x", bad).status(), ErrorCode::kInvalidArgument);
  auto got = GetString("k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "second");
}

// Create-only PUTs of one key from many clients at once: exactly one wins, over both paths
// (AOBJ-OBJ-134).
TEST_P(S3SemanticsTest, CreateOnlyPutsRaceAndExactlyOneWins) {
  constexpr int kClients = 6;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Connect());
  for (int round = 0; round < 6; ++round) {
    const std::string key = absl::StrCat("race-", round);
    const size_t size = round % 2 ? 100 : 300000;  // inline and RMA
    std::atomic<int> won{0}, lost{0}, other{0};
    std::atomic<int> winner{-1};
    std::vector<std::thread> threads;
    for (int i = 0; i < kClients; ++i) {
      threads.emplace_back([&, i] {
        PutOptions o;
        o.conditions.if_none_match = "*";
        auto put = PutString(key, Pattern(100 + i, size), o, clients[i].get());
        if (put.ok()) {
          ++won;
          winner = i;
        } else if (ErrorCodeOf(put.status()) == ErrorCode::kPreconditionFailed) {
          ++lost;
        } else {
          ++other;
          ADD_FAILURE() << put.status();
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(won.load(), 1) << "round " << round;
    EXPECT_EQ(lost.load(), kClients - 1);
    EXPECT_EQ(other.load(), 0);
    auto got = GetString(key);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(*got == Pattern(100 + winner.load(), size)) << "round " << round;
  }
}

// Writers overwrite one key while readers GET it whole and in ranges: every read is exactly one
// complete version, never a mix (AOBJ-OBJ-010), and a chunked read pinned with If-Match either
// assembles one version or fails with PreconditionFailed.
TEST_P(S3SemanticsTest, ConcurrentOverwritesNeverMixVersions) {
  constexpr int kVersions = 12;
  constexpr size_t kSize = 600000;
  auto version = [](int v) {
    std::string s = Pattern(1000 + v, kSize);
    std::memcpy(s.data(), &v, sizeof(v));
    return s;
  };
  ASSERT_TRUE(PutString("hot", version(0)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, reads{0}, pinned_restarts{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    auto c = Connect();
    for (int v = 1; v < kVersions; ++v) {
      if (!PutString("hot", version(v), {}, c.get()).ok()) ++bad;
    }
    done = true;
  });
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto c = Connect(r != 0);
      auto buf = c->AllocateBuffer(kSize);
      if (!buf.ok()) {
        ++bad;
        return;
      }
      while (!done.load() || reads.load() < 6) {
        int v = 0;
        if (r < 2) {
          auto got = c->Get(kBucket, "hot", **buf);
          if (!got.ok()) {
            ++bad;
            continue;
          }
        } else {
          // Chunked: first chunk fixes the version, the rest are pinned with If-Match.
          GetOptions o;
          o.range = ByteRange::FirstLast(0, 99999);
          auto first = c->Get(kBucket, "hot", {{buf->get(), 0, 100000}}, o);
          if (!first.ok()) {
            ++bad;
            continue;
          }
          bool restarted = false;
          for (size_t off = 100000; off < kSize && !restarted; off += 100000) {
            GetOptions pinned;
            pinned.range = ByteRange::FirstLast(off, off + 99999);
            pinned.conditions.if_match = first->info.etag;
            auto part = c->Get(kBucket, "hot", {{buf->get(), off, 100000}}, pinned);
            if (!part.ok()) {
              if (ErrorCodeOf(part.status()) == ErrorCode::kPreconditionFailed) {
                restarted = true;
                ++pinned_restarts;
              } else {
                ++bad;
              }
            }
          }
          if (restarted) continue;
        }
        std::memcpy(&v, (*buf)->data(), sizeof(v));
        if (v < 0 || v >= kVersions || std::memcmp((*buf)->data(), version(v).data(), kSize) != 0) {
          ++bad;
        }
        ++reads;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(reads.load(), 6);
}

INSTANTIATE_TEST_SUITE_P(Stores, S3SemanticsTest, ::testing::Values("memory", "fs"));

}  // namespace
}  // namespace aobj
