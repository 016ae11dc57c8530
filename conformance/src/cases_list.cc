// Cases for spec sections 9.11 (ListBuckets), 9.12 (ListObjectsV2) and 9.13 (DeleteObjects).
#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

#include "conformance/src/cases_util.h"

namespace aobj::conformance {
namespace {

BucketFixture Setup(CaseContext& ctx, const std::vector<std::string>& keys) {
  BucketFixture f = OpenBucket(ctx);
  for (const auto& k : keys) ctx.RequireOk(f.p->Put(f.bucket, k, k), "PUT " + k);
  return f;
}

pb::ListObjectsV2Response List(CaseContext& ctx, Peer& p, const pb::ListObjectsV2Request& req,
                               const std::string& what) {
  RawReply r = p.Send(Method::kListObjectsV2, req);
  ctx.RequireOk(r, what);
  return Parse<pb::ListObjectsV2Response>(ctx, r, what);
}

std::string Keys(const pb::ListObjectsV2Response& l) {
  std::string s;
  for (const auto& o : l.objects()) absl::StrAppend(&s, o.key(), " ");
  for (const auto& c : l.common_prefixes()) absl::StrAppend(&s, "[", c, "] ");
  if (l.is_truncated()) s += "(truncated)";
  return s;
}

}  // namespace

void RegisterListCases(Registry& r) {
  Add(r, "list/9.11/1", "ListBuckets: sorted, prefix, paging, creation time", "list",
      {"AOBJ-OBJ-110", "AOBJ-OBJ-111", "AOBJ-OBJ-112"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        std::vector<std::string> mine;
        for (int i = 0; i < 3; ++i) mine.push_back(ctx.NewBucket(*p));
        const std::string prefix = mine[0].substr(0, mine[0].rfind('-') + 1);
        const int64_t now = absl::ToUnixMillis(absl::Now());
        pb::ListBucketsRequest req;
        req.set_prefix(prefix);
        req.set_max_buckets(2);
        std::vector<std::string> seen;
        for (int page = 0; page < 5; ++page) {
          RawReply rr = p->Send(Method::kListBuckets, req);
          ctx.RequireOk(rr, "ListBuckets");
          auto lb = Parse<pb::ListBucketsResponse>(ctx, rr, "ListBuckets");
          ctx.Require(lb.buckets_size() <= 2, "at most max_buckets", "<= 2", absl::StrCat(lb.buckets_size()));
          for (const auto& b : lb.buckets()) {
            seen.push_back(b.name());
            ctx.Require(b.name().rfind(prefix, 0) == 0, "names start with the prefix", prefix, b.name());
            ctx.Expect(b.creation_time_ms() > now - 600000 && b.creation_time_ms() <= now + 5000,
                       "creation_time_ms is about now (AOBJ-OBJ-111)", absl::StrCat("~", now),
                       absl::StrCat(b.creation_time_ms()));
          }
          if (!lb.is_truncated()) break;
          req.set_continuation_token(lb.next_continuation_token());
        }
        std::vector<std::string> sorted = mine;
        std::sort(sorted.begin(), sorted.end());
        ctx.Require(seen == sorted, "pages list exactly the 3 buckets, ascending", absl::StrJoin(sorted, " "),
                    absl::StrJoin(seen, " "));
        pb::ListBucketsRequest big;
        big.set_max_buckets(10001);
        ctx.RequireCode(p->Send(Method::kListBuckets, big), ErrorCode::kInvalidArgument,
                        "max_buckets 10001");
        // The edge, and a value above ListObjectsV2's page limit of 1000: both accepted.
        for (uint32_t n : {1001u, 10000u}) {
          pb::ListBucketsRequest edge;
          edge.set_max_buckets(n);
          ctx.RequireOk(p->Send(Method::kListBuckets, edge), absl::StrCat("max_buckets ", n));
        }
      });
  Add(r, "list/9.12/1", "ListObjectsV2: octet order, prefix, start_after", "list",
      {"AOBJ-OBJ-100"}, false, [](CaseContext& ctx) {
        const std::vector<std::string> keys = {"b", "a/1", "a/2", "A", "a", "\xc3\xa9", "z", "a0"};
        BucketFixture f = Setup(ctx, keys);
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        auto l = List(ctx, *f.p, req, "list all");
        std::vector<std::string> want = keys;
        std::sort(want.begin(), want.end(), [](const std::string& x, const std::string& y) {
          return std::lexicographical_compare(
              x.begin(), x.end(), y.begin(), y.end(),
              [](char c, char d) { return static_cast<uint8_t>(c) < static_cast<uint8_t>(d); });
        });
        std::string expect;
        for (const auto& k : want) absl::StrAppend(&expect, k, " ");
        ctx.Require(Keys(l) == expect, "keys in unsigned-octet order", expect, Keys(l));
        req.set_prefix("a");
        req.set_start_after("a/1");
        l = List(ctx, *f.p, req, "prefix a, start_after a/1");
        ctx.Require(Keys(l) == "a/2 a0 ", "keys after a/1 that start with a", "a/2 a0 ", Keys(l));
        for (const auto& o : l.objects()) {
          ctx.Require(o.size() == o.key().size() && o.etag() == Md5Etag(o.key()),
                      "entries carry size and ETag", Md5Etag(o.key()), o.etag());
        }
      });
  Add(r, "list/9.12/2", "delimiter: common prefixes, counted with objects in max_keys", "list",
      {"AOBJ-OBJ-101", "AOBJ-OBJ-102"}, false, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"photos/2024/a.jpg", "photos/2024/b.jpg", "photos/2025/c.jpg",
                                "photos/index.html", "readme", "videos/x.mp4"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_delimiter("/");
        auto l = List(ctx, *f.p, req, "delimiter /");
        ctx.Require(Keys(l) == "readme [photos/] [videos/] ", "top level", "readme [photos/] [videos/] ", Keys(l));
        req.set_prefix("photos/");
        l = List(ctx, *f.p, req, "prefix photos/, delimiter /");
        ctx.Require(Keys(l) == "photos/index.html [photos/2024/] [photos/2025/] ", "one level down",
                    "photos/index.html [photos/2024/] [photos/2025/] ", Keys(l));
        req.set_max_keys(2);
        l = List(ctx, *f.p, req, "the same with max_keys 2");
        ctx.Require(l.objects_size() + l.common_prefixes_size() == 2 && l.is_truncated(),
                    "two entries in all, truncated", "2 entries, truncated", Keys(l));
      });
  Add(r, "list/9.12/3", "paging: is_truncated exactly when more follow; every key exactly once",
      "list", {"AOBJ-OBJ-103", "AOBJ-OBJ-109", "AOBJ-OBJ-106"}, false, [](CaseContext& ctx) {
        std::vector<std::string> keys;
        for (int i = 0; i < 23; ++i) keys.push_back(absl::StrCat("k", i < 10 ? "0" : "", i));
        BucketFixture f = Setup(ctx, keys);
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(5);
        std::vector<std::string> seen;
        int pages = 0;
        for (; pages < 10; ++pages) {
          auto l = List(ctx, *f.p, req, absl::StrCat("page ", pages + 1));
          for (const auto& o : l.objects()) seen.push_back(o.key());
          const bool more = seen.size() < keys.size();
          ctx.Require(l.is_truncated() == more, "is_truncated exactly when keys remain",
                      more ? "true" : "false", l.is_truncated() ? "true" : "false");
          if (!l.is_truncated()) break;
          ctx.Require(!l.next_continuation_token().empty(), "a truncated page has a token", "non-empty", "empty");
          req.set_continuation_token(l.next_continuation_token());
        }
        ctx.Require(seen == keys, "23 keys over 5 pages, each once, in order", absl::StrJoin(keys, " "),
                    absl::StrJoin(seen, " "));
        // A page that ends exactly at the last key is not truncated.
        pb::ListObjectsV2Request exact;
        exact.set_bucket(f.bucket);
        exact.set_max_keys(23);
        auto l = List(ctx, *f.p, exact, "max_keys 23 over 23 keys");
        ctx.Require(!l.is_truncated() && l.next_continuation_token().empty(),
                    "an exact last page is not truncated", "not truncated, no token", l.is_truncated() ? "truncated" : "not truncated");
      });
  Add(r, "list/9.12/4", "max_keys above 1000, or prefix too long or not UTF-8: INVALID_ARGUMENT",
      "list", {"AOBJ-OBJ-104", "AOBJ-OBJ-105"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"k"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(1001);
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument, "max_keys 1001");
        req.set_max_keys(0);
        auto l = List(ctx, *f.p, req, "max_keys 0 (the default)");
        ctx.Require(l.objects_size() == 1, "max_keys 0 lists", "1 object", Keys(l));
        req.set_prefix(std::string(1025, 'p'));
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument, "prefix of 1025 octets");
        req.set_prefix(std::string("\xff", 1));
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument, "prefix not UTF-8");
        req.clear_prefix();
        req.set_delimiter(std::string("\xc3", 1));
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument, "delimiter not UTF-8");
        req.clear_delimiter();
        req.set_start_after(std::string(1025, 's'));
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument,
                        "start_after of 1025 octets");
        ctx.RequireStillServes();
      });
  Add(r, "list/9.12/5", "forged, altered or foreign continuation tokens: INVALID_CONTINUATION_TOKEN",
      "list", {"AOBJ-OBJ-107"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"a", "b", "c", "d"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(1);
        auto l = List(ctx, *f.p, req, "page 1");
        const std::string token = l.next_continuation_token();
        ctx.Require(!token.empty(), "a token", "non-empty", "empty");
        std::vector<std::pair<std::string, std::string>> bad = {
            {Content(40, 5), "40 random octets"},
            {"x", "one octet"},
            {std::string(5000, 't'), "5000 octets"},
        };
        for (size_t i = 0; i < token.size(); i += std::max<size_t>(1, token.size() / 6)) {
          std::string t = token;
          t[i] = static_cast<char>(t[i] ^ 0x01);
          bad.emplace_back(t, absl::StrCat("the token with octet ", i, " changed"));
        }
        for (const auto& [t, what] : bad) {
          req.set_continuation_token(t);
          ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidContinuationToken, what);
        }
        // The token of another bucket's listing.
        const std::string other = ctx.NewBucket(*f.p);
        pb::ListObjectsV2Request o;
        o.set_bucket(other);
        o.set_continuation_token(token);
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, o), ErrorCode::kInvalidContinuationToken,
                        "the token sent to another bucket");
        ctx.RequireStillServes();
      });
  Add(r, "list/9.11/2",
      "ListBuckets pages at their edge: max_buckets 0 means 10000, a page exactly full is not "
      "truncated and carries no token, the last page of several carries none, whatever buckets "
      "outside the prefix follow",
      "list", {"AOBJ-OBJ-110", "AOBJ-OBJ-112"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        std::vector<std::string> mine;
        for (int i = 0; i < 3; ++i) mine.push_back(ctx.NewBucket(*p));
        std::sort(mine.begin(), mine.end());
        const std::string prefix = mine[0].substr(0, mine[0].rfind('-') + 1);
        // A bucket outside the prefix that sorts right after every bucket inside it ('.' follows
        // '-'): a page that ends the prefix's buckets is still the last page.
        const std::string outside = prefix.substr(0, prefix.size() - 1) + ".after";
        RawReply made = p->CreateBucket(outside);
        if (!made.grpc_status.ok() && CodeOf(made) != ErrorCode::kBucketAlreadyExists) {
          ctx.RequireOk(made, "CreateBucket " + outside);
        }
        struct Remove {
          Peer* p;
          std::string name;
          ~Remove() {
            pb::DeleteBucketRequest d;
            d.set_bucket(name);
            p->Send(Method::kDeleteBucket, d);
          }
        } remove{p.get(), outside};
        auto page = [&](uint32_t max, const std::string& token, const std::string& what) {
          pb::ListBucketsRequest req;
          req.set_prefix(prefix);
          req.set_max_buckets(max);
          req.set_continuation_token(token);
          RawReply rr = p->Send(Method::kListBuckets, req);
          ctx.RequireOk(rr, what);
          return Parse<pb::ListBucketsResponse>(ctx, rr, what);
        };
        auto names = [](const pb::ListBucketsResponse& l) {
          std::vector<std::string> v;
          for (const auto& b : l.buckets()) v.push_back(b.name());
          return absl::StrJoin(v, " ");
        };
        for (uint32_t max : {0u, 3u}) {
          auto l = page(max, "", absl::StrCat("ListBuckets, max_buckets ", max));
          ctx.Require(names(l) == absl::StrJoin(mine, " ") && !l.is_truncated() &&
                          l.next_continuation_token().empty(),
                      absl::StrCat("max_buckets ", max, ": all three, not truncated, no token"),
                      absl::StrJoin(mine, " ") + " (complete)",
                      absl::StrCat(names(l), l.is_truncated() ? " (truncated)" : "",
                                   l.next_continuation_token().empty() ? "" : " (a token)"));
        }
        auto first = page(2, "", "ListBuckets, max_buckets 2");
        ctx.Require(first.buckets_size() == 2 && first.is_truncated() &&
                        !first.next_continuation_token().empty(),
                    "the first page of 2: truncated, with a token", "2 (truncated, a token)",
                    absl::StrCat(first.buckets_size(), first.is_truncated() ? " (truncated)" : ""));
        auto last = page(2, first.next_continuation_token(), "ListBuckets, the second page");
        ctx.Require(names(last) == mine[2] && !last.is_truncated() &&
                        last.next_continuation_token().empty(),
                    "the last page: the third bucket, not truncated, no token", mine[2],
                    absl::StrCat(names(last), last.is_truncated() ? " (truncated)" : "",
                                 last.next_continuation_token().empty() ? "" : " (a token)"));
      });
  Add(r, "list/9.12/11",
      "continuation tokens over time: used twice or from another session they give the same "
      "page; after a delete they resume after their position; a token of another prefix, "
      "delimiter or of ListBuckets is INVALID_CONTINUATION_TOKEN",
      "list", {"AOBJ-OBJ-103", "AOBJ-OBJ-107"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"a", "b", "c", "d", "e"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(2);
        auto l = List(ctx, *f.p, req, "page 1");
        ctx.Require(Keys(l) == "a b (truncated)", "page 1", "a b (truncated)", Keys(l));
        req.set_continuation_token(l.next_continuation_token());
        auto again1 = List(ctx, *f.p, req, "page 2");
        auto again2 = List(ctx, *f.p, req, "page 2 from the same token again");
        ctx.Require(Keys(again1) == "c d (truncated)" && Keys(again2) == Keys(again1),
                    "the same token gives the same page twice", "c d (truncated), twice",
                    Keys(again1) + " / " + Keys(again2));
        auto q = ctx.Open();
        auto other = List(ctx, *q, req, "page 2 from another session of the principal");
        ctx.Require(Keys(other) == Keys(again1), "another session resumes from the token",
                    Keys(again1), Keys(other));
        ctx.RequireOk(f.p->Delete(f.bucket, "c"), "DELETE c");
        auto after = List(ctx, *f.p, req, "page 2 after c was deleted");
        ctx.Require(Keys(after) == "d e ", "resumes after b: d e, not truncated", "d e",
                    Keys(after));
        pb::ListObjectsV2Request prefixed = req;
        prefixed.set_prefix("a");
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, prefixed),
                        ErrorCode::kInvalidContinuationToken, "the token with another prefix");
        pb::ListObjectsV2Request delimited = req;
        delimited.set_delimiter("/");
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, delimited),
                        ErrorCode::kInvalidContinuationToken, "the token with another delimiter");
        ctx.NewBucket(*f.p);
        pb::ListBucketsRequest lb;
        lb.set_max_buckets(1);
        RawReply lbr = f.p->Send(Method::kListBuckets, lb);
        ctx.RequireOk(lbr, "ListBuckets, max_buckets 1");
        const std::string bucket_token =
            Parse<pb::ListBucketsResponse>(ctx, lbr, "ListBuckets").next_continuation_token();
        ctx.Require(!bucket_token.empty(), "ListBuckets of at least two buckets gives a token",
                    "a token", "none");
        req.set_continuation_token(bucket_token);
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, req),
                        ErrorCode::kInvalidContinuationToken,
                        "a ListBuckets token sent to ListObjectsV2");
        ctx.RequireStillServes();
      });
  Add(r, "list/9.12/6", "a continuation token wins over start_after", "list", {"AOBJ-OBJ-108"},
      false, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"a", "b", "c", "d"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(1);
        auto l = List(ctx, *f.p, req, "page 1");
        req.set_continuation_token(l.next_continuation_token());
        req.set_start_after("c");
        l = List(ctx, *f.p, req, "page 2 with start_after c");
        ctx.Require(Keys(l).rfind("b ", 0) == 0, "resumes after a (the token), not after c", "b ...", Keys(l));
      });
  Add(r, "del/9.13/3",
      "DeleteObjects' per-key errors carry the name, S3 code and retryable flag of their "
      "registry row",
      "core", {"AOBJ-ERR-004", "AOBJ-OBJ-141"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"k"});
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        d.add_keys(std::string(1025, 'l'));  // KEY_TOO_LONG
        d.add_keys("");                      // INVALID_ARGUMENT
        RawReply rr = f.p->Send(Method::kDeleteObjects, d);
        ctx.RequireOk(rr, "DeleteObjects of two keys that cannot exist");
        auto resp = Parse<pb::DeleteObjectsResponse>(ctx, rr, "DeleteObjects");
        ctx.Require(resp.errors_size() == 2, "two failures listed", "2",
                    absl::StrCat(resp.errors_size()));
        for (const auto& e : resp.errors()) {
          const pb::Error& err = e.error();
          // Which failure is which: the echoed long key is cut to at most 1024 octets.
          const bool long_key = e.key().size() > 100;
          const ErrorCode want = long_key ? ErrorCode::kKeyTooLong : ErrorCode::kInvalidArgument;
          ctx.Require(static_cast<ErrorCode>(err.code()) == want,
                      absl::StrCat("the failure of a key of ", e.key().size(), " octets is ",
                                   std::string(GetErrorInfo(want).name)),
                      std::string(GetErrorInfo(want).name), err.ShortDebugString());
          const ErrorInfo info = GetErrorInfo(static_cast<ErrorCode>(err.code()));
          ctx.Require(err.name() == info.name && err.s3_code() == info.s3_code &&
                          err.retryable() == info.retryable,
                      absl::StrCat("the failure of a key of ", e.key().size(),
                                   " octets matches its registry row"),
                      absl::StrCat(std::string(info.name), " ", std::string(info.s3_code),
                                   info.retryable ? " retryable" : ""),
                      err.ShortDebugString());
        }
        ctx.RequireStillServes();
      });
  Add(r, "del/9.13/4",
      "DeleteObjects naming a key twice handles it twice, in order: reported deleted each time",
      "core", {"AOBJ-OBJ-141"}, false, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"twice", "other"});
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        for (const char* k : {"twice", "other", "twice"}) d.add_keys(k);
        RawReply rr = f.p->Send(Method::kDeleteObjects, d);
        ctx.RequireOk(rr, "DeleteObjects of twice, other, twice");
        auto resp = Parse<pb::DeleteObjectsResponse>(ctx, rr, "DeleteObjects");
        ctx.Require(
            absl::StrJoin(resp.deleted(), " ") == "twice other twice" && resp.errors().empty(),
            "each key reported deleted, in order", "twice other twice",
            absl::StrJoin(resp.deleted(), " "));
        ctx.RequireCode(f.p->Head(f.bucket, "twice"), ErrorCode::kNoSuchKey, "twice is gone");
      });
  Add(r, "list/9.12/7",
      "a continuation token is bound to its prefix and delimiter: sent with another, "
      "INVALID_CONTINUATION_TOKEN",
      "list", {"AOBJ-OBJ-107"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"a/1", "a/2", "b/1", "b/2", "c"});
        struct Shape {
          std::string prefix, delimiter;
        };
        const std::vector<Shape> shapes = {{"", ""}, {"", "/"}, {"a", ""}, {"a", "/"}, {"", "-"}};
        for (const Shape& from : shapes) {
          pb::ListObjectsV2Request req;
          req.set_bucket(f.bucket);
          req.set_prefix(from.prefix);
          req.set_delimiter(from.delimiter);
          req.set_max_keys(1);
          auto l = List(ctx, *f.p, req,
                        absl::StrCat("page 1 (prefix '", from.prefix, "', delimiter '",
                                     from.delimiter, "')"));
          if (!l.is_truncated()) continue;
          for (const Shape& to : shapes) {
            if (to.prefix == from.prefix && to.delimiter == from.delimiter) continue;
            pb::ListObjectsV2Request next = req;
            next.set_prefix(to.prefix);
            next.set_delimiter(to.delimiter);
            next.set_continuation_token(l.next_continuation_token());
            ctx.RequireCode(f.p->Send(Method::kListObjectsV2, next),
                            ErrorCode::kInvalidContinuationToken,
                            absl::StrCat("the token of (prefix '", from.prefix, "', delimiter '",
                                         from.delimiter, "') sent with prefix '", to.prefix,
                                         "', delimiter '", to.delimiter, "'"));
          }
        }
        ctx.RequireStillServes();
      });
  Add(r, "list/9.12/10",
      "limits at their exact edge are accepted: max_keys 1000, prefix, delimiter and start_after "
      "of 1024 octets, max_buckets 10000, DeleteObjects of 1000 keys",
      "list", {"AOBJ-OBJ-104", "AOBJ-OBJ-105", "AOBJ-OBJ-112", "AOBJ-OBJ-140"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"k"});
        pb::ListObjectsV2Request req;
        req.set_bucket(f.bucket);
        req.set_max_keys(1000);
        ctx.Require(List(ctx, *f.p, req, "max_keys 1000").objects_size() == 1,
                    "max_keys 1000 lists", "1 object", "other");
        for (int field = 0; field < 3; ++field) {
          pb::ListObjectsV2Request edge;
          edge.set_bucket(f.bucket);
          const std::string value(1024, 'p');
          const char* name = field == 0 ? "prefix" : field == 1 ? "delimiter" : "start_after";
          if (field == 0) edge.set_prefix(value);
          if (field == 1) edge.set_delimiter(value);
          if (field == 2) edge.set_start_after(value);
          RawReply rr = f.p->Send(Method::kListObjectsV2, edge);
          ctx.RequireOk(rr, absl::StrCat("ListObjectsV2 with a ", name, " of 1024 octets"));
          edge.set_prefix(field == 0 ? value + "p" : "");
          edge.set_delimiter(field == 1 ? value + "p" : "");
          edge.set_start_after(field == 2 ? value + "p" : "");
          ctx.RequireCode(f.p->Send(Method::kListObjectsV2, edge), ErrorCode::kInvalidArgument,
                          absl::StrCat("ListObjectsV2 with a ", name, " of 1025 octets"));
        }
        pb::ListBucketsRequest lb;
        lb.set_max_buckets(10000);
        ctx.RequireOk(f.p->Send(Method::kListBuckets, lb), "ListBuckets with max_buckets 10000");
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        for (int i = 0; i < 1000; ++i) d.add_keys(i == 0 ? "k" : absl::StrCat("absent-", i));
        RawReply dr = f.p->Send(Method::kDeleteObjects, d);
        ctx.RequireOk(dr, "DeleteObjects of exactly 1000 keys");
        auto resp = Parse<pb::DeleteObjectsResponse>(ctx, dr, "DeleteObjects");
        ctx.Require(resp.deleted_size() == 1000 && resp.errors().empty(),
                    "all 1000 reported deleted", "1000 deleted, 0 errors",
                    absl::StrCat(resp.deleted_size(), " deleted, ", resp.errors_size(), " errors"));
        ctx.RequireStillServes();
      });
  Add(r, "del/9.13/1", "DeleteObjects with 0 or 1001 keys: INVALID_ARGUMENT", "core",
      {"AOBJ-OBJ-140"}, true, [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"k"});
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        ctx.RequireCode(f.p->Send(Method::kDeleteObjects, d), ErrorCode::kInvalidArgument, "no keys");
        for (int i = 0; i < 1001; ++i) d.add_keys(absl::StrCat("k", i));
        ctx.RequireCode(f.p->Send(Method::kDeleteObjects, d), ErrorCode::kInvalidArgument, "1001 keys");
        ctx.RequireOk(f.p->Head(f.bucket, "k"), "nothing deleted");
        ctx.RequireStillServes();
      });
  Add(r, "del/9.13/2", "DeleteObjects: per-key results, missing keys deleted, failures listed, "
                       "quiet",
      "core", {"AOBJ-OBJ-141", "AOBJ-OBJ-142", "AOBJ-OBJ-143", "AOBJ-OBJ-144"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = Setup(ctx, {"a", "b", "c"});
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        const std::string long_key = std::string(1023, 'x') + "\xc3\xa9" + std::string(500, 'y');
        for (const std::string& k : {std::string("a"), std::string("missing"), std::string(""), long_key,
                                     std::string("b")}) {
          d.add_keys(k);
        }
        RawReply rr = f.p->Send(Method::kDeleteObjects, d);
        ctx.RequireOk(rr, "DeleteObjects of a, missing, \"\", a 1525-octet key, b");
        auto resp = Parse<pb::DeleteObjectsResponse>(ctx, rr, "DeleteObjects");
        std::set<std::string> deleted(resp.deleted().begin(), resp.deleted().end());
        ctx.Require(deleted == std::set<std::string>{"a", "missing", "b"}, "deleted lists a, missing, b",
                    "a b missing", absl::StrJoin(deleted, " "));
        ctx.Require(resp.errors_size() == 2, "two failures listed", "2", absl::StrCat(resp.errors_size()));
        for (const auto& e : resp.errors()) {
          ctx.Require(e.error().code() != 0 && !e.error().name().empty(), "each failure carries its error",
                      "an error", e.error().ShortDebugString());
          ctx.Require(e.key().size() <= 1024, "echoed keys are at most 1024 octets", "<= 1024",
                      absl::StrCat(e.key().size()));
          if (e.key().size() > 100) {
            ctx.Require(e.key() == std::string(1023, 'x'), "the long key is cut at a UTF-8 boundary",
                        "1023 x (before the 2-octet character)", absl::StrCat(e.key().size(), " octets"));
          }
        }
        ctx.RequireCode(f.p->Head(f.bucket, "a"), ErrorCode::kNoSuchKey, "a is gone");
        ctx.RequireOk(f.p->Head(f.bucket, "c"), "c is still there");
        pb::DeleteObjectsRequest q;
        q.set_bucket(f.bucket);
        q.set_quiet(true);
        q.add_keys("c");
        q.add_keys("");
        rr = f.p->Send(Method::kDeleteObjects, q);
        ctx.RequireOk(rr, "quiet DeleteObjects");
        resp = Parse<pb::DeleteObjectsResponse>(ctx, rr, "DeleteObjects");
        ctx.Require(resp.deleted().empty() && resp.errors_size() == 1, "quiet: no deleted, the failure listed",
                    "0 deleted, 1 error", absl::StrCat(resp.deleted_size(), " deleted, ", resp.errors_size(), " errors"));
        ctx.RequireCode(f.p->Head(f.bucket, "c"), ErrorCode::kNoSuchKey, "c is gone");
        pb::DeleteObjectsRequest nb;
        nb.set_bucket(ctx.Unique("no-such-bucket"));
        nb.add_keys("k");
        ctx.RequireCode(f.p->Send(Method::kDeleteObjects, nb), MissingBucketCode(ctx), "a missing bucket");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
