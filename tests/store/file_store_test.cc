// FileStore behaviour beyond the conformance kit: persistence, crash leftovers, damaged files,
// and the on-disk layout documented in src/store/file_store.cc and src/store/object_file.h.
#include <stdlib.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "gtest/gtest.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

namespace fs = std::filesystem;

#define ASSERT_OK(expr)                               \
  do {                                                \
    const absl::Status assert_status = (expr);        \
    ASSERT_TRUE(assert_status.ok()) << assert_status; \
  } while (0)

#define EXPECT_CODE(expr, code)                                                       \
  do {                                                                                \
    const absl::Status expect_status = (expr);                                        \
    EXPECT_EQ(GetErrorInfo(ErrorCodeOf(expect_status)).name, GetErrorInfo(code).name) \
        << expect_status;                                                             \
  } while (0)

absl::Span<const uint8_t> AsBytes(std::string_view s) {
  return absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string Content(size_t size, char seed) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>(seed + i * 31 + (i >> 9));
  return out;
}

absl::StatusOr<ObjectInfo> Put(ObjectStore& store, std::string_view bucket, std::string_view key,
                               std::string_view content, std::string_view type = "x/y") {
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store.BeginPut(bucket, key, content.size(), type);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = (*writer)->Append(AsBytes(content)); !s.ok()) return s;
  ObjectInfo info;
  info.size = content.size();
  info.etag = "\"0123456789abcdef0123456789abcdef\"";
  info.crc32c = Crc32c(0, content.data(), content.size());
  return (*writer)->Commit(info);
}

absl::StatusOr<std::string> Get(ObjectStore& store, std::string_view bucket, std::string_view key) {
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store.OpenRead(bucket, key);
  if (!reader.ok()) return reader.status();
  std::string out((*reader)->info().size, '\0');
  absl::StatusOr<size_t> n =
      (*reader)->ReadAt(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "aobj_file_store_XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    scratch_ = templ;
    root_ = scratch_ / "root";
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }

  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<ObjectStore>> store = OpenFileStore(root_.string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  fs::path ObjectFile(std::string_view bucket, std::string_view key) const {
    return root_ / std::string(bucket) / "o" /
           HexEncode(Sha256(absl::string_view(key.data(), key.size())));
  }

  fs::path scratch_;
  fs::path root_;
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(FileStoreTest, ObjectsSurviveReopening) {
  ASSERT_OK(store_->CreateBucket("keep"));
  ASSERT_OK(store_->CreateBucket("empty"));
  const std::string big = Content(300000, 'a');
  absl::StatusOr<ObjectInfo> put = Put(*store_, "keep", "dir/big object", big, "image/png");
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_TRUE(Put(*store_, "keep", "small", "hi").ok());

  Reopen();
  ASSERT_OK(store_->HeadBucket("keep"));
  ASSERT_OK(store_->HeadBucket("empty"));
  EXPECT_EQ(Get(*store_, "keep", "dir/big object").value_or("<error>"), big);
  EXPECT_EQ(Get(*store_, "keep", "small").value_or("<error>"), "hi");
  absl::StatusOr<ObjectInfo> head = store_->Head("keep", "dir/big object");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, put->size);
  EXPECT_EQ(head->etag, put->etag);
  EXPECT_EQ(head->crc32c, put->crc32c);
  EXPECT_EQ(head->content_type, "image/png");
  EXPECT_EQ(head->last_modified_ms, put->last_modified_ms);
  EXPECT_CODE(store_->DeleteBucket("keep"), ErrorCode::kBucketNotEmpty);
  EXPECT_CODE(store_->CreateBucket("empty"), ErrorCode::kBucketAlreadyExists);
}

// CommitBatch (PutObjects' group commit): objects of two buckets committed together survive
// reopening with what Commit recorded, leave no temp files, and a bucket deleted under its
// writers fails only its own items.
TEST_F(FileStoreTest, CommitBatchObjectsSurviveReopeningAndFailOnlyTheirOwn) {
  ASSERT_OK(store_->CreateBucket("one"));
  ASSERT_OK(store_->CreateBucket("two"));
  ASSERT_OK(store_->CreateBucket("gone"));
  struct Item {
    std::string bucket, key, content;
  };
  const std::vector<Item> items = {{"one", "a", Content(4096, 'a')},
                                   {"two", "a", Content(10, 'b')},
                                   {"gone", "x", Content(100, 'c')},
                                   {"one", "b", ""},
                                   {"two", "c", Content(200000, 'd')}};
  std::vector<std::unique_ptr<ObjectWriter>> owned;
  std::vector<ObjectWriter*> writers;
  std::vector<ObjectInfo> infos;
  for (const Item& it : items) {
    absl::StatusOr<std::unique_ptr<ObjectWriter>> w =
        store_->BeginPut(it.bucket, it.key, it.content.size(), "x/y");
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_OK((*w)->Append(AsBytes(it.content)));
    ObjectInfo info;
    info.size = it.content.size();
    info.etag = absl::StrCat("\"", HexEncode(Sha256(it.content)).substr(0, 32), "\"");
    info.crc32c = Crc32c(0, it.content.data(), it.content.size());
    infos.push_back(info);
    writers.push_back(w->get());
    owned.push_back(std::move(*w));
  }
  ASSERT_OK(store_->DeleteBucket("gone"));  // its writer's temp file goes with it
  std::vector<absl::StatusOr<ObjectInfo>> got = store_->CommitBatch(writers, infos);
  ASSERT_EQ(got.size(), items.size());
  EXPECT_CODE(got[2].status(), ErrorCode::kNoSuchBucket);
  owned.clear();
  for (const char* b : {"one", "two"}) EXPECT_TRUE(Entries(root_ / b / "tmp").empty()) << b;
  Reopen();
  for (size_t i = 0; i < items.size(); ++i) {
    if (i == 2) continue;
    SCOPED_TRACE(items[i].bucket + "/" + items[i].key);
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(Get(*store_, items[i].bucket, items[i].key).value_or("<error>"), items[i].content);
    absl::StatusOr<ObjectInfo> head = store_->Head(items[i].bucket, items[i].key);
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_EQ(head->etag, infos[i].etag);
    EXPECT_EQ(head->crc32c, infos[i].crc32c);
    EXPECT_EQ(head->last_modified_ms, got[i]->last_modified_ms);
  }
  EXPECT_CODE(store_->HeadBucket("gone"), ErrorCode::kNoSuchBucket);
}

TEST_F(FileStoreTest, UsesTheDocumentedLayout) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "a/b", "content").ok());
  const std::string file = ReadFile(ObjectFile("bucket", "a/b"));
  ASSERT_GE(file.size(), 52u);
  EXPECT_EQ(file.substr(0, 8), "AOBJOBJ1");
  EXPECT_EQ(file.substr(file.size() - 7), "content");
  EXPECT_TRUE(fs::is_directory(root_ / "bucket" / "tmp"));
  EXPECT_TRUE(Entries(root_ / "bucket" / "tmp").empty());
}

