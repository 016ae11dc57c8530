// Listing: continuation tokens as hostile input (AOBJ-OBJ-107) and the ListObjectsV2 walk with
// delimiters and pagination (AOBJ-OBJ-100..103), checked against a naive model.
#include "wire/listing.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

constexpr char kKey[] = "server-token-key-for-tests-32byte";

std::string Scope() { return ListScope("ListObjectsV2", "bucket", "photos/", "/"); }

TEST(ListTokenTest, RoundTripsBothKinds) {
  for (const ListPosition& p : {ListPosition{ListPosition::Kind::kAfterKey, "photos/2024/a.jpg"},
                                ListPosition{ListPosition::Kind::kAfterPrefix, "photos/2024/"},
                                ListPosition{ListPosition::Kind::kAfterKey, ""},
                                ListPosition{ListPosition::Kind::kAfterKey, std::string(1024, 'k')},
                                ListPosition{ListPosition::Kind::kAfterKey, "\xF0\x9F\x99\x82"}}) {
    const std::string token = EncodeListToken(kKey, Scope(), p);
    EXPECT_LE(token.size(), kMaxListTokenBytes);
    auto back = DecodeListToken(kKey, Scope(), token);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->kind, p.kind);
    EXPECT_EQ(back->position, p.position);
  }
}

TEST(ListTokenTest, DocumentedLayout) {
  const std::string token =
      EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterPrefix, "abc"});
  ASSERT_EQ(token.size(), 4u + 3u + 16u);
  EXPECT_EQ(token[0], 1);  // version
  EXPECT_EQ(token[1], 1);  // kind
  EXPECT_EQ(token[2], 3);  // length, little-endian
  EXPECT_EQ(token[3], 0);
  EXPECT_EQ(token.substr(4, 3), "abc");
}

// The whole token and its scope as golden images written from listing.h's table, the tag
// computed apart from the encoder (HMAC-SHA256 with the test key, cut to 16 octets).
TEST(ListTokenTest, GoldenTokenAndScope) {
  EXPECT_EQ(HexEncode(Scope()),
            "0d000000"                    // operation: length 13,
            "4c6973744f626a656374735632"  //   "ListObjectsV2"
            "06000000"                    // bucket: length 6,
            "6275636b6574"                //   "bucket"
            "07000000"                    // prefix: length 7,
            "70686f746f732f"              //   "photos/"
            "01000000"                    // delimiter: length 1,
            "2f");                        //   "/"
  const std::string token =
      EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterPrefix, "abc"});
  EXPECT_EQ(HexEncode(token),
            "01"                                  // version 1
            "01"                                  // kind 1: after the common prefix
            "0300"                                // position length 3
            "616263"                              // position "abc"
            "992b699107a7699e5ad7f43745b89be9");  // tag
  std::string golden;
  ASSERT_TRUE(
      HexDecode("0101030061626399"
                "2b699107a7699e5ad7f43745b89be9",
                &golden));
  absl::StatusOr<ListPosition> back = DecodeListToken(kKey, Scope(), golden);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, ListPosition::Kind::kAfterPrefix);
  EXPECT_EQ(back->position, "abc");
}

ErrorCode DecodeCode(absl::string_view token, absl::string_view scope = "",
                     absl::string_view key = kKey) {
  const std::string s = scope.empty() ? Scope() : std::string(scope);
  return ErrorCodeOf(DecodeListToken(key, s, token).status());
}

TEST(ListTokenTest, EveryBitFlipIsRejected) {
  const std::string good = EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterKey, "k/1"});
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] ^= static_cast<char>(1 << bit);
      EXPECT_EQ(DecodeCode(bad), ErrorCode::kInvalidContinuationToken) << i << "/" << bit;
    }
  }
}

