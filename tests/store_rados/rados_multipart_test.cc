// Multipart uploads kept in the cluster (src/store_rados/rados_multipart.cc): every store below
// stands for a gateway of its own (its own cluster connection and caches) on one namespace, so
// each step may go through another one, as clients that spread parts over gateways do.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/rados_store.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "rados/librados.h"
#include "store/multipart.h"
#include "store_rados/rados_format.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"

namespace aobj {
namespace {

constexpr char kBucket[] = "uploads";

std::string Bytes(uint64_t seed, size_t n) {
  std::string out(n, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x);
  }
  return out;
}

std::string Md5Etag(const char* data, size_t n) {
  Md5 md5;
  md5.Update(data, n);
  return absl::StrCat("\"", HexEncode(md5.Finish()), "\"");
}

ObjectInfo PartInfoFor(const std::string& bytes) {
  ObjectInfo info;
  info.size = bytes.size();
  info.etag = Md5Etag(bytes.data(), bytes.size());
  info.crc32c = Crc32c(0, bytes.data(), bytes.size());
  return info;
}

struct Gateway {
  std::unique_ptr<RadosStore> store;
  std::unique_ptr<MultipartManager> uploads;
};

class RadosMultipartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = getenv("AOBJ_CEPH_CONF");
    if (conf == nullptr) GTEST_SKIP() << "AOBJ_CEPH_CONF is not set";
    options_.conf_file = conf;
    options_.ns = absl::StrCat("mp-", HexEncode(RandomBytes(6)));
    options_.gc_interval_ms = 0;
    options_.stripe_bytes = 64 * 1024;
    limits_.min_part_size = 100 * 1024;
    for (int i = 0; i < 4; ++i) gw_.push_back(Open(options_));
    ASSERT_TRUE(gw_[0].store->CreateBucket(kBucket).ok());
  }

  Gateway Open(const RadosStoreOptions& options) {
    Gateway g;
    absl::StatusOr<std::unique_ptr<RadosStore>> s = OpenRadosStore(options);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return g;
    g.store = *std::move(s);
    auto* provider = dynamic_cast<MultipartProvider*>(g.store.get());
    EXPECT_NE(provider, nullptr) << "RadosStore must keep its uploads itself";
    if (provider == nullptr) return g;
    absl::StatusOr<std::unique_ptr<MultipartManager>> m = provider->OpenMultipart(limits_);
    EXPECT_TRUE(m.ok()) << m.status();
    if (m.ok()) g.uploads = *std::move(m);
    return g;
  }

  absl::StatusOr<ObjectInfo> UploadPart(MultipartManager& m, const std::string& key,
                                        const std::string& id, uint32_t n,
                                        const std::string& bytes) {
    auto w = m.BeginPart(kBucket, key, id, n, bytes.size());
    if (!w.ok()) return w.status();
    absl::Status a =
        (*w)->Append(absl::MakeSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    if (!a.ok()) return a;
    return (*w)->Commit(PartInfoFor(bytes));
  }

  absl::StatusOr<std::string> Read(RadosStore& s, const std::string& key) {
    auto r = s.OpenRead(kBucket, key);
    if (!r.ok()) return r.status();
    std::string out((*r)->info().size, '\0');
    // In odd steps, so that reads cross stripe and part boundaries.
    for (size_t at = 0; at < out.size();) {
      const size_t step = std::min<size_t>(77777, out.size() - at);
      auto n = (*r)->ReadAt(at, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data() + at), step));
      if (!n.ok()) return n.status();
      if (*n == 0) return absl::DataLossError("short read");
      at += *n;
    }
    return out;
  }

  RadosStoreOptions options_;
  MultipartLimits limits_;
  std::vector<Gateway> gw_;
};