TEST_F(FileStoreTest, SecondStoreOnTheSameRootIsRefused) {
  absl::StatusOr<std::unique_ptr<ObjectStore>> second = OpenFileStore(root_.string());
  EXPECT_CODE(second.status(), ErrorCode::kStorageError);
  store_.reset();
  second = OpenFileStore(root_.string());
  EXPECT_TRUE(second.ok()) << second.status();
}

TEST_F(FileStoreTest, LeftoverTempFilesAreRemovedAtOpen) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "kept", "still here").ok());
  store_.reset();
  // What a crash mid-PUT leaves behind.
  WriteFile(root_ / "bucket" / "tmp" / "0123abcd.tmp", "half an object");
  WriteFile(root_ / "bucket" / "tmp" / "other", "");
  Reopen();
  EXPECT_TRUE(Entries(root_ / "bucket" / "tmp").empty());
  EXPECT_EQ(Get(*store_, "bucket", "kept").value_or("<error>"), "still here");
  ASSERT_OK(store_->Delete("bucket", "kept"));
  EXPECT_TRUE(store_->DeleteBucket("bucket").ok());
}

// Issue 16 finding 6: a symbolic link in the root is reported, never followed: the files in the
// target's tmp/ survive, and the store does not start on it.
TEST_F(FileStoreTest, SymlinkInTheRootIsReportedAndNeverFollowed) {
  store_.reset();
  const fs::path outside = scratch_ / "outside";
  fs::create_directories(outside / "o");
  fs::create_directories(outside / "tmp");
  WriteFile(outside / "tmp" / "precious", "not the store's");
  ASSERT_TRUE(fs::exists(outside / "tmp" / "precious"));
  fs::create_directory_symlink(outside, root_ / "linked");
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = OpenFileStore(root_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("symbolic link"), std::string::npos) << store.status();
  EXPECT_TRUE(fs::exists(outside / "tmp" / "precious"));
  // A link in place of a bucket's tmp/ is refused the same way.
  fs::remove(root_ / "linked");
  ASSERT_TRUE(fs::create_directories(root_ / "bucket" / "o"));
  fs::create_directory_symlink(outside / "tmp", root_ / "bucket" / "tmp");
  store = OpenFileStore(root_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("symbolic link"), std::string::npos) << store.status();
  EXPECT_TRUE(fs::exists(outside / "tmp" / "precious"));
}

