// Filters, wildcards and sync decisions of the aobj CLI (tools/cli_select.cc).
#include "cli_select.h"

#include "gtest/gtest.h"

namespace aobj::cli {
namespace {

TEST(FiltersTest, EverythingUntilAFilterMatchesThenTheLastMatchDecides) {
  Filters f;
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.Selects("a.txt"));
  f.Exclude("*");
  f.Include("*.txt");
  EXPECT_TRUE(f.Selects("a.txt"));
  EXPECT_TRUE(f.Selects("sub/deeper/b.txt"));  // '*' crosses '/', as in aws s3
  EXPECT_FALSE(f.Selects("a.bin"));
  f.Exclude("tmp/*");
  EXPECT_FALSE(f.Selects("tmp/a.txt"));  // later wins
  EXPECT_TRUE(f.Selects("keep/tmp/a.txt"));

  Filters g;
  g.Exclude("log-?.gz");
  g.Exclude("[ab]*");
  EXPECT_FALSE(g.Selects("log-1.gz"));
  EXPECT_TRUE(g.Selects("log-10.gz"));
  EXPECT_FALSE(g.Selects("b.txt"));
  EXPECT_TRUE(g.Selects("c.txt"));
  Filters quoted;
  quoted.Exclude("\\*literal");
  EXPECT_FALSE(quoted.Selects("*literal"));
  EXPECT_TRUE(quoted.Selects("xliteral"));
}

TEST(WildcardTest, ListsThePrefixBeforeTheWildcardAndNamesFromItsDirectory) {
  EXPECT_FALSE(HasWildcard("logs/2026/a.gz"));
  EXPECT_TRUE(HasWildcard("logs/*.gz"));
  EXPECT_TRUE(HasWildcard("a?"));
  EXPECT_TRUE(HasWildcard("[ab]"));
  WildcardKey w = SplitWildcard("logs/2026-*/x*.gz");
  EXPECT_EQ(w.list_prefix, "logs/2026-");
  EXPECT_EQ(w.base, "logs/");
  EXPECT_TRUE(WildcardMatches(w.pattern, "logs/2026-11/x1.gz"));
  EXPECT_TRUE(WildcardMatches(w.pattern, "logs/2026-11/deep/x1.gz"));
  EXPECT_FALSE(WildcardMatches(w.pattern, "logs/2026-11/y1.gz"));
  EXPECT_FALSE(WildcardMatches(w.pattern, "logs/2025-11/x1.gz"));
  w = SplitWildcard("*.txt");
  EXPECT_EQ(w.list_prefix, "");
  EXPECT_EQ(w.base, "");
}

TEST(SyncDecisionTest, AsAwsS3Sync) {
  const SyncRules rules;
  SyncSide src{100, 5000, ""};
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, std::nullopt, rules), SyncReason::kMissing);
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, SyncSide{99, 9000, ""}, rules),
            SyncReason::kSize);
  // An upload or a copy goes when the source is newer than the destination.
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, SyncSide{100, 4999, ""}, rules),
            SyncReason::kTime);
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, SyncSide{100, 5000, ""}, rules),
            SyncReason::kSame);
  EXPECT_EQ(SyncDecision(SyncDirection::kCopy, src, SyncSide{100, 6000, ""}, rules),
            SyncReason::kSame);
  // A download goes when the local file is newer than the object (aws s3's default), or with
  // --exact-timestamps whenever the times differ.
  EXPECT_EQ(SyncDecision(SyncDirection::kDownload, src, SyncSide{100, 4000, ""}, rules),
            SyncReason::kSame);
  EXPECT_EQ(SyncDecision(SyncDirection::kDownload, src, SyncSide{100, 6000, ""}, rules),
            SyncReason::kTime);
  SyncRules exact;
  exact.exact_timestamps = true;
  EXPECT_EQ(SyncDecision(SyncDirection::kDownload, src, SyncSide{100, 4000, ""}, exact),
            SyncReason::kTime);
  EXPECT_EQ(SyncDecision(SyncDirection::kDownload, src, SyncSide{100, 5000, ""}, exact),
            SyncReason::kSame);
  SyncRules size_only;
  size_only.size_only = true;
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, SyncSide{100, 1, ""}, size_only),
            SyncReason::kSame);
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, src, SyncSide{101, 1, ""}, size_only),
            SyncReason::kSize);
  // --compare-etag: the contents decide where both sides have an MD5; else the times.
  SyncRules etag;
  etag.compare_etag = true;
  SyncSide hashed{100, 5000, "aa"};
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, hashed, SyncSide{100, 1, "aa"}, etag),
            SyncReason::kSame);
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, hashed, SyncSide{100, 9000, "bb"}, etag),
            SyncReason::kContent);
  EXPECT_EQ(SyncDecision(SyncDirection::kUpload, hashed, SyncSide{100, 1, ""}, etag),
            SyncReason::kTime);
}

TEST(Md5OfEtagTest, OnlySinglePartMd5Etags) {
  EXPECT_EQ(Md5OfEtag("\"9E107D9D372BB6826BD81D3542A419D6\""), "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(Md5OfEtag("\"9e107d9d372bb6826bd81d3542a419d6-3\""), "");  // multipart
  EXPECT_EQ(Md5OfEtag("\"9e107d9d372bb6826bd81d3542a419d6-0\""), "");  // opaque
  EXPECT_EQ(Md5OfEtag("9e107d9d372bb6826bd81d3542a419d6"), "");        // unquoted
  EXPECT_EQ(Md5OfEtag("\"9e107d9d372bb6826bd81d3542a419zz\""), "");
  EXPECT_EQ(Md5OfEtag(""), "");
}

}  // namespace
}  // namespace aobj::cli
