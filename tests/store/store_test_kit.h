// ObjectStore conformance kit: the behaviour include/aobj/store.h promises, as GoogleTest
// value-parameterised tests that any ObjectStore implementation can run.
//
// How a vendor runs it against its own store. In exactly ONE test source file (this header
// defines the tests, so including it in two files of one binary registers them twice):
//
//   #include "store/store_test_kit.h"   // or wherever you copied it
//
//   INSTANTIATE_TEST_SUITE_P(
//       MyStore, ObjectStoreConformanceTest,
//       ::testing::Values(aobj::ObjectStoreFactory{
//           "MyStore", [] { return std::unique_ptr<aobj::ObjectStore>(new MyStore(...)); }}),
//       aobj::ObjectStoreFactoryName);
//
// (ObjectStoreConformanceTest lives in namespace aobj; write the instantiation inside
// `namespace aobj { ... }` or name it aobj::ObjectStoreConformanceTest.)
// `make` is called once per test and must return a fresh, empty store; anything it allocates
// (a scratch directory, say) should be released when the returned store is destroyed. Link with
// the aobj_wire library (MD5 and CRC32C for the infos the tests commit), GTest and gtest_main.
//
// Optional features are probed, not assumed: DirectBuffer() tests are skipped when the store
// returns an empty span, and ContiguousView() is only checked when it returns bytes.
// Error codes are checked where the contract names them (kNoSuchBucket, kNoSuchKey,
// kBucketAlreadyExists, kBucketNotEmpty, kPreconditionFailed); misuse such as appending past the
// size or committing too few bytes only has to fail, with any code.
//
// Since issue 4 the kit also covers listing (ListObjects in byte order, prefix, start_after,
// limit; ListBuckets), user metadata, and the commit conditions of WriteOptions (If-None-Match
// "*" and If-Match, atomic against concurrent writers; AOBJ-OBJ-134).
#ifndef AOBJ_TESTS_STORE_STORE_TEST_KIT_H_
#define AOBJ_TESTS_STORE_STORE_TEST_KIT_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "gtest/gtest.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj {

// The test parameter: a named way to build a fresh, empty store.
struct ObjectStoreFactory {
  std::string name;  // test-name suffix: letters, digits and '_' only
  std::function<std::unique_ptr<ObjectStore>()> make;
};

inline void PrintTo(const ObjectStoreFactory& factory, std::ostream* os) { *os << factory.name; }

// Name generator for INSTANTIATE_TEST_SUITE_P.
inline std::string ObjectStoreFactoryName(
    const ::testing::TestParamInfo<ObjectStoreFactory>& info) {
  return info.param.name;
}

class ObjectStoreConformanceTest : public ::testing::TestWithParam<ObjectStoreFactory> {
 protected:
  void SetUp() override {
    store_ = GetParam().make();
    ASSERT_NE(store_, nullptr) << "the factory returned no store";
  }
  void TearDown() override { store_.reset(); }

  ObjectStore& store() { return *store_; }

  std::unique_ptr<ObjectStore> store_;
};

namespace store_test_kit {

#define AOBJ_KIT_ASSERT_OK(expr)                          \
  do {                                                    \
    const absl::Status aobj_kit_status = (expr);          \
    ASSERT_TRUE(aobj_kit_status.ok()) << aobj_kit_status; \
  } while (0)

#define AOBJ_KIT_EXPECT_OK(expr)                          \
  do {                                                    \
    const absl::Status aobj_kit_status = (expr);          \
    EXPECT_TRUE(aobj_kit_status.ok()) << aobj_kit_status; \
  } while (0)

// Compares by registry name so that failures print readably.
#define AOBJ_KIT_EXPECT_CODE(expr, code)                                       \
  do {                                                                         \
    const absl::Status aobj_kit_status = (expr);                               \
    EXPECT_EQ(::aobj::GetErrorInfo(::aobj::ErrorCodeOf(aobj_kit_status)).name, \
              ::aobj::GetErrorInfo(code).name)                                 \
        << aobj_kit_status;                                                    \
  } while (0)

// Deterministic bytes that differ for every seed (splitmix64 stream).
inline std::string Pattern(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < size; i += 8) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (size_t j = 0; j < 8 && i + j < size; ++j) out[i + j] = static_cast<char>(z >> (8 * j));
  }
  return out;
}

inline absl::Span<const uint8_t> AsBytes(std::string_view s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// What the server would pass to Commit for `content`.
inline ObjectInfo InfoFor(std::string_view content) {
  ObjectInfo info;
  info.size = content.size();
  Md5 md5;
  md5.Update(content.data(), content.size());
  info.etag = absl::StrCat("\"", HexEncode(md5.Finish()), "\"");
  info.crc32c = Crc32c(0, content.data(), content.size());
  return info;
}

// Odd chunk sizes, so appends straddle page and block boundaries.
inline constexpr size_t kChunks[] = {1, 7, 333, 4093, 65537, 3, 12289};

inline absl::Status AppendInChunks(ObjectWriter& writer, std::string_view content) {
  size_t pos = 0;
  for (size_t i = 0; pos < content.size(); ++i) {
    const size_t n = std::min(kChunks[i % std::size(kChunks)], content.size() - pos);
    if (absl::Status s = writer.Append(AsBytes(content.substr(pos, n))); !s.ok()) return s;
    pos += n;
  }
  return absl::OkStatus();
}

inline absl::StatusOr<ObjectInfo> Put(ObjectStore& store, std::string_view bucket,
                                      std::string_view key, std::string_view content,
                                      std::string_view content_type = "application/octet-stream") {
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store.BeginPut(bucket, key, content.size(), content_type);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = AppendInChunks(**writer, content); !s.ok()) return s;
  return (*writer)->Commit(InfoFor(content));
}

// Put with WriteOptions (metadata, commit conditions).
inline absl::StatusOr<ObjectInfo> PutWith(ObjectStore& store, std::string_view bucket,
                                          std::string_view key, std::string_view content,
                                          const WriteOptions& options) {
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store.BeginPut(bucket, key, content.size(), options);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = AppendInChunks(**writer, content); !s.ok()) return s;
  return (*writer)->Commit(InfoFor(content));
}