TEST(ListTokenTest, TruncatedExtendedAndGarbageTokensAreRejected) {
  const std::string good = EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterKey, "key"});
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(DecodeCode(good.substr(0, n)), ErrorCode::kInvalidContinuationToken) << n;
  }
  EXPECT_EQ(DecodeCode(good + "x"), ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(std::string(kMaxListTokenBytes + 1, '\x01')),
            ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(std::string(1 << 20, '\0')), ErrorCode::kInvalidContinuationToken);
  // A length field claiming 0xFFFF bytes.
  std::string huge = good;
  huge[2] = '\xFF';
  huge[3] = '\xFF';
  EXPECT_EQ(DecodeCode(huge), ErrorCode::kInvalidContinuationToken);
  // Random garbage of every length around the valid ones.
  std::mt19937 rng(42);
  for (size_t n = 0; n < 1100; n += 7) {
    std::string junk(n, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    EXPECT_EQ(DecodeCode(junk), ErrorCode::kInvalidContinuationToken) << n;
  }
}

TEST(ListTokenTest, UnknownVersionOrKindIsRejectedEvenWithAValidTag) {
  // Hand-built with a correct tag: the structure check still refuses them.
  for (auto [version, kind] : {std::pair<int, int>{2, 0}, {0, 0}, {1, 2}, {1, 255}}) {
    std::string body;
    body.push_back(static_cast<char>(version));
    body.push_back(static_cast<char>(kind));
    body += std::string("\x01\x00", 2);
    body += "k";
    // Forge the tag the way the server computes it.
    const Sha256Digest mac = HmacSha256(kKey, absl::StrCat("aobj-list-token-v1", Scope(), body));
    const std::string token = body + std::string(reinterpret_cast<const char*>(mac.data()), 16);
    EXPECT_EQ(DecodeCode(token), ErrorCode::kInvalidContinuationToken) << version << "/" << kind;
  }
}

TEST(ListTokenTest, NonUtf8PositionIsRejectedEvenWithAValidTag) {
  const std::string token =
      EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterKey, "bad\xFF\xFE"});
  EXPECT_EQ(DecodeCode(token), ErrorCode::kInvalidContinuationToken);
}

TEST(ListTokenTest, TokenIsBoundToItsListingAndKey) {
  const std::string token = EncodeListToken(kKey, Scope(), {ListPosition::Kind::kAfterKey, "k"});
  EXPECT_EQ(DecodeCode(token, ListScope("ListObjectsV2", "other", "photos/", "/")),
            ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(token, ListScope("ListObjectsV2", "bucket", "photos", "/")),
            ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(token, ListScope("ListObjectsV2", "bucket", "photos/", "")),
            ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(token, ListScope("ListBuckets", "bucket", "photos/", "/")),
            ErrorCode::kInvalidContinuationToken);
  EXPECT_EQ(DecodeCode(token, "", "another server key"), ErrorCode::kInvalidContinuationToken);
  // Length prefixes keep field boundaries apart.
  EXPECT_NE(ListScope("L", "ab", "c", ""), ListScope("L", "a", "bc", ""));
}

// ---- ListObjectsPage against a model --------------------------------------------------------

class Model {
 public:
  explicit Model(std::vector<std::string> keys) : keys_(std::move(keys)) {
    std::sort(keys_.begin(), keys_.end());
  }

  ObjectScan Scan(absl::string_view prefix) {
    return
        [this, prefix = std::string(prefix)](
            absl::string_view after, size_t limit) -> absl::StatusOr<std::vector<ObjectSummary>> {
          ++scans_;
          std::vector<ObjectSummary> out;
          for (const std::string& k : keys_) {
            if (out.size() >= limit) break;
            if (absl::string_view(k) > after && absl::StartsWith(k, prefix)) {
              out.push_back({k, k.size(), "\"e\"", 0});
            }
          }
          read_ += out.size();  // what a store hands over (it seeks to `after`)
          return out;
        };
  }