TEST_F(RadosMultipartTest, PartsThroughThreeGatewaysCompletedThroughAFourth) {
  absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, "big", WriteOptions{}, "AK1");
  ASSERT_TRUE(u.ok()) << u.status();
  std::vector<std::string> parts = {Bytes(1, 150 * 1024), Bytes(2, 200 * 1024 + 3), Bytes(3, 10)};
  std::vector<CompletedPart> list;
  for (uint32_t i = 0; i < parts.size(); ++i) {
    absl::StatusOr<ObjectInfo> p =
        UploadPart(*gw_[i].uploads, "big", u->upload_id, i + 1, parts[i]);
    ASSERT_TRUE(p.ok()) << p.status();
    list.push_back({i + 1, p->etag});
  }
  // Any gateway lists the parts and the upload.
  absl::StatusOr<PartsPage> listed = gw_[3].uploads->ListParts(kBucket, "big", u->upload_id, 0, 0);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->parts.size(), 3u);
  EXPECT_EQ(listed->parts[1].size, parts[1].size());
  absl::StatusOr<UploadsPage> uploads = gw_[2].uploads->ListUploads(kBucket, "", "", "", 0);
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  ASSERT_EQ(uploads->uploads.size(), 1u);
  EXPECT_EQ(uploads->uploads[0].upload_id, u->upload_id);
  // The bucket cannot be deleted with the upload in progress (AOBJ-OBJ-232).
  EXPECT_EQ(ErrorCodeOf(gw_[1].uploads->DeleteBucket(kBucket)), ErrorCode::kBucketNotEmpty);

  const std::string whole = parts[0] + parts[1] + parts[2];
  // AOBJ-OBJ-259: a full-object CRC32C that is not the content's fails before the commit, and
  // the upload stays for the right one.
  EXPECT_EQ(ErrorCodeOf(gw_[2]
                            .uploads
                            ->Complete(kBucket, "big", u->upload_id, list, {},
                                       Crc32c(0, whole.data(), whole.size() - 1))
                            .status()),
            ErrorCode::kBadDigest);
  absl::StatusOr<ObjectInfo> done = gw_[3].uploads->Complete(kBucket, "big", u->upload_id, list, {},
                                                             Crc32c(0, whole.data(), whole.size()));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->size, whole.size());
  EXPECT_EQ(done->crc32c, Crc32c(0, whole.data(), whole.size()));
  std::vector<std::string> etags;
  for (const auto& p : parts) etags.push_back(Md5Etag(p.data(), p.size()));
  EXPECT_EQ(done->etag, *MultipartEtag(etags));
  absl::StatusOr<std::string> got = Read(*gw_[1].store, "big");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == whole);
  // The upload is gone everywhere (AOBJ-OBJ-219), and its bucket can go once the object does.
  EXPECT_EQ(ErrorCodeOf(gw_[0].uploads->Complete(kBucket, "big", u->upload_id, list).status()),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(UploadPart(*gw_[2].uploads, "big", u->upload_id, 4, "x").status()),
            ErrorCode::kNoSuchUpload);
  uploads = gw_[2].uploads->ListUploads(kBucket, "", "", "", 0);
  ASSERT_TRUE(uploads.ok());
  EXPECT_TRUE(uploads->uploads.empty());
  ASSERT_TRUE(gw_[0].store->Delete(kBucket, "big").ok());
  EXPECT_TRUE(gw_[1].uploads->DeleteBucket(kBucket).ok());
}

TEST_F(RadosMultipartTest, CompleteAndAbortRacedThroughTwoGatewaysHaveOneWinner) {
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    const std::string key = absl::StrCat("race-", round);
    absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, key, WriteOptions{}, "");
    ASSERT_TRUE(u.ok()) << u.status();
    const std::string bytes = Bytes(round, 1000);
    absl::StatusOr<ObjectInfo> p = UploadPart(*gw_[1].uploads, key, u->upload_id, 1, bytes);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::Status completed, aborted;
    std::thread a([&] {
      completed = gw_[2].uploads->Complete(kBucket, key, u->upload_id, {{1, p->etag}}).status();
    });
    std::thread b([&] { aborted = gw_[3].uploads->Abort(kBucket, key, u->upload_id); });
    a.join();
    b.join();
    ASSERT_NE(completed.ok(), aborted.ok()) << completed << " / " << aborted;
    const absl::Status& loser = completed.ok() ? aborted : completed;
    EXPECT_EQ(ErrorCodeOf(loser), ErrorCode::kNoSuchUpload) << loser;
    EXPECT_EQ(gw_[0].store->Head(kBucket, key).ok(), completed.ok());
  }
}