// The keys of a listing, in the order returned.
inline absl::StatusOr<std::vector<std::string>> ListKeys(ObjectStore& store,
                                                         std::string_view bucket,
                                                         std::string_view prefix = "",
                                                         std::string_view start_after = "",
                                                         size_t limit = 100000) {
  absl::StatusOr<std::vector<ObjectSummary>> list =
      store.ListObjects(bucket, prefix, start_after, limit);
  if (!list.ok()) return list.status();
  std::vector<std::string> keys;
  for (const ObjectSummary& s : *list) keys.push_back(s.key);
  return keys;
}

// Reads the whole object with ReadAt in `chunk`-byte steps; checks the count against info().
inline absl::StatusOr<std::string> ReadAll(ObjectReader& reader, size_t chunk = 5000) {
  std::string out;
  std::vector<uint8_t> buf(chunk);
  for (;;) {
    absl::StatusOr<size_t> n = reader.ReadAt(out.size(), absl::MakeSpan(buf));
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    if (*n > chunk) return absl::InternalError("ReadAt returned more than asked");
    out.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
  if (out.size() != reader.info().size) {
    return absl::InternalError(
        absl::StrCat("read ", out.size(), " bytes, info().size is ", reader.info().size));
  }
  return out;
}

inline absl::StatusOr<std::string> Get(ObjectStore& store, std::string_view bucket,
                                       std::string_view key) {
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store.OpenRead(bucket, key);
  if (!reader.ok()) return reader.status();
  return ReadAll(**reader);
}

// Whether the store offers DirectBuffer() (probed with an aborted 1-byte write).
inline bool SupportsDirectBuffer(ObjectStore& store, std::string_view bucket) {
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store.BeginPut(bucket, "probe", 1, "");
  return writer.ok() && !(*writer)->DirectBuffer().empty();
}

// Byte-for-byte comparison that reports the first difference instead of dumping megabytes.
inline ::testing::AssertionResult SameBytes(std::string_view expected, std::string_view actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  }
  auto [e, a] = std::mismatch(expected.begin(), expected.end(), actual.begin());
  if (e != expected.end()) {
    return ::testing::AssertionFailure() << "first difference at byte " << (e - expected.begin());
  }
  return ::testing::AssertionSuccess();
}

inline constexpr size_t kRoundTripSizes[] = {0, 1, 4095, 4096, 4097, (1u << 20) + 3};

// Version `v` of the object raced on by the concurrency tests: its number in the first four
// bytes, then a pattern unique to `v`; sizes differ between versions.
inline std::string VersionContent(uint32_t v) {
  std::string out = Pattern(v + 1000, 1000 + (v * 7919u) % 40000u);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

// Empty when `content` is exactly one complete version below `versions`; otherwise what is wrong.
inline std::string CheckVersion(std::string_view content, uint32_t versions) {
  if (content.size() < 4) return absl::StrCat("object of ", content.size(), " bytes");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(content[i])} << (8 * i);
  if (v >= versions) return absl::StrCat("unknown version ", v);
  if (content != VersionContent(v)) {
    return absl::StrCat("torn or mixed object claiming version ", v, ": ",
                        SameBytes(VersionContent(v), content).message());
  }
  return "";
}

// Collects failures from worker threads (gtest assertions belong on the main thread).
class FailureLog {
 public:
  void Add(std::string message) {
    absl::MutexLock lock(&mu_);
    if (messages_.size() < 10) messages_.push_back(std::move(message));
    ++count_;
  }
  int count() {
    absl::MutexLock lock(&mu_);
    return count_;
  }
  std::string Summary() {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const std::string& m : messages_) absl::StrAppend(&out, m, "\n");
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> messages_ ABSL_GUARDED_BY(mu_);
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace store_test_kit

// ---- buckets -------------------------------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, CreateHeadDeleteBucket) {
  AOBJ_KIT_EXPECT_CODE(store().HeadBucket("b1"), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("b1"));
  AOBJ_KIT_EXPECT_OK(store().HeadBucket("b1"));
  // AOBJ-OBJ-006
  AOBJ_KIT_EXPECT_CODE(store().CreateBucket("b1"), ErrorCode::kBucketAlreadyExists);
  AOBJ_KIT_EXPECT_CODE(store().HeadBucket("b2"), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("b1"));
  AOBJ_KIT_EXPECT_CODE(store().HeadBucket("b1"), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_CODE(store().DeleteBucket("b1"), ErrorCode::kNoSuchBucket);
  // A deleted bucket can be created again, empty.
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("b1"));
  AOBJ_KIT_EXPECT_OK(store().HeadBucket("b1"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("b1"));
}

TEST_P(ObjectStoreConformanceTest, DeleteBucketRefusesNonEmptyBucket) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", "v").status());
  AOBJ_KIT_EXPECT_CODE(store().DeleteBucket("bucket"), ErrorCode::kBucketNotEmpty);  // AOBJ-OBJ-006
  AOBJ_KIT_EXPECT_OK(store().HeadBucket("bucket"));
  absl::StatusOr<std::string> got = Get(store(), "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "v");
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

TEST_P(ObjectStoreConformanceTest, ConcurrentCreateBucketHasOneWinner) {
  constexpr int kThreads = 8;
  std::atomic<int> created{0}, already{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      const absl::Status s = store().CreateBucket("contested");
      if (s.ok()) {
        ++created;
      } else if (ErrorCodeOf(s) == ErrorCode::kBucketAlreadyExists) {
        ++already;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(already.load(), kThreads - 1);
  EXPECT_EQ(other.load(), 0);
}

TEST_P(ObjectStoreConformanceTest, BucketsAreIndependent) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("one"));
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("two"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "one", "key", "from one").status());
  AOBJ_KIT_ASSERT_OK(Put(store(), "two", "key", "from two!").status());
  EXPECT_EQ(Get(store(), "one", "key").value_or("<error>"), "from one");
  EXPECT_EQ(Get(store(), "two", "key").value_or("<error>"), "from two!");
  AOBJ_KIT_ASSERT_OK(store().Delete("one", "key"));
  AOBJ_KIT_EXPECT_CODE(store().Head("one", "key").status(), ErrorCode::kNoSuchKey);
  EXPECT_EQ(Get(store(), "two", "key").value_or("<error>"), "from two!");
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("one"));
  AOBJ_KIT_EXPECT_CODE(store().DeleteBucket("two"), ErrorCode::kBucketNotEmpty);
}