  // The whole listing, computed directly: entries (keys and common prefixes) in order.
  std::vector<std::string> Expected(const std::string& prefix, const std::string& delimiter,
                                    const std::string& start_after) const {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const std::string& k : keys_) {
      if (!absl::StartsWith(k, prefix) || !(k > start_after)) continue;
      const size_t at = delimiter.empty() ? std::string::npos : k.find(delimiter, prefix.size());
      if (at != std::string::npos) {
        const std::string cp = k.substr(0, at + delimiter.size());
        if (seen.insert(cp).second) out.push_back("P:" + cp);
      } else {
        out.push_back("K:" + k);
      }
    }
    return out;
  }

  int scans_ = 0;
  size_t read_ = 0;

 private:
  std::vector<std::string> keys_;
};

// Pages through the listing; returns every entry in order, checking each page's shape.
std::vector<std::string> PageThrough(Model& model, const std::string& prefix,
                                     const std::string& delimiter, const std::string& start_after,
                                     uint32_t max_keys, int* pages = nullptr) {
  std::vector<std::string> all;
  ListPosition pos{ListPosition::Kind::kAfterKey, start_after};
  for (int page_no = 0;; ++page_no) {
    model.scans_ = 0;
    auto page = ListObjectsPage(model.Scan(prefix), prefix, delimiter, pos, max_keys);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) return all;
    EXPECT_LE(model.scans_, static_cast<int>(max_keys) + 1);  // bounded work
    const size_t n = page->objects.size() + page->common_prefixes.size();
    EXPECT_LE(n, max_keys);
    if (page->truncated) {
      EXPECT_EQ(n, max_keys) << "a truncated page is full";
    }
    // Merge the two lists back into byte order.
    std::vector<std::string> entries;
    for (const auto& o : page->objects) entries.push_back("K:" + o.key);
    for (const auto& p : page->common_prefixes) entries.push_back("P:" + p);
    std::sort(entries.begin(), entries.end(),
              [](const std::string& a, const std::string& b) { return a.substr(2) < b.substr(2); });
    all.insert(all.end(), entries.begin(), entries.end());
    if (pages) *pages = page_no + 1;
    if (!page->truncated) return all;
    // Through the token, as a client would.
    const std::string token = EncodeListToken(kKey, "scope", page->next);
    auto next = DecodeListToken(kKey, "scope", token);
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok()) return all;
    pos = *next;
    if (page_no > 100000) {
      ADD_FAILURE() << "no end";
      return all;
    }
  }
}

TEST(ListObjectsPageTest, DelimiterGroupsNestedPrefixes) {
  Model model({"a.txt", "photos/2023/x.jpg", "photos/2024/a/1.jpg", "photos/2024/b.jpg",
               "photos/readme", "photos/", "photosX", "z"});
  EXPECT_EQ(PageThrough(model, "", "/", "", 1000),
            (std::vector<std::string>{"K:a.txt", "P:photos/", "K:photosX", "K:z"}));
  EXPECT_EQ(PageThrough(model, "photos/", "/", "", 1000),
            (std::vector<std::string>{"K:photos/", "P:photos/2023/", "P:photos/2024/",
                                      "K:photos/readme"}));
  EXPECT_EQ(PageThrough(model, "photos/2024/", "/", "", 1000),
            (std::vector<std::string>{"P:photos/2024/a/", "K:photos/2024/b.jpg"}));
  // A delimiter of several characters, and one that is not '/'.
  EXPECT_EQ(PageThrough(model, "", "20", "", 1000), model.Expected("", "20", ""));
  EXPECT_EQ(PageThrough(model, "photos", ".", "", 1000), model.Expected("photos", ".", ""));
}