// Issue 16 finding 6: a FIFO among the objects used to hang the start (open() blocked), and a
// directory in tmp/ stopped it with a bare errno; both are now reported by path.
TEST_F(FileStoreTest, FifoOrDirectoryWhereFilesBelongIsReportedWithoutHanging) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  store_.reset();
  const fs::path fifo = root_ / "bucket" / "o" / std::string(64, 'a');
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto opened = std::async(std::launch::async, [&] { return OpenFileStore(root_.string()); });
  if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "OpenFileStore hangs on a FIFO";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases the blocked open
    if (fd >= 0) ::close(fd);
  }
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = opened.get();
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not a regular file"), std::string::npos)
      << store.status();
  fs::remove(fifo);
  fs::create_directory(root_ / "bucket" / "tmp" / "stray");
  store = OpenFileStore(root_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("is a directory"), std::string::npos) << store.status();
  fs::remove(root_ / "bucket" / "tmp" / "stray");
  Reopen();
}

// Eleventh hostile probe, N2 and N3: what start-up refuses could still be planted while the
// server ran. A FIFO in place of an object held every request thread in open() (and the server
// then ignored SIGTERM); a link in place of a bucket's o/ or tmp/ was followed (objects read,
// PUTs written, outside the root); a LOCK link made the start create its target. Now each is
// refused by path, at once.
TEST_F(FileStoreTest, FifosAndLinksPlantedWhileOpenAreRefusedAtOnce) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "kept", "still here").ok());
  const fs::path fifo = ObjectFile("bucket", "fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto head = std::async(std::launch::async, [&] { return store_->Head("bucket", "fifo"); });
  if (head.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "a read of a FIFO planted in the bucket hangs";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases the blocked open
    if (fd >= 0) ::close(fd);
  }
  absl::StatusOr<ObjectInfo> got = head.get();
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("not a regular file"), std::string::npos) << got.status();
  fs::remove(fifo);

  const fs::path outside = scratch_ / "outside";
  for (const char* dir : {"o", "tmp"}) {
    fs::remove_all(outside);
    fs::create_directories(outside);
    fs::copy(root_ / "bucket" / dir, outside, fs::copy_options::recursive);
    fs::rename(root_ / "bucket" / dir, scratch_ / "saved");
    fs::create_directory_symlink(outside, root_ / "bucket" / dir);
    const size_t before = Entries(outside).size();
    for (const absl::Status& s :
         {Get(*store_, "bucket", "kept").status(), Put(*store_, "bucket", "new", "x").status(),
          store_->Delete("bucket", "kept")}) {
      EXPECT_FALSE(s.ok()) << dir << " was followed";
      EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s;
    }
    EXPECT_EQ(Entries(outside).size(), before) << "files written or deleted outside the root";
    fs::remove(root_ / "bucket" / dir);
    fs::rename(scratch_ / "saved", root_ / "bucket" / dir);
  }
  EXPECT_EQ(Get(*store_, "bucket", "kept").value_or("<error>"), "still here");

  store_.reset();
  fs::remove(root_ / "LOCK");
  fs::create_symlink(scratch_ / "created-by-the-store", root_ / "LOCK");
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = OpenFileStore(root_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("symbolic link"), std::string::npos) << store.status();
  EXPECT_FALSE(fs::exists(scratch_ / "created-by-the-store"));
  fs::remove(root_ / "LOCK");
  Reopen();
}

TEST_F(FileStoreTest, BucketCutShortByACrashIsRepairedAtOpen) {
  store_.reset();
  fs::create_directory(root_ / "partial");  // mkdir of the bucket done, o/ and tmp/ not
  Reopen();
  ASSERT_OK(store_->HeadBucket("partial"));
  ASSERT_TRUE(Put(*store_, "partial", "k", "v").ok());
  EXPECT_EQ(Get(*store_, "partial", "k").value_or("<error>"), "v");
}