// ---- missing buckets and keys --------------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, ObjectOperationsOnMissingBucketFailWithNoSuchBucket) {
  AOBJ_KIT_EXPECT_CODE(store().BeginPut("nobucket", "k", 1, "").status(), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_CODE(store().OpenRead("nobucket", "k").status(), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_CODE(store().Head("nobucket", "k").status(), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_CODE(store().Delete("nobucket", "k"), ErrorCode::kNoSuchBucket);
}

TEST_P(ObjectStoreConformanceTest, MissingKeyFailsWithNoSuchKey) {
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_EXPECT_CODE(store().OpenRead("bucket", "absent").status(), ErrorCode::kNoSuchKey);
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "absent").status(), ErrorCode::kNoSuchKey);
}

TEST_P(ObjectStoreConformanceTest, DeleteIsIdempotent) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_EXPECT_OK(store().Delete("bucket", "never-existed"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", "data").status());
  AOBJ_KIT_EXPECT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
  AOBJ_KIT_EXPECT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

// ---- round trips ---------------------------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, RoundTripWithAppendInOddChunks) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  for (size_t size : kRoundTripSizes) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    const std::string key = absl::StrCat("obj-", size);
    const std::string content = Pattern(size, size);
    absl::StatusOr<ObjectInfo> put = Put(store(), "bucket", key, content);
    ASSERT_TRUE(put.ok()) << put.status();
    EXPECT_EQ(put->size, size);

    absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", key);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->info().size, size);
    for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{4097}, size_t{3}}) {
      if (chunk < 16 && size > 100000) continue;  // byte-sized reads of a megabyte: too slow
      absl::StatusOr<std::string> got = ReadAll(**reader, chunk);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(SameBytes(content, *got)) << "chunk " << chunk;
    }
    const absl::Span<const uint8_t> view = (*reader)->ContiguousView();
    if (!view.empty()) {
      EXPECT_TRUE(SameBytes(
          content, std::string_view(reinterpret_cast<const char*>(view.data()), view.size())));
    }
  }
}

TEST_P(ObjectStoreConformanceTest, RoundTripWithDirectBuffer) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  if (!SupportsDirectBuffer(store(), "bucket")) GTEST_SKIP() << "store has no DirectBuffer";
  for (size_t size : kRoundTripSizes) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    const std::string key = absl::StrCat("direct-", size);
    const std::string content = Pattern(size + 1, size);
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
        store().BeginPut("bucket", key, size, "application/x-direct");
    ASSERT_TRUE(writer.ok()) << writer.status();
    absl::Span<uint8_t> direct = (*writer)->DirectBuffer();
    if (direct.empty() && size > 0) {
      // A store may offer the view up to some size only (RadosStore: one stripe); then the
      // writer must still take the bytes by Append.
      AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, content));
    } else {
      ASSERT_EQ(direct.size(), size);
      if (size > 0) std::memcpy(direct.data(), content.data(), size);
    }
    absl::StatusOr<ObjectInfo> committed = (*writer)->Commit(InfoFor(content));
    ASSERT_TRUE(committed.ok()) << committed.status();
    writer->reset();
    absl::StatusOr<std::string> got = Get(store(), "bucket", key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBytes(content, *got));
  }
}

TEST_P(ObjectStoreConformanceTest, ReadAtHonoursOffsetsAndEnd) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string content = Pattern(7, 10000);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", content).status());
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "k");
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<uint8_t> buf(100);
  auto read_at = [&](uint64_t offset, size_t len) -> std::string {
    absl::StatusOr<size_t> n = (*reader)->ReadAt(offset, absl::MakeSpan(buf.data(), len));
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? std::string(reinterpret_cast<const char*>(buf.data()), *n) : "<error>";
  };
  EXPECT_EQ(read_at(0, 100), content.substr(0, 100));
  EXPECT_EQ(read_at(4321, 77), content.substr(4321, 77));
  EXPECT_EQ(read_at(9990, 100), content.substr(9990));  // short read at the end
  EXPECT_EQ(read_at(9999, 100), content.substr(9999));
  EXPECT_EQ(read_at(10000, 100), "");
  EXPECT_EQ(read_at(1u << 30, 100), "");
  EXPECT_EQ(read_at(5, 0), "");
}

TEST_P(ObjectStoreConformanceTest, HeadReturnsWhatCommitRecorded) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string content = Pattern(3, 12345);
  const int64_t before_ms = absl::ToUnixMillis(absl::Now());  // AOBJ-OBJ-007: commit time
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store().BeginPut("bucket", "doc.txt", content.size(), "text/plain; charset=utf-8");
  ASSERT_TRUE(writer.ok()) << writer.status();
  AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, content));
  const ObjectInfo given = InfoFor(content);
  absl::StatusOr<ObjectInfo> committed = (*writer)->Commit(given);
  ASSERT_TRUE(committed.ok()) << committed.status();
  writer->reset();
  const int64_t after_ms = absl::ToUnixMillis(absl::Now());

  EXPECT_EQ(committed->size, content.size());
  EXPECT_EQ(committed->etag, given.etag);
  EXPECT_EQ(committed->crc32c, given.crc32c);
  EXPECT_EQ(committed->content_type, "text/plain; charset=utf-8");
  // The store sets the time; allow a second of slack for coarse clocks.
  EXPECT_GE(committed->last_modified_ms, before_ms - 1000);
  EXPECT_LE(committed->last_modified_ms, after_ms + 1000);

  absl::StatusOr<ObjectInfo> head = store().Head("bucket", "doc.txt");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, committed->size);
  EXPECT_EQ(head->etag, committed->etag);
  EXPECT_EQ(head->crc32c, committed->crc32c);
  EXPECT_EQ(head->content_type, committed->content_type);
  EXPECT_EQ(head->last_modified_ms, committed->last_modified_ms);

  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "doc.txt");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().size, committed->size);
  EXPECT_EQ((*reader)->info().etag, committed->etag);
  EXPECT_EQ((*reader)->info().crc32c, committed->crc32c);
  EXPECT_EQ((*reader)->info().content_type, committed->content_type);
  EXPECT_EQ((*reader)->info().last_modified_ms, committed->last_modified_ms);
}