TEST_F(RadosMultipartTest, AFailedCompleteLeavesTheUploadOpenForPartsAndACompleteLater) {
  {
    auto w = gw_[0].store->BeginPut(kBucket, "k", 3, "");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(absl::MakeSpan(reinterpret_cast<const uint8_t*>("old"), 3)).ok());
    ObjectInfo info = PartInfoFor("old");
    ASSERT_TRUE((*w)->Commit(info).ok());
  }
  absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, "k", WriteOptions{}, "");
  ASSERT_TRUE(u.ok());
  absl::StatusOr<ObjectInfo> p1 =
      UploadPart(*gw_[1].uploads, "k", u->upload_id, 1, Bytes(5, 120 * 1024));
  ASSERT_TRUE(p1.ok());
  WriteOptions create_only;
  create_only.if_none_match_star = true;  // the key holds "old": fails, AOBJ-OBJ-231
  EXPECT_EQ(
      ErrorCodeOf(gw_[2]
                      .uploads->Complete(kBucket, "k", u->upload_id, {{1, p1->etag}}, create_only)
                      .status()),
      ErrorCode::kPreconditionFailed);
  // A list naming a missing part fails too, and changes nothing (AOBJ-OBJ-218).
  EXPECT_EQ(
      ErrorCodeOf(gw_[2]
                      .uploads->Complete(kBucket, "k", u->upload_id, {{1, p1->etag}, {2, "\"00\""}})
                      .status()),
      ErrorCode::kInvalidPart);
  absl::StatusOr<std::string> still = Read(*gw_[3].store, "k");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(*still, "old");
  const std::string tail = Bytes(6, 5);
  absl::StatusOr<ObjectInfo> p2 = UploadPart(*gw_[3].uploads, "k", u->upload_id, 2, tail);
  ASSERT_TRUE(p2.ok()) << p2.status();
  absl::StatusOr<ObjectInfo> done =
      gw_[1].uploads->Complete(kBucket, "k", u->upload_id, {{1, p1->etag}, {2, p2->etag}});
  ASSERT_TRUE(done.ok()) << done.status();
  absl::StatusOr<std::string> got = Read(*gw_[0].store, "k");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == Bytes(5, 120 * 1024) + tail);
}

TEST_F(RadosMultipartTest, TheCollectorTakesAbortedReplacedAndUnlistedPartsAndNothingElse) {
  absl::StatusOr<UploadInfo> kept = gw_[0].uploads->Create(kBucket, "kept", WriteOptions{}, "");
  absl::StatusOr<UploadInfo> aborted =
      gw_[0].uploads->Create(kBucket, "aborted", WriteOptions{}, "");
  ASSERT_TRUE(kept.ok() && aborted.ok());
  const std::string a = Bytes(11, 130 * 1024), b = Bytes(12, 130 * 1024), c = Bytes(13, 64 * 1024);
  // Part 1 twice (the first goes), part 2, part 3 left out of the list.
  ASSERT_TRUE(UploadPart(*gw_[1].uploads, "kept", kept->upload_id, 1, b).ok());
  absl::StatusOr<ObjectInfo> p1 = UploadPart(*gw_[2].uploads, "kept", kept->upload_id, 1, a);
  absl::StatusOr<ObjectInfo> p2 = UploadPart(*gw_[1].uploads, "kept", kept->upload_id, 2, c);
  ASSERT_TRUE(UploadPart(*gw_[1].uploads, "kept", kept->upload_id, 3, c).ok());
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_TRUE(UploadPart(*gw_[3].uploads, "aborted", aborted->upload_id, 1, a).ok());
  ASSERT_TRUE(
      gw_[3]
          .uploads->Complete(kBucket, "kept", kept->upload_id, {{1, p1->etag}, {2, p2->etag}})
          .ok());
  ASSERT_TRUE(gw_[2].uploads->Abort(kBucket, "aborted", aborted->upload_id).ok());

  RadosStoreOptions no_grace = options_;
  no_grace.gc_grace_ms = 0;
  Gateway collector = Open(no_grace);
  absl::StatusOr<RadosGcReport> report = collector.store->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  // What is left: the stripes of the two listed parts (3 + 1), and no upload object.
  absl::StatusOr<uint64_t> stripes = collector.store->CountObjects("aobj.data.");
  ASSERT_TRUE(stripes.ok());
  EXPECT_EQ(*stripes, 3u + 1u);
  EXPECT_EQ(*collector.store->CountObjects("aobj.upload."), 0u);
  absl::StatusOr<std::string> got = Read(*gw_[0].store, "kept");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == a + c);
  // Replacing the completed object sends its parts the same way.
  ASSERT_TRUE(gw_[0].store->Delete(kBucket, "kept").ok());
  report = collector.store->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(*collector.store->CountObjects("aobj.data."), 0u);
  report = collector.store->CollectGarbage();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_examined, 0u);
}