TEST_F(FileStoreTest, AbortedWriterRemovesItsTempFile) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  {
    absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store_->BeginPut("bucket", "k", 10, "");
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_OK((*writer)->Append(AsBytes("12345")));
    EXPECT_EQ(Entries(root_ / "bucket" / "tmp").size(), 1u);
    ObjectInfo info;
    info.size = 10;
    EXPECT_FALSE((*writer)->Commit(info).ok());  // too few bytes
  }
  EXPECT_TRUE(Entries(root_ / "bucket" / "tmp").empty());
  EXPECT_TRUE(Entries(root_ / "bucket" / "o").empty());
}

TEST_F(FileStoreTest, CorruptedHeaderIsAStorageError) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "k", Content(5000, 'z')).ok());
  const fs::path path = ObjectFile("bucket", "k");
  const std::string good = ReadFile(path);
  // Flip one bit in every header byte in turn: magic, version, lengths, fields, padding, CRC.
  const uint32_t header_len = static_cast<uint8_t>(good[12]) | static_cast<uint8_t>(good[13]) << 8;
  ASSERT_EQ(good.size(), header_len + 5000u);
  for (size_t i = 0; i < header_len; ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    WriteFile(path, bad);
    SCOPED_TRACE(absl::StrCat("byte ", i));
    EXPECT_CODE(store_->OpenRead("bucket", "k").status(), ErrorCode::kStorageError);
    EXPECT_CODE(store_->Head("bucket", "k").status(), ErrorCode::kStorageError);
  }
  for (std::string_view garbage : {std::string_view(""), std::string_view("AOBJ"),
                                   std::string_view("AOBJOBJ1\x01\0\0\0\xff\xff\xff\xff", 16),
                                   std::string_view("not an object file at all, really")}) {
    WriteFile(path, garbage);
    EXPECT_CODE(store_->OpenRead("bucket", "k").status(), ErrorCode::kStorageError);
  }
  WriteFile(path, good);
  EXPECT_EQ(Get(*store_, "bucket", "k").value_or("<error>"), Content(5000, 'z'));
}

TEST_F(FileStoreTest, TruncatedOrExtendedObjectFileIsAnError) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "k", Content(5000, 'q')).ok());
  const fs::path path = ObjectFile("bucket", "k");
  const std::string good = ReadFile(path);

  WriteFile(path, good.substr(0, good.size() - 1));
  EXPECT_CODE(store_->OpenRead("bucket", "k").status(), ErrorCode::kStorageError);
  EXPECT_CODE(store_->Head("bucket", "k").status(), ErrorCode::kStorageError);
  WriteFile(path, good + "x");
  EXPECT_CODE(store_->OpenRead("bucket", "k").status(), ErrorCode::kStorageError);

  // Truncated under an open reader: an error, not short or stale bytes.
  WriteFile(path, good);
  absl::StatusOr<std::unique_ptr<ObjectReader>> reader = store_->OpenRead("bucket", "k");
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(good.size() - 100)), 0);
  std::string buf(5000, '\0');
  absl::StatusOr<size_t> n =
      (*reader)->ReadAt(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(buf.data()), buf.size()));
  EXPECT_CODE(n.status(), ErrorCode::kStorageError);
}

TEST_F(FileStoreTest, ObjectFileOfAnotherKeyIsRefused) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "one", "first").ok());
  fs::copy_file(ObjectFile("bucket", "one"), ObjectFile("bucket", "two"));
  EXPECT_CODE(store_->OpenRead("bucket", "two").status(), ErrorCode::kStorageError);
  EXPECT_CODE(store_->Head("bucket", "two").status(), ErrorCode::kStorageError);
}