TEST_P(ObjectStoreConformanceTest, EmptyObjectAndEmptyContentType) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  absl::StatusOr<ObjectInfo> put = Put(store(), "bucket", "empty", "", "");
  ASSERT_TRUE(put.ok()) << put.status();
  absl::StatusOr<ObjectInfo> head = store().Head("bucket", "empty");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, 0u);
  EXPECT_EQ(head->content_type, "");
  EXPECT_EQ(head->etag, InfoFor("").etag);
  EXPECT_EQ(Get(store(), "bucket", "empty").value_or("<error>"), "");
}

TEST_P(ObjectStoreConformanceTest, UnusualKeysAreDistinctObjects) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  std::string long_key;
  while (long_key.size() < 1020) long_key += "dir/\xC3\xBC";  // "dir/ü", 6 bytes
  long_key += "tail";
  ASSERT_EQ(long_key.size(), 1024u);
  const std::vector<std::string> keys = {
      "a/b/c",
      "/leading-slash",
      "trailing-slash/",
      "a//b",
      "a",
      "a/",
      "Key",
      "key",
      "with space and\ttab",
      ".",
      "..",
      "../../escape",
      "%2F%00",
      "\xC3\xBCnic\xC3\xB6"
      "de/\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E/\xF0\x9F\x99\x82",
      long_key,
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("key #", i));
    absl::StatusOr<ObjectInfo> put = Put(store(), "bucket", keys[i], Pattern(i, 100 + i));
    ASSERT_TRUE(put.ok()) << put.status();
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("key #", i));
    absl::StatusOr<std::string> got = Get(store(), "bucket", keys[i]);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBytes(Pattern(i, 100 + i), *got));
  }
  for (const std::string& key : keys) AOBJ_KIT_EXPECT_OK(store().Delete("bucket", key));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

// ---- atomicity -----------------------------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, OverwriteReplacesTheWholeObject) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", Pattern(1, 100000), "old/type").status());
  const std::string shorter = Pattern(2, 100);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", shorter, "new/type").status());
  absl::StatusOr<std::string> got = Get(store(), "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBytes(shorter, *got));
  absl::StatusOr<ObjectInfo> head = store().Head("bucket", "k");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, 100u);
  EXPECT_EQ(head->etag, InfoFor(shorter).etag);
  EXPECT_EQ(head->content_type, "new/type");
}

TEST_P(ObjectStoreConformanceTest, ReaderKeepsItsVersionAcrossOverwrite) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string old_content = Pattern(10, 300000);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", old_content).status());
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "k");
  ASSERT_TRUE(reader.ok()) << reader.status();
  // Read a little before the overwrite, the rest after it.
  std::vector<uint8_t> first(1000);
  absl::StatusOr<size_t> n = (*reader)->ReadAt(0, absl::MakeSpan(first));
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(*n, first.size());

  const std::string new_content = Pattern(11, 5000);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", new_content).status());

  EXPECT_EQ((*reader)->info().size, old_content.size());
  EXPECT_EQ((*reader)->info().etag, InfoFor(old_content).etag);
  absl::StatusOr<std::string> old_got = ReadAll(**reader);
  ASSERT_TRUE(old_got.ok()) << old_got.status();
  EXPECT_TRUE(SameBytes(old_content, *old_got));
  absl::StatusOr<std::string> new_got = Get(store(), "bucket", "k");
  ASSERT_TRUE(new_got.ok()) << new_got.status();
  EXPECT_TRUE(SameBytes(new_content, *new_got));
}

TEST_P(ObjectStoreConformanceTest, ReaderKeepsItsVersionAcrossDelete) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string content = Pattern(12, 70000);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", content).status());
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "k");
  ASSERT_TRUE(reader.ok()) << reader.status();
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
  absl::StatusOr<std::string> got = ReadAll(**reader);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBytes(content, *got));
}