TEST_F(RadosMultipartTest, ListingsPaginateInKeyThenInitiationOrder) {
  std::vector<std::pair<std::string, std::string>> made;  // key, upload id
  for (const std::string& key :
       std::vector<std::string>{"b", "a", std::string("a\0", 2), "a/x", "b"}) {
    absl::StatusOr<UploadInfo> u =
        gw_[made.size() % 4].uploads->Create(kBucket, key, WriteOptions{}, "");
    ASSERT_TRUE(u.ok()) << u.status();
    made.emplace_back(key, u->upload_id);
  }
  std::sort(made.begin(), made.end());
  std::vector<std::pair<std::string, std::string>> seen;
  std::string key_marker, id_marker;
  for (int page = 0; page < 10; ++page) {
    absl::StatusOr<UploadsPage> p =
        gw_[page % 4].uploads->ListUploads(kBucket, "", key_marker, id_marker, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    for (const UploadInfo& u : p->uploads) seen.emplace_back(u.key, u.upload_id);
    if (!p->truncated) break;
    key_marker = p->next_key_marker;
    id_marker = p->next_upload_id_marker;
  }
  EXPECT_EQ(seen, made);
  absl::StatusOr<UploadsPage> prefixed = gw_[1].uploads->ListUploads(kBucket, "a", "a", "", 0);
  ASSERT_TRUE(prefixed.ok());
  ASSERT_EQ(prefixed->uploads.size(), 2u);  // after every upload of "a": "a\0" and "a/x"
  EXPECT_EQ(prefixed->uploads[0].key, std::string("a\0", 2));
  // Object listings never show uploads.
  absl::StatusOr<std::vector<ObjectSummary>> objects =
      gw_[2].store->ListObjects(kBucket, "", "", 10);
  ASSERT_TRUE(objects.ok());
  EXPECT_TRUE(objects->empty());

  absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, "parts", WriteOptions{}, "");
  ASSERT_TRUE(u.ok());
  for (uint32_t n : {3u, 1u, 10u, 2u}) {
    ASSERT_TRUE(UploadPart(*gw_[n % 4].uploads, "parts", u->upload_id, n, Bytes(n, 10)).ok());
  }
  absl::StatusOr<PartsPage> first = gw_[3].uploads->ListParts(kBucket, "parts", u->upload_id, 0, 2);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->parts.size(), 2u);
  EXPECT_TRUE(first->truncated);
  EXPECT_EQ(first->parts[1].part_number, 2u);
  absl::StatusOr<PartsPage> rest =
      gw_[2].uploads->ListParts(kBucket, "parts", u->upload_id, first->next_part_number_marker, 2);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->parts.size(), 2u);
  EXPECT_FALSE(rest->truncated);
  EXPECT_EQ(rest->parts[0].part_number, 3u);
  EXPECT_EQ(rest->parts[1].part_number, 10u);
}