TEST_F(FileStoreTest, RefusesBadBucketNames) {
  const std::string with_nul("a\0b", 3);
  for (std::string_view bad : {std::string_view(""), std::string_view("."), std::string_view(".."),
                               std::string_view("a/b"), std::string_view("../escape"),
                               std::string_view("/abs"), std::string_view(with_nul)}) {
    SCOPED_TRACE(absl::StrCat("bucket \"", absl::string_view(bad.data(), bad.size()), "\""));
    EXPECT_CODE(store_->CreateBucket(bad), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->HeadBucket(bad), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->DeleteBucket(bad), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->BeginPut(bad, "k", 1, "").status(), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->OpenRead(bad, "k").status(), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->Head(bad, "k").status(), ErrorCode::kInvalidArgument);
    EXPECT_CODE(store_->Delete(bad, "k"), ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(fs::exists(scratch_ / "escape"));
  // Only the LOCK file: nothing was created.
  EXPECT_EQ(Entries(root_), std::vector<std::string>{"LOCK"});
}

TEST_F(FileStoreTest, RefusesEmptyKey) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  EXPECT_CODE(store_->BeginPut("bucket", "", 1, "").status(), ErrorCode::kInvalidArgument);
  EXPECT_CODE(store_->OpenRead("bucket", "").status(), ErrorCode::kInvalidArgument);
}

TEST_F(FileStoreTest, RootThatIsAFileIsAnError) {
  const fs::path file = scratch_ / "plain-file";
  WriteFile(file, "x");
  absl::StatusOr<std::unique_ptr<ObjectStore>> store = OpenFileStore(file.string());
  EXPECT_CODE(store.status(), ErrorCode::kStorageError);
  EXPECT_CODE(OpenFileStore("").status(), ErrorCode::kInvalidArgument);
}

TEST_F(FileStoreTest, DirectBufferIsNotOffered) {
  // The FileStore streams through Append; DirectBuffer would need a mapping of the temp file.
  ASSERT_OK(store_->CreateBucket("bucket"));
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer = store_->BeginPut("bucket", "k", 10, "");
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->DirectBuffer().empty());
}

// ---- listing index, user metadata, format versions (issue 4) -------------------------------

std::vector<std::string> ListedKeys(ObjectStore& store, std::string_view bucket) {
  std::vector<std::string> keys;
  absl::StatusOr<std::vector<ObjectSummary>> list = store.ListObjects(bucket, "", "", 1000000);
  EXPECT_TRUE(list.ok()) << list.status();
  if (list.ok()) {
    for (const ObjectSummary& s : *list) keys.push_back(s.key);
  }
  return keys;
}

TEST_F(FileStoreTest, ListingIndexAndMetadataSurviveReopening) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_OK(store_->CreateBucket("other"));
  WriteOptions options;
  options.content_type = "text/plain";
  options.user_metadata = {{"owner", "alice"}, {"n", std::string(1000, 'x')}};
  absl::StatusOr<std::unique_ptr<ObjectWriter>> writer =
      store_->BeginPut("bucket", "b/with-meta", 5, options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_OK((*writer)->Append(AsBytes("hello")));
  ObjectInfo info;
  info.size = 5;
  info.etag = "\"5d41402abc4b2a76b9719d911017c592\"";
  ASSERT_TRUE((*writer)->Commit(info).ok());
  writer->reset();
  ASSERT_TRUE(Put(*store_, "bucket", "a", "1").ok());
  ASSERT_TRUE(Put(*store_, "bucket", "c", "3").ok());
  ASSERT_OK(store_->Delete("bucket", "c"));
  absl::StatusOr<std::vector<BucketSummary>> buckets_before = store_->ListBuckets();
  ASSERT_TRUE(buckets_before.ok());

  Reopen();
  EXPECT_EQ(ListedKeys(*store_, "bucket"), (std::vector<std::string>{"a", "b/with-meta"}));
  EXPECT_TRUE(ListedKeys(*store_, "other").empty());
  absl::StatusOr<ObjectInfo> head = store_->Head("bucket", "b/with-meta");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->user_metadata, options.user_metadata);
  EXPECT_EQ(head->content_type, "text/plain");
  absl::StatusOr<std::vector<ObjectSummary>> list = store_->ListObjects("bucket", "b/", "", 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].etag, info.etag);
  EXPECT_EQ((*list)[0].last_modified_ms, head->last_modified_ms);
  absl::StatusOr<std::vector<BucketSummary>> buckets = store_->ListBuckets();
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  ASSERT_EQ(buckets->size(), 2u);
  EXPECT_EQ((*buckets)[0].name, "bucket");
  EXPECT_EQ((*buckets)[1].name, "other");
  // Creation times come from the directory after a reopen: within a couple of seconds.
  EXPECT_NEAR(static_cast<double>((*buckets)[0].creation_time_ms),
              static_cast<double>((*buckets_before)[0].creation_time_ms), 2000.0);
}