TEST_P(ObjectStoreConformanceTest, AbortedWriterLeavesNoTrace) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string content = Pattern(20, 50000);
  {
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
        store().BeginPut("bucket", "k", content.size(), "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, content.substr(0, 20000)));
    AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
  }
  {
    // Fully written but never committed.
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
        store().BeginPut("bucket", "k", content.size(), "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, content));
  }
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
  AOBJ_KIT_EXPECT_CODE(store().OpenRead("bucket", "k").status(), ErrorCode::kNoSuchKey);
  // No hidden leftovers keep the bucket from being deleted.
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

TEST_P(ObjectStoreConformanceTest, AbortedOverwriteKeepsThePreviousObject) {
  // AOBJ-OBJ-014
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string old_content = Pattern(21, 9000);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", old_content).status());
  {
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store().BeginPut("bucket", "k", 100, "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, Pattern(22, 100)));
  }
  absl::StatusOr<std::string> got = Get(store(), "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBytes(old_content, *got));
}

TEST_P(ObjectStoreConformanceTest, CommitWithTooFewBytesFailsAndKeepsThePreviousObject) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string old_content = Pattern(30, 4097);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", old_content).status());
  const std::string new_content = Pattern(31, 8192);
  {
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
        store().BeginPut("bucket", "k", new_content.size(), "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, std::string_view(new_content).substr(0, 8191)));
    absl::StatusOr<ObjectInfo> committed = (*writer)->Commit(InfoFor(new_content));
    EXPECT_FALSE(committed.ok()) << "committed " << 8191 << " of " << new_content.size();
  }
  absl::StatusOr<std::string> got = Get(store(), "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBytes(old_content, *got));
  // Nothing of the failed write remains.
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

TEST_P(ObjectStoreConformanceTest, AppendPastTheSizeFails) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store().BeginPut("bucket", "k", 10, "");
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_FALSE((*writer)->Append(AsBytes(Pattern(1, 11))).ok());
  writer = store().BeginPut("bucket", "k", 10, "");
  ASSERT_TRUE(writer.ok()) << writer.status();
  AOBJ_KIT_ASSERT_OK((*writer)->Append(AsBytes(Pattern(1, 10))));
  EXPECT_FALSE((*writer)->Append(AsBytes("x")).ok());
  writer->reset();
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
}

TEST_P(ObjectStoreConformanceTest, CommitAfterBucketDeletedDoesNotResurrectIt) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  const std::string content = Pattern(40, 3000);
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store().BeginPut("bucket", "k", content.size(), "");
  ASSERT_TRUE(writer.ok()) << writer.status();
  AOBJ_KIT_ASSERT_OK(AppendInChunks(**writer, content));
  const absl::Status deleted = store().DeleteBucket("bucket");
  if (!deleted.ok()) {
    // A store may count writes in flight as contents.
    AOBJ_KIT_EXPECT_CODE(deleted, ErrorCode::kBucketNotEmpty);
    return;
  }
  EXPECT_FALSE((*writer)->Commit(InfoFor(content)).ok());
  writer->reset();
  AOBJ_KIT_EXPECT_CODE(store().HeadBucket("bucket"), ErrorCode::kNoSuchBucket);
  // Nor does it land in a new bucket of the same name.
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_EXPECT_CODE(store().Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
}

// ---- concurrency ---------------------------------------------------------------------------

// Writers overwrite one key with distinct versions while readers read it in small steps; every
// read must be exactly one complete version (AOBJ-OBJ-010).
TEST_P(ObjectStoreConformanceTest, ConcurrentWritersAndReadersOnOneKeySeeWholeVersions) {
  using namespace store_test_kit;
  constexpr uint32_t kWriters = 4;
  constexpr uint32_t kVersionsPerWriter = 20;
  constexpr uint32_t kVersions = 1 + kWriters * kVersionsPerWriter;
  constexpr int kReaders = 4;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "hot", VersionContent(0)).status());

  FailureLog failures;
  std::atomic<int> writers_left{static_cast<int>(kWriters)};
  std::atomic<int> reads{0};
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint32_t i = 0; i < kVersionsPerWriter; ++i) {
        const uint32_t v = 1 + w * kVersionsPerWriter + i;
        absl::StatusOr<ObjectInfo> put = Put(store(), "bucket", "hot", VersionContent(v));
        if (!put.ok()) failures.Add(absl::StrCat("put v", v, ": ", put.status().ToString()));
      }
      --writers_left;
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      // At least a few reads each, then until the writers are done.
      for (int i = 0; i < 3 || writers_left.load() > 0; ++i) {
        absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "hot");
        if (!reader.ok()) {
          failures.Add(absl::StrCat("open: ", reader.status().ToString()));
          continue;
        }
        absl::StatusOr<std::string> got = ReadAll(**reader, 1000 + 997 * r);
        if (!got.ok()) {
          failures.Add(absl::StrCat("read: ", got.status().ToString()));
          continue;
        }
        if (std::string problem = CheckVersion(*got, kVersions); !problem.empty()) {
          failures.Add(problem);
        } else if ((*reader)->info().etag != InfoFor(*got).etag) {
          failures.Add("info() etag does not match the content read");
        }
        ++reads;
        absl::StatusOr<ObjectInfo> head = store().Head("bucket", "hot");
        if (!head.ok()) failures.Add(absl::StrCat("head: ", head.status().ToString()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
  EXPECT_GE(reads.load(), 3 * kReaders);
  absl::StatusOr<std::string> last = Get(store(), "bucket", "hot");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(CheckVersion(*last, kVersions), "");
}

// Deletes race with puts and reads: a reader sees NoSuchKey or one complete version.
TEST_P(ObjectStoreConformanceTest, ConcurrentDeletesNeverExposePartialObjects) {
  using namespace store_test_kit;
  constexpr uint32_t kVersions = 40;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  FailureLog failures;
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (uint32_t v = 0; v < kVersions; ++v) {
      absl::StatusOr<ObjectInfo> put = Put(store(), "bucket", "k", VersionContent(v));
      if (!put.ok()) failures.Add(absl::StrCat("put: ", put.status().ToString()));
    }
    done = true;
  });
  threads.emplace_back([&] {
    while (!done.load()) {
      if (absl::Status s = store().Delete("bucket", "k"); !s.ok()) {
        failures.Add(absl::StrCat("delete: ", s.ToString()));
      }
    }
  });
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&] {
      while (!done.load()) {
        absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "k");
        if (!reader.ok()) {
          if (ErrorCodeOf(reader.status()) != ErrorCode::kNoSuchKey) {
            failures.Add(absl::StrCat("open: ", reader.status().ToString()));
          }
          continue;
        }
        absl::StatusOr<std::string> got = ReadAll(**reader, 4096);
        if (!got.ok()) {
          failures.Add(absl::StrCat("read: ", got.status().ToString()));
        } else if (std::string problem = CheckVersion(*got, kVersions); !problem.empty()) {
          failures.Add(problem);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
}

// Many keys written from many threads at once all land intact.
TEST_P(ObjectStoreConformanceTest, ConcurrentWritersOnDistinctKeys) {
  using namespace store_test_kit;
  constexpr int kThreads = 6;
  constexpr int kKeysPerThread = 15;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  FailureLog failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeysPerThread; ++i) {
        const int id = t * kKeysPerThread + i;
        absl::StatusOr<ObjectInfo> put =
            Put(store(), "bucket", absl::StrCat("dir/", id), Pattern(id, 100 * id));
        if (!put.ok()) failures.Add(put.status().ToString());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.count(), 0) << failures.Summary();
  for (int id = 0; id < kThreads * kKeysPerThread; ++id) {
    absl::StatusOr<std::string> got = Get(store(), "bucket", absl::StrCat("dir/", id));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBytes(Pattern(id, 100 * id), *got)) << "key dir/" << id;
  }
}

// ---- listing (AOBJ-OBJ-100) --------------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, ListObjectsIsInByteOrder) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  // Unsigned octet order: upper case before lower case, '/' (0x2F) before '0', and multi-byte
  // UTF-8 (0xC3..., 0xE6..., 0xF0...) after all of ASCII, including 0x7F.
  const std::vector<std::string> sorted = {
      "A",  "B/x", "Z", "a",    "a b",      "a!",         "a/",           "a/b",
      "a0", "ab",  "b", "\x7F", "\xC3\xA4", "\xC3\xBC/x", "\xE6\x97\xA5", "\xF0\x9F\x99\x82",
  };
  std::vector<std::string> shuffled = sorted;
  std::reverse(shuffled.begin(), shuffled.end());
  std::swap(shuffled[2], shuffled[9]);
  for (const std::string& key : shuffled) {
    AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", key, key).status());
  }
  absl::StatusOr<std::vector<std::string>> keys = ListKeys(store(), "bucket");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(*keys, sorted);
}