// Issue 16, L3: a delimited page read every key under the prefixes it reported (48 prefixes of
// 1,000 keys: 48,000 entries for a page of 48). It must seek past a reported prefix instead.
TEST(ListObjectsPageTest, ReportedPrefixesAreSkippedNotRead) {
  std::vector<std::string> keys;
  for (int p = 0; p < 48; ++p) {
    for (int i = 0; i < 1000; ++i) keys.push_back(absl::StrCat("p", 100 + p, "/", 1000 + i));
  }
  for (int i = 0; i < 300; ++i) keys.push_back(absl::StrCat("q", 1000 + i));  // plain objects
  Model model(keys);
  for (uint32_t max_keys : {1000u, 48u, 60u, 7u}) {
    model.read_ = 0;
    int pages = 0;
    const auto all = PageThrough(model, "", "/", "", max_keys, &pages);
    EXPECT_EQ(all, model.Expected("", "/", "")) << "max_keys " << max_keys;
    // 48 prefixes and 300 objects in all: 16 per prefix, twice the objects, 32 per page.
    EXPECT_LE(model.read_, 48u * 16 + 2 * 300 + 32u * pages)
        << "max_keys " << max_keys << ", " << pages << " pages";
  }
  // Without a delimiter nothing is skipped: a page reads what it returns, plus one.
  model.read_ = 0;
  const auto flat = PageThrough(model, "p105/", "", "", 1000);
  EXPECT_EQ(flat.size(), 1000u);
  EXPECT_LE(model.read_, 1001u);
}

TEST(ListObjectsPageTest, PaginationBoundaries) {
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(absl::StrCat("k", i));
  Model model(keys);
  int pages = 0;
  // max_keys exactly the count: one page, not truncated.
  auto all = PageThrough(model, "", "", "", 10, &pages);
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(pages, 1);
  // One less: two pages.
  all = PageThrough(model, "", "", "", 9, &pages);
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(pages, 2);
  // One at a time.
  all = PageThrough(model, "", "", "", 1, &pages);
  EXPECT_EQ(all, model.Expected("", "", ""));
  EXPECT_EQ(pages, 10);
  // start_after the last key: empty and not truncated.
  all = PageThrough(model, "", "", "k9", 5, &pages);
  EXPECT_TRUE(all.empty());
  EXPECT_EQ(pages, 1);
}

TEST(ListObjectsPageTest, PageEndingOnACommonPrefixResumesAfterIt) {
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back(absl::StrCat("d/", 100 + i));
  keys.push_back("e");
  keys.push_back("c");
  Model model(keys);
  int pages = 0;
  EXPECT_EQ(PageThrough(model, "", "/", "", 1, &pages),
            (std::vector<std::string>{"K:c", "P:d/", "K:e"}));
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(PageThrough(model, "", "/", "", 2, &pages),
            (std::vector<std::string>{"K:c", "P:d/", "K:e"}));
  EXPECT_EQ(pages, 2);
}

TEST(ListObjectsPageTest, RandomListingsMatchTheModel) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {"a", "b", "/", "-", "\xC3\xA4", "\xF0\x9F\x99\x82"};
  for (int round = 0; round < 60; ++round) {
    std::set<std::string> keyset;
    const int n = static_cast<int>(rng() % 200);
    while (static_cast<int>(keyset.size()) < n) {
      std::string k;
      const int len = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < len; ++i) k += alphabet[rng() % alphabet.size()];
      keyset.insert(k);
    }
    Model model({keyset.begin(), keyset.end()});
    const std::string prefix = rng() % 2 ? "" : alphabet[rng() % 2];
    const std::string delimiter = rng() % 3 == 0 ? "" : (rng() % 2 ? "/" : "b/");
    const std::string start_after = rng() % 3 == 0 ? "a/b" : "";
    const uint32_t max_keys = 1 + static_cast<uint32_t>(rng() % 12);
    SCOPED_TRACE(absl::StrCat("round ", round, " prefix '", prefix, "' delimiter '", delimiter,
                              "' max_keys ", max_keys));
    EXPECT_EQ(PageThrough(model, prefix, delimiter, start_after, max_keys),
              model.Expected(prefix, delimiter, start_after));
  }
}

TEST(ListObjectsPageTest, ScanErrorsPropagate) {
  ObjectScan failing = [](absl::string_view, size_t) -> absl::StatusOr<std::vector<ObjectSummary>> {
    return MakeError(ErrorCode::kNoSuchBucket, "gone");
  };
  EXPECT_EQ(ErrorCodeOf(ListObjectsPage(failing, "", "", {}, 10).status()),
            ErrorCode::kNoSuchBucket);
}

}  // namespace
}  // namespace aobj