// A Complete whose gateway died after closing the upload leaves its state closing. A part that
// arrives then waits (bounded) for a decision that never comes, then reopens the upload and
// goes in; a later Complete takes the state over.
TEST_F(RadosMultipartTest, APartOutwaitsADeadGatewaysClosingStateAndGoesIn) {
  absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, "k", WriteOptions{}, "");
  ASSERT_TRUE(u.ok()) << u.status();
  // What the dead gateway left: the state swapped to closing four seconds ago.
  rados_t cluster;
  ASSERT_EQ(rados_create2(&cluster, "ceph", "client.admin", 0), 0);
  ASSERT_EQ(rados_conf_read_file(cluster, options_.conf_file.c_str()), 0);
  ASSERT_EQ(rados_connect(cluster), 0);
  rados_ioctx_t io;
  ASSERT_EQ(rados_ioctx_create(cluster, options_.pool.c_str(), &io), 0);
  rados_ioctx_set_namespace(io, options_.ns.c_str());
  const std::string state = rados_format::EncodeUploadState(
      {rados_format::UploadState::kClosing, absl::ToUnixMillis(absl::Now()) - 4000, "deadgw01"});
  rados_write_op_t op = rados_create_write_op();
  const char* keys[] = {rados_format::kStateEntry};
  const size_t key_lens[] = {strlen(rados_format::kStateEntry)};
  const char* vals[] = {state.data()};
  const size_t val_lens[] = {state.size()};
  rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, 1);
  ASSERT_EQ(
      rados_write_op_operate(op, io, rados_format::UploadObject(u->upload_id).c_str(), nullptr, 0),
      0);
  rados_release_write_op(op);
  rados_ioctx_destroy(io);
  rados_shutdown(cluster);

  const absl::Time start = absl::Now();
  const std::string bytes = Bytes(31, 1000);
  absl::StatusOr<ObjectInfo> p = UploadPart(*gw_[1].uploads, "k", u->upload_id, 1, bytes);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << "the wait on a dead gateway is bounded";
  absl::StatusOr<ObjectInfo> done =
      gw_[2].uploads->Complete(kBucket, "k", u->upload_id, {{1, p->etag}});
  ASSERT_TRUE(done.ok()) << done.status();
  absl::StatusOr<std::string> got = Read(*gw_[3].store, "k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, bytes);
}

TEST_F(RadosMultipartTest, UploadsOfADeletedBucketAreGoneAndUnknownIdsAreRefused) {
  EXPECT_EQ(ErrorCodeOf(gw_[0].uploads->Abort(kBucket, "k", "0123456789abcdef0123456789abcdef")),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(gw_[0].uploads->Abort(kBucket, "k", "../../etc")),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(gw_[0].uploads->Create("no-such-bucket", "k", WriteOptions{}, "").status()),
            ErrorCode::kNoSuchBucket);
  absl::StatusOr<UploadInfo> u = gw_[0].uploads->Create(kBucket, "k", WriteOptions{}, "");
  ASSERT_TRUE(u.ok());
  // Another key's name for the same upload ID is not that upload.
  EXPECT_EQ(ErrorCodeOf(gw_[1].uploads->Abort(kBucket, "other", u->upload_id)),
            ErrorCode::kNoSuchUpload);
  ASSERT_TRUE(gw_[1].uploads->Abort(kBucket, "k", u->upload_id).ok());
  ASSERT_TRUE(gw_[2].uploads->DeleteBucket(kBucket).ok());
  ASSERT_TRUE(gw_[3].store->CreateBucket(kBucket).ok());
  EXPECT_EQ(ErrorCodeOf(gw_[0].uploads->ListParts(kBucket, "k", u->upload_id, 0, 0).status()),
            ErrorCode::kNoSuchUpload);
}

}  // namespace
}  // namespace aobj