TEST_P(ObjectStoreConformanceTest, ListObjectsHonoursPrefixStartAfterAndLimit) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  for (const char* key : {"a", "dir/1", "dir/2", "dir/3", "dir/sub/4", "dir0", "dis", "z"}) {
    AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", key, key).status());
  }
  using Keys = std::vector<std::string>;
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/").value_or(Keys{"<error>"}),
            (Keys{"dir/1", "dir/2", "dir/3", "dir/sub/4"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "dir").value_or(Keys{"<error>"}),
            (Keys{"dir/1", "dir/2", "dir/3", "dir/sub/4", "dir0"}));
  // start_after is exclusive and need not be a key.
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/", "dir/2").value_or(Keys{"<error>"}),
            (Keys{"dir/3", "dir/sub/4"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/", "dir/20").value_or(Keys{"<error>"}),
            (Keys{"dir/3", "dir/sub/4"}));
  // start_after before the prefix range, and past it.
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/", "a").value_or(Keys{"<error>"}),
            (Keys{"dir/1", "dir/2", "dir/3", "dir/sub/4"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/", "dir0").value_or(Keys{"<error>"}), Keys{});
  EXPECT_EQ(ListKeys(store(), "bucket", "", "dis").value_or(Keys{"<error>"}), (Keys{"z"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "", "z").value_or(Keys{"<error>"}), Keys{});
  EXPECT_EQ(ListKeys(store(), "bucket", "nothing").value_or(Keys{"<error>"}), Keys{});
  // limit
  EXPECT_EQ(ListKeys(store(), "bucket", "", "", 3).value_or(Keys{"<error>"}),
            (Keys{"a", "dir/1", "dir/2"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "dir/", "dir/1", 1).value_or(Keys{"<error>"}),
            (Keys{"dir/2"}));
  EXPECT_EQ(ListKeys(store(), "bucket", "", "", 0).value_or(Keys{"<error>"}), Keys{});
  EXPECT_EQ(ListKeys(store(), "bucket", "", "", 8).value_or(Keys{"<error>"}).size(), 8u);
}

TEST_P(ObjectStoreConformanceTest, ListObjectsReportsWhatHeadReports) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "empty", "").status());
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "data", Pattern(5, 7777)).status());
  absl::StatusOr<std::vector<ObjectSummary>> list = store().ListObjects("bucket", "", "", 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  for (const ObjectSummary& s : *list) {
    SCOPED_TRACE(s.key);
    absl::StatusOr<ObjectInfo> head = store().Head("bucket", s.key);
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_EQ(s.size, head->size);
    EXPECT_EQ(s.etag, head->etag);
    EXPECT_EQ(s.last_modified_ms, head->last_modified_ms);
  }
  EXPECT_EQ((*list)[0].key, "data");
  EXPECT_EQ((*list)[0].size, 7777u);
  EXPECT_EQ((*list)[1].size, 0u);
}

TEST_P(ObjectStoreConformanceTest, ListObjectsFollowsOverwritesDeletesAndAborts) {
  using namespace store_test_kit;
  using Keys = std::vector<std::string>;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k1", "one").status());
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k2", "two").status());
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k2", "two, longer").status());
  {
    // Written but never committed: not listed.
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store().BeginPut("bucket", "k3", 1, "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    AOBJ_KIT_ASSERT_OK((*writer)->Append(AsBytes("x")));
    EXPECT_EQ(ListKeys(store(), "bucket").value_or(Keys{"<error>"}), (Keys{"k1", "k2"}));
  }
  absl::StatusOr<std::vector<ObjectSummary>> list = store().ListObjects("bucket", "k2", "", 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].size, 11u);
  EXPECT_EQ((*list)[0].etag, InfoFor("two, longer").etag);
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k1"));
  EXPECT_EQ(ListKeys(store(), "bucket").value_or(Keys{"<error>"}), (Keys{"k2"}));
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k2"));
  EXPECT_EQ(ListKeys(store(), "bucket").value_or(Keys{"<error>"}), Keys{});
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
  AOBJ_KIT_EXPECT_CODE(store().ListObjects("bucket", "", "", 10).status(),
                       ErrorCode::kNoSuchBucket);
  // A re-created bucket starts empty.
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  EXPECT_EQ(ListKeys(store(), "bucket").value_or(Keys{"<error>"}), Keys{});
}

TEST_P(ObjectStoreConformanceTest, ListObjectsOfMissingBucketFails) {
  AOBJ_KIT_EXPECT_CODE(store().ListObjects("nobucket", "", "", 10).status(),
                       ErrorCode::kNoSuchBucket);
}

TEST_P(ObjectStoreConformanceTest, ListBucketsIsSortedWithCreationTimes) {
  const int64_t before_ms = absl::ToUnixMillis(absl::Now());
  absl::StatusOr<std::vector<BucketSummary>> none = store().ListBuckets();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  for (const char* name : {"zeta", "alpha", "mid-1", "mid.0"}) {
    AOBJ_KIT_ASSERT_OK(store().CreateBucket(name));
  }
  const int64_t after_ms = absl::ToUnixMillis(absl::Now());
  absl::StatusOr<std::vector<BucketSummary>> list = store().ListBuckets();
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::string> names;
  for (const BucketSummary& b : *list) {
    names.push_back(b.name);
    EXPECT_GE(b.creation_time_ms, before_ms - 1000) << b.name;
    EXPECT_LE(b.creation_time_ms, after_ms + 1000) << b.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "mid-1", "mid.0", "zeta"}));
  AOBJ_KIT_ASSERT_OK(store().DeleteBucket("mid-1"));
  list = store().ListBuckets();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->size(), 3u);
}