// A version-1 file (written before user metadata existed), built by hand from the layout in
// object_file.h, is still read.
TEST_F(FileStoreTest, ReadsVersionOneObjectFiles) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  store_.reset();
  const std::string key = "old/object", type = "text/old", etag = "\"0123\"", content = "legacy";
  std::string h;
  auto u32 = [&h](uint32_t v) {
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(v >> (8 * i)));
  };
  auto u64 = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>(v >> (8 * i)));
  };
  const uint32_t header_len = static_cast<uint32_t>(48 + key.size() + type.size() + 256 + 4);
  h = "AOBJOBJ1";
  u32(1);
  u32(header_len);
  u64(content.size());
  u64(1700000000123);
  u32(Crc32c(0, content.data(), content.size()));
  u32(static_cast<uint32_t>(key.size()));
  u32(static_cast<uint32_t>(type.size()));
  u32(static_cast<uint32_t>(etag.size()));
  h += key + type + etag;
  h.resize(header_len - 4, '\0');
  u32(Crc32c(0, h.data(), h.size()));
  WriteFile(ObjectFile("bucket", key), h + content);
  Reopen();
  EXPECT_EQ(Get(*store_, "bucket", key).value_or("<error>"), content);
  absl::StatusOr<ObjectInfo> head = store_->Head("bucket", key);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->etag, etag);
  EXPECT_EQ(head->content_type, type);
  EXPECT_EQ(head->last_modified_ms, 1700000000123);
  EXPECT_TRUE(head->user_metadata.empty());
  EXPECT_EQ(ListedKeys(*store_, "bucket"), std::vector<std::string>{key});
}

TEST_F(FileStoreTest, DamagedFilesAreLeftOutOfTheIndexAtOpen) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*store_, "bucket", "good", "fine").ok());
  ASSERT_TRUE(Put(*store_, "bucket", "bad", "will be damaged").ok());
  store_.reset();
  std::string bytes = ReadFile(ObjectFile("bucket", "bad"));
  bytes[20] ^= 1;
  WriteFile(ObjectFile("bucket", "bad"), bytes);
  WriteFile(root_ / "bucket" / "o" / "not-a-hash", "junk");
  Reopen();
  EXPECT_EQ(ListedKeys(*store_, "bucket"), std::vector<std::string>{"good"});
  EXPECT_CODE(store_->Head("bucket", "bad").status(), ErrorCode::kStorageError);
  // Overwriting the damaged key repairs it and lists it again.
  ASSERT_TRUE(Put(*store_, "bucket", "bad", "repaired").ok());
  EXPECT_EQ(ListedKeys(*store_, "bucket"), (std::vector<std::string>{"bad", "good"}));
}

// The server keeps its multipart area in <root>/.multipart: the store must neither treat it as a
// bucket (and create o/ and tmp/ in it, or empty its tmp/) nor list it.
TEST_F(FileStoreTest, DotDirectoriesInTheRootAreNotBuckets) {
  ASSERT_OK(store_->CreateBucket("real"));
  store_.reset();
  fs::create_directories(root_ / ".multipart" / "tmp");
  WriteFile(root_ / ".multipart" / "tmp" / "part", "keep me");
  Reopen();
  EXPECT_EQ(ReadFile(root_ / ".multipart" / "tmp" / "part"), "keep me");
  EXPECT_FALSE(fs::exists(root_ / ".multipart" / "o"));
  absl::StatusOr<std::vector<BucketSummary>> buckets = store_->ListBuckets();
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  ASSERT_EQ(buckets->size(), 1u);
  EXPECT_EQ((*buckets)[0].name, "real");
  EXPECT_CODE(store_->CreateBucket(".hidden"), ErrorCode::kInvalidArgument);
  EXPECT_CODE(store_->HeadBucket(".multipart"), ErrorCode::kInvalidArgument);
}

TEST_F(FileStoreTest, MetadataOverTheStoreLimitIsRefused) {
  ASSERT_OK(store_->CreateBucket("bucket"));
  WriteOptions options;
  options.user_metadata["big"] = std::string(5000, 'x');
  EXPECT_CODE(store_->BeginPut("bucket", "k", 1, options).status(), ErrorCode::kMetadataTooLarge);
  options.user_metadata.clear();
  for (int i = 0; i < 1025; ++i) options.user_metadata[absl::StrCat(i)] = "";
  EXPECT_CODE(store_->BeginPut("bucket", "k", 1, options).status(), ErrorCode::kMetadataTooLarge);
  EXPECT_TRUE(Entries(root_ / "bucket" / "tmp").empty());
}

}  // namespace
}  // namespace aobj