// Keys written from several threads while others list: every listing is sorted, and once the
// writers are done it holds every key exactly once.
TEST_P(ObjectStoreConformanceTest, ListingDuringConcurrentWritesStaysSorted) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  constexpr int kThreads = 4;
  constexpr int kKeysPerThread = 40;
  FailureLog failures;
  std::atomic<int> writers_left{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeysPerThread; ++i) {
        absl::StatusOr<ObjectInfo> put =
            Put(store(), "bucket", absl::StrCat("k/", i, "/", t), Pattern(i, 10));
        if (!put.ok()) failures.Add(put.status().ToString());
      }
      --writers_left;
    });
  }
  threads.emplace_back([&] {
    while (writers_left.load() > 0) {
      absl::StatusOr<std::vector<std::string>> keys = ListKeys(store(), "bucket", "k/");
      if (!keys.ok()) {
        failures.Add(keys.status().ToString());
      } else if (!std::is_sorted(keys->begin(), keys->end()) ||
                 std::adjacent_find(keys->begin(), keys->end()) != keys->end()) {
        failures.Add("a listing is not strictly ascending");
      }
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
  absl::StatusOr<std::vector<std::string>> keys = ListKeys(store(), "bucket");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), static_cast<size_t>(kThreads * kKeysPerThread));
}

// ---- user metadata (AOBJ-OBJ-120) ---------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, UserMetadataIsStoredAndReplacedByOverwrite) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  WriteOptions options;
  options.content_type = "text/plain";
  options.user_metadata = {{"owner", "alice"}, {"empty", ""}, {"unicode", "gr\xC3\xBC\xC3\x9F"}};
  absl::StatusOr<ObjectInfo> put = PutWith(store(), "bucket", "k", "hello", options);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->user_metadata, options.user_metadata);
  EXPECT_EQ(put->content_type, "text/plain");
  absl::StatusOr<ObjectInfo> head = store().Head("bucket", "k");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->user_metadata, options.user_metadata);
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store().OpenRead("bucket", "k");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->info().user_metadata, options.user_metadata);
  // An overwrite without metadata drops it; the reader keeps its version's.
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", "bye").status());
  head = store().Head("bucket", "k");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_TRUE(head->user_metadata.empty());
  EXPECT_EQ((*reader)->info().user_metadata, options.user_metadata);
}

TEST_P(ObjectStoreConformanceTest, UserMetadataAtTheServerLimitFits) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  WriteOptions options;
  // 2 KiB of names and values in many small pairs, the most the server lets through.
  for (int i = 0; i < 128; ++i) {
    options.user_metadata[absl::StrCat("n", 1000 + i)] = std::string(11, 'v');
  }
  absl::StatusOr<ObjectInfo> put = PutWith(store(), "bucket", "k", Pattern(1, 4097), options);
  ASSERT_TRUE(put.ok()) << put.status();
  absl::StatusOr<ObjectInfo> head = store().Head("bucket", "k");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->user_metadata, options.user_metadata);
  EXPECT_TRUE(SameBytes(Pattern(1, 4097), Get(store(), "bucket", "k").value_or("<error>")));
}

// ---- commit conditions (AOBJ-OBJ-134) ------------------------------------------------------

TEST_P(ObjectStoreConformanceTest, CreateOnlyCommitFailsWhenTheKeyExists) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  WriteOptions create_only;
  create_only.if_none_match_star = true;
  absl::StatusOr<ObjectInfo> first = PutWith(store(), "bucket", "k", "first", create_only);
  ASSERT_TRUE(first.ok()) << first.status();
  AOBJ_KIT_EXPECT_CODE(PutWith(store(), "bucket", "k", "second", create_only).status(),
                       ErrorCode::kPreconditionFailed);
  // AOBJ-OBJ-135: the key is unchanged.
  EXPECT_EQ(Get(store(), "bucket", "k").value_or("<error>"), "first");
  // After a delete the key may be created again.
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(PutWith(store(), "bucket", "k", "third", create_only).status());
  EXPECT_EQ(Get(store(), "bucket", "k").value_or("<error>"), "third");
  // A failed conditional commit leaves nothing behind.
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));
}

TEST_P(ObjectStoreConformanceTest, IfMatchCommitComparesTheCurrentEtag) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  WriteOptions if_match;
  if_match.if_match_etag = InfoFor("v1").etag;
  AOBJ_KIT_EXPECT_CODE(PutWith(store(), "bucket", "k", "v2", if_match).status(),
                       ErrorCode::kNoSuchKey);
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "k", "v1").status());
  AOBJ_KIT_EXPECT_OK(PutWith(store(), "bucket", "k", "v2", if_match).status());
  // The etag is now v2's: the same condition fails.
  AOBJ_KIT_EXPECT_CODE(PutWith(store(), "bucket", "k", "v3", if_match).status(),
                       ErrorCode::kPreconditionFailed);
  EXPECT_EQ(Get(store(), "bucket", "k").value_or("<error>"), "v2");
  WriteOptions any;
  any.if_match_etag = "*";
  AOBJ_KIT_EXPECT_OK(PutWith(store(), "bucket", "k", "v4", any).status());
  AOBJ_KIT_EXPECT_CODE(PutWith(store(), "bucket", "absent", "v", any).status(),
                       ErrorCode::kNoSuchKey);
  EXPECT_EQ(Get(store(), "bucket", "k").value_or("<error>"), "v4");
}

// The condition is evaluated at Commit, not at BeginPut: a writer that began while the key was
// absent loses to one that committed first.
TEST_P(ObjectStoreConformanceTest, CommitConditionIsEvaluatedAtCommit) {
  using namespace store_test_kit;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  WriteOptions create_only;
  create_only.if_none_match_star = true;
  absl::StatusOr<std::unique_ptr<ObjectWriter>> slow =
      store().BeginPut("bucket", "k", 4, create_only);
  ASSERT_TRUE(slow.ok()) << slow.status();
  AOBJ_KIT_ASSERT_OK((*slow)->Append(AsBytes("slow")));
  AOBJ_KIT_ASSERT_OK(PutWith(store(), "bucket", "k", "fast", create_only).status());
  AOBJ_KIT_EXPECT_CODE((*slow)->Commit(InfoFor("slow")).status(), ErrorCode::kPreconditionFailed);
  slow->reset();
  EXPECT_EQ(Get(store(), "bucket", "k").value_or("<error>"), "fast");
  AOBJ_KIT_ASSERT_OK(store().Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));  // no leftovers of the losing writer
}

// Many create-only writers race for one key: exactly one wins, and the object is the winner's.
TEST_P(ObjectStoreConformanceTest, ConcurrentCreateOnlyCommitsHaveOneWinner) {
  using namespace store_test_kit;
  constexpr int kThreads = 8;
  constexpr int kRounds = 10;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const std::string key = absl::StrCat("contested-", round);
    std::atomic<int> won{0}, lost{0}, other{0};
    std::atomic<int> winner{-1};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        WriteOptions create_only;
        create_only.if_none_match_star = true;
        absl::StatusOr<ObjectInfo> put =
            PutWith(store(), "bucket", key, VersionContent(static_cast<uint32_t>(t)), create_only);
        if (put.ok()) {
          ++won;
          winner = t;
        } else if (ErrorCodeOf(put.status()) == ErrorCode::kPreconditionFailed) {
          ++lost;
        } else {
          ++other;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(won.load(), 1);
    EXPECT_EQ(lost.load(), kThreads - 1);
    EXPECT_EQ(other.load(), 0);
    absl::StatusOr<std::string> got = Get(store(), "bucket", key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBytes(VersionContent(static_cast<uint32_t>(winner.load())), *got));
  }
}

// Compare-and-swap: threads increment a counter object with If-Match on the etag they read; no
// increment is lost, which needs the If-Match check and the swap to be atomic.
TEST_P(ObjectStoreConformanceTest, IfMatchCommitsAreCompareAndSwap) {
  using namespace store_test_kit;
  constexpr int kThreads = 4;
  constexpr int kIncrements = 15;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "counter", "0").status());
  FailureLog failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        absl::StatusOr<std::unique_ptr<ObjectReader>> reader =
            store().OpenRead("bucket", "counter");
        if (!reader.ok()) {
          failures.Add(reader.status().ToString());
          return;
        }
        absl::StatusOr<std::string> value = ReadAll(**reader);
        if (!value.ok()) {
          failures.Add(value.status().ToString());
          return;
        }
        WriteOptions cas;
        cas.if_match_etag = (*reader)->info().etag;
        const std::string next = std::to_string(std::stoi(*value) + 1);
        absl::StatusOr<ObjectInfo> put = PutWith(store(), "bucket", "counter", next, cas);
        if (put.ok()) {
          ++done;
        } else if (ErrorCodeOf(put.status()) != ErrorCode::kPreconditionFailed) {
          failures.Add(put.status().ToString());
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
  EXPECT_EQ(Get(store(), "bucket", "counter").value_or("<error>"),
            std::to_string(kThreads * kIncrements));
}

// ---- CommitBatch ---------------------------------------------------------------------------

// CommitBatch commits each writer as its own Commit would: in order, one's failure (too few
// octets, a commit condition) not the others', and every committed object readable and listed.
TEST_P(ObjectStoreConformanceTest, CommitBatchCommitsEachWriterAsItsOwnCommit) {
  using namespace store_test_kit;
  using Keys = std::vector<std::string>;
  AOBJ_KIT_ASSERT_OK(store().CreateBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "kept", "old").status());
  AOBJ_KIT_ASSERT_OK(Put(store(), "bucket", "replaced", "old").status());
  struct Item {
    std::string key;
    std::string content;
    bool create_only = false;
    size_t append = std::string::npos;  // octets appended, when fewer than the content's
  };
  const std::vector<Item> items = {
      {"a", Pattern(1, 5000)}, {"short", "twelve bytes", false, 5},  // too few octets: fails
      {"kept", "new", true},  // If-None-Match "*" on an object: fails
      {"empty", ""},           {"replaced", Pattern(2, 70000)},     {"b", Pattern(3, 1)},
  };
  std::vector<std::unique_ptr<ObjectWriter>> owned;
  std::vector<ObjectWriter*> writers;
  std::vector<ObjectInfo> infos;
  for (const Item& it : items) {
    WriteOptions options;
    options.content_type = "text/plain";
    options.if_none_match_star = it.create_only;
    absl::StatusOr<std::unique_ptr<ObjectWriter>> w =
        store().BeginPut("bucket", it.key, it.content.size(), options);
    ASSERT_TRUE(w.ok()) << it.key << ": " << w.status();
    AOBJ_KIT_ASSERT_OK(AppendInChunks(**w, std::string_view(it.content).substr(0, it.append)));
    writers.push_back(w->get());
    infos.push_back(InfoFor(it.content));
    owned.push_back(std::move(*w));
  }
  std::vector<absl::StatusOr<ObjectInfo>> got = store().CommitBatch(writers, infos);
  ASSERT_EQ(got.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    SCOPED_TRACE(items[i].key);
    if (items[i].key == "short") {
      EXPECT_FALSE(got[i].ok());
      continue;
    }
    if (items[i].key == "kept") {
      AOBJ_KIT_EXPECT_CODE(got[i].status(), ErrorCode::kPreconditionFailed);
      continue;
    }
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(got[i]->size, items[i].content.size());
    EXPECT_EQ(got[i]->etag, infos[i].etag);
    EXPECT_EQ(got[i]->crc32c, infos[i].crc32c);
    EXPECT_EQ(got[i]->content_type, "text/plain");
    EXPECT_GT(got[i]->last_modified_ms, 0);
    EXPECT_EQ(Get(store(), "bucket", items[i].key).value_or("<error>"), items[i].content);
  }
  owned.clear();  // the failed writers abort and leave nothing
  EXPECT_EQ(Get(store(), "bucket", "kept").value_or("<error>"), "old");
  AOBJ_KIT_EXPECT_CODE(Get(store(), "bucket", "short").status(), ErrorCode::kNoSuchKey);
  EXPECT_EQ(ListKeys(store(), "bucket").value_or(Keys{"<error>"}),
            (Keys{"a", "b", "empty", "kept", "replaced"}));
  // An empty group commits nothing.
  EXPECT_TRUE(store().CommitBatch({}, {}).empty());
  for (const char* key : {"a", "b", "empty", "kept", "replaced"}) {
    AOBJ_KIT_ASSERT_OK(store().Delete("bucket", key));
  }
  AOBJ_KIT_EXPECT_OK(store().DeleteBucket("bucket"));  // no leftovers of the failed writers
}

}  // namespace aobj

#endif  // AOBJ_TESTS_STORE_STORE_TEST_KIT_H_
