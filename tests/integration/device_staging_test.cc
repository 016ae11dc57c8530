// Device memory (issue 9, aobj/device.h, AOBJ-MEM-026): the client refuses to register device
// memory, and DeviceStager moves objects between the server and device memory through staging
// buffers, each chunk's copy overlapped with the next chunk's transfer.
//
// This machine has no GPU. The staging logic runs here for real (real server, real UCX, real
// ranged GETs and multipart uploads) with a copier that stands in for the CUDA runtime: "device"
// memory is host memory that a classifier calls device memory, and copies are memcpy on a thread
// per slot, like CUDA streams. CudaDeviceTest runs the CUDA runtime copier on real device memory
// and skips where there is no CUDA runtime or device.
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "aobj/device.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// Copies on a thread per slot, in order, like CUDA streams; records the calls ("S<slot>" for
// Start, "F<slot>" for Finish) and can fail the nth Start.
class ThreadCopier final : public DeviceCopier {
 public:
  explicit ThreadCopier(int slots, std::shared_ptr<std::atomic<int>> pinned =
                                       std::make_shared<std::atomic<int>>(0))
      : pinned(std::move(pinned)), jobs_(slots) {}
  ~ThreadCopier() override {
    for (int s = 0; s < slots(); ++s) Finish(s).IgnoreError();
  }
  int slots() const override { return static_cast<int>(jobs_.size()); }
  absl::Status Pin(void*, size_t) override {
    ++*pinned;
    return absl::OkStatus();
  }
  void Unpin(void*) override { --*pinned; }
  absl::Status Start(int slot, Direction, void* dst, const void* src, size_t n) override {
    Log("S" + std::to_string(slot));
    if (++starts == fail_start) return MakeError(ErrorCode::kInternal, "scripted copy failure");
    ++running;
    jobs_[slot].emplace_back([this, dst, src, n] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a copy takes a while
      std::memcpy(dst, src, n);
      --running;
    });
    return absl::OkStatus();
  }
  absl::Status Finish(int slot) override {
    Log("F" + std::to_string(slot));
    for (auto& t : jobs_[slot]) t.join();
    jobs_[slot].clear();
    return absl::OkStatus();
  }
  std::string calls() {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }

  std::shared_ptr<std::atomic<int>> pinned;  // staging buffers pinned now (outlives the copier)
  std::atomic<int> running{0};
  int starts = 0;
  int fail_start = 0;  // 0: never

 private:
  void Log(const std::string& c) {
    std::lock_guard<std::mutex> l(mu_);
    calls_ += c + " ";
  }
  std::vector<std::vector<std::thread>> jobs_;
  std::mutex mu_;
  std::string calls_;
};

class DeviceStagingTest : public ::testing::Test {
 protected:
  static constexpr size_t kChunk = 256 << 10;

  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "memory",
                                              std::vector<std::string>{"--min-part-size", "4096"});
    ASSERT_TRUE(server_->Start()) << server_->log();
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    // "Device memory" is whatever lies in device_ (host memory standing in for a GPU's).
    o.classify_memory = [this](const void* p, size_t) {
      const auto* b = static_cast<const char*>(p);
      return b >= device_.data() && b < device_.data() + device_.size() ? MemoryKind::kCudaDevice
                                                                      : MemoryKind::kHost;
    };
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  void Store(const std::string& key, const std::string& content) {
    auto buf = client_->AllocateBuffer(content.size());
    ASSERT_TRUE(buf.ok()) << buf.status();
    std::memcpy((*buf)->data(), content.data(), content.size());
    ASSERT_TRUE(client_->Put("test-bucket", key, **buf, content.size()).ok());
  }
  std::string Load(const std::string& key, size_t size) {
    auto buf = client_->AllocateBuffer(std::max<size_t>(size, 1));
    EXPECT_TRUE(buf.ok()) << buf.status();
    auto got = client_->Get("test-bucket", key, **buf);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? std::string(reinterpret_cast<char*>((*buf)->data()), got->bytes_transferred)
                    : "";
  }
  // A stager over a ThreadCopier of `slots` slots (kept in copier_ for inspection).
  std::unique_ptr<DeviceStager> Stager(int depth = 2) {
    auto copier = std::make_unique<ThreadCopier>(depth, pinned_);
    copier_ = copier.get();
    DeviceStagingOptions options;
    options.chunk_bytes = kChunk;
    options.depth = depth;
    auto s = DeviceStager::Create(*client_, options, std::move(copier));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::string device_ = std::string(4 << 20, '\0');
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  ThreadCopier* copier_ = nullptr;  // owned by the stager
  std::shared_ptr<std::atomic<int>> pinned_ = std::make_shared<std::atomic<int>>(0);
};

// AOBJ-MEM-026: device and managed memory are never registered as host memory.
TEST_F(DeviceStagingTest, RegisterBufferRefusesDeviceMemory) {
  auto refused = client_->RegisterBuffer(device_.data(), device_.size());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ErrorCodeOf(refused.status()), ErrorCode::kUnsupportedMemoryType);
  EXPECT_NE(refused.status().message().find("DeviceStager"), std::string::npos)
      << refused.status();
  std::string host(4096, 'h');
  EXPECT_TRUE(client_->RegisterBuffer(host.data(), host.size()).ok());
}

// A GET of 9.5 chunks: every octet lands in "device" memory, and the pipeline overlaps: the
// copy of chunk i is waited for only after chunk i+1 has been fetched and its copy started.
TEST_F(DeviceStagingTest, GetOverlapsEachCopyWithTheNextTransfer) {
  const std::string content = Pattern(9 * kChunk + kChunk / 2, 1);
  Store("staged", content);
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  EXPECT_EQ(pinned_->load(), 2) << "both staging buffers pinned";
  auto got = stager->Get("test-bucket", "staged", device_.data(), device_.size());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_transferred, content.size());
  EXPECT_EQ(got->info.size, content.size());
  EXPECT_EQ(device_.substr(0, content.size()), content);
  EXPECT_EQ(copier_->calls(), "S0 S1 F0 S0 F1 S1 F0 S0 F1 S1 F0 S0 F1 S1 F0 S0 F1 S1 F0 F1 ");
  EXPECT_EQ(copier_->running.load(), 0);
  stager.reset();
  EXPECT_EQ(pinned_->load(), 0) << "the staging buffers were unpinned";
}

TEST_F(DeviceStagingTest, RangedGetMovesOnlyTheRange) {
  const std::string content = Pattern(3 * kChunk, 2);
  Store("ranged", content);
  auto stager = Stager(3);
  ASSERT_NE(stager, nullptr);
  GetOptions o;
  o.range = ByteRange::FirstLast(1000, 2 * kChunk + 999);
  auto got = stager->Get("test-bucket", "ranged", device_.data(), device_.size(), o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_transferred, 2 * kChunk);
  ASSERT_TRUE(got->range.has_value());
  EXPECT_EQ(got->range->first, 1000u);
  EXPECT_EQ(got->range->last, 2 * kChunk + 999);
  EXPECT_EQ(got->range->complete_length, content.size());
  EXPECT_EQ(device_.substr(0, 2 * kChunk), content.substr(1000, 2 * kChunk));
}

TEST_F(DeviceStagingTest, TooSmallDeviceBufferIsRefusedBeforeAnyCopy) {
  Store("big", Pattern(kChunk + 1, 3));
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  auto got = stager->Get("test-bucket", "big", device_.data(), kChunk);
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kDescriptorTooSmall) << got.status();
  EXPECT_EQ(copier_->calls(), "");
}

// A failed copy ends the GET with that error, and no copy is still running into the device
// memory when Get returns.
TEST_F(DeviceStagingTest, FailedCopyStopsTheGetWithNothingStillRunning) {
  Store("staged", Pattern(6 * kChunk, 4));
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  copier_->fail_start = 4;
  auto got = stager->Get("test-bucket", "staged", device_.data(), device_.size());
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kInternal) << got.status();
  // The fourth copy failed to start; the three started were waited for before the return.
  EXPECT_EQ(copier_->calls(), "S0 S1 F0 S0 F1 S1 F0 F1 ");
  EXPECT_EQ(copier_->running.load(), 0);
}

TEST_F(DeviceStagingTest, SmallPutIsOnePutObject) {
  const std::string content = Pattern(kChunk - 7, 5);
  std::memcpy(device_.data(), content.data(), content.size());
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  auto info = stager->Put("test-bucket", "small", device_.data(), content.size());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->etag.find('-'), std::string::npos) << "not a multipart ETag: " << info->etag;
  EXPECT_EQ(Load("small", content.size()), content);
}

// Above one chunk: a multipart upload whose part i+1 is copied while part i uploads.
TEST_F(DeviceStagingTest, LargePutIsMultipartWithCopiesOverlapped) {
  const std::string content = Pattern(4 * kChunk + 123, 6);
  std::memcpy(device_.data(), content.data(), content.size());
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  auto info = stager->Put("test-bucket", "large", device_.data(), content.size());
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string& etag = info->etag;
  EXPECT_TRUE(etag.size() > 3 && (etag.substr(etag.size() - 2) == "-5" ||
                                  etag.substr(etag.size() - 3) == "-5\""))
      << "a 5-part multipart ETag: " << etag;
  EXPECT_EQ(copier_->calls(), "S0 F0 S1 F1 S0 F0 S1 F1 S0 F0 ");
  EXPECT_EQ(Load("large", content.size()), content);
}

TEST_F(DeviceStagingTest, FailedPutAbortsItsUpload) {
  std::memcpy(device_.data(), Pattern(4 * kChunk, 7).data(), 4 * kChunk);
  auto stager = Stager();
  ASSERT_NE(stager, nullptr);
  copier_->fail_start = 3;
  auto info = stager->Put("test-bucket", "aborted", device_.data(), 4 * kChunk);
  EXPECT_EQ(ErrorCodeOf(info.status()), ErrorCode::kInternal) << info.status();
  EXPECT_EQ(copier_->calls(), "S0 F0 S1 F1 S0 F0 ");
  EXPECT_EQ(copier_->running.load(), 0);
  auto uploads = client_->ListMultipartUploads("test-bucket");
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  EXPECT_TRUE(uploads->uploads.empty()) << "the failed upload was left in progress";
  EXPECT_EQ(ErrorCodeOf(client_->Head("test-bucket", "aborted").status()), ErrorCode::kNoSuchKey);
}

// Parts upload several at a time: one that fails stops the upload, which is aborted only after
// every part in flight has finished with the staging memory, and nothing is stored.
TEST(DeviceStagingFailureTest, FailedPartUploadAbortsAfterThePartsInFlight) {
  constexpr size_t kChunk = 256 << 10;
  // A server whose requests move at most one octet less than a chunk: every full part fails.
  ServerProcess strict(testing::TestDir(), "memory",
                       std::vector<std::string>{"--min-part-size", "4096", "--max-transfer-bytes",
                                                std::to_string(kChunk - 1)});
  ASSERT_TRUE(strict.Start()) << strict.log();
  ClientOptions o;
  o.endpoint = strict.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  std::string device(6 * kChunk, '\0');  // host memory standing in for a GPU's
  o.classify_memory = [&device](const void* p, size_t) {
    const auto* b = static_cast<const char*>(p);
    return b >= device.data() && b < device.data() + device.size() ? MemoryKind::kCudaDevice
                                                                   : MemoryKind::kHost;
  };
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  auto copier = std::make_unique<ThreadCopier>(4);
  ThreadCopier* copies = copier.get();
  DeviceStagingOptions options;
  options.chunk_bytes = kChunk;
  options.depth = 4;
  auto stager = DeviceStager::Create(**c, options, std::move(copier));
  ASSERT_TRUE(stager.ok()) << stager.status();
  std::memcpy(device.data(), Pattern(6 * kChunk, 8).data(), 6 * kChunk);
  auto info = (*stager)->Put("test-bucket", "refused", device.data(), 6 * kChunk);
  EXPECT_EQ(ErrorCodeOf(info.status()), ErrorCode::kEntityTooLarge) << info.status();
  EXPECT_EQ(copies->running.load(), 0);
  auto uploads = (*c)->ListMultipartUploads("test-bucket");
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  EXPECT_TRUE(uploads->uploads.empty()) << "the failed upload was left in progress";
  EXPECT_EQ(ErrorCodeOf((*c)->Head("test-bucket", "refused").status()), ErrorCode::kNoSuchKey);
  // The stager is usable afterwards: an object of one chunk less one octet goes as a PutObject.
  const std::string small = Pattern(kChunk - 1, 9);
  std::memcpy(device.data(), small.data(), small.size());
  auto fits = (*stager)->Put("test-bucket", "fits", device.data(), small.size());
  EXPECT_TRUE(fits.ok()) << fits.status();
}

TEST_F(DeviceStagingTest, OptionsOutOfRangeAreInvalid) {
  DeviceStagingOptions o;
  o.chunk_bytes = 4095;
  EXPECT_EQ(ErrorCodeOf(DeviceStager::Create(*client_, o, std::make_unique<ThreadCopier>(2))
                            .status()),
            ErrorCode::kInvalidArgument);
  o.chunk_bytes = 4096;
  o.depth = 9;
  EXPECT_EQ(ErrorCodeOf(DeviceStager::Create(*client_, o, std::make_unique<ThreadCopier>(9))
                            .status()),
            ErrorCode::kInvalidArgument);
  o.depth = 1;
  EXPECT_EQ(ErrorCodeOf(DeviceStager::Create(*client_, o, std::make_unique<ThreadCopier>(2))
                            .status()),
            ErrorCode::kInvalidArgument);
  o.depth = 4;
  EXPECT_EQ(ErrorCodeOf(DeviceStager::Create(*client_, o, std::make_unique<ThreadCopier>(2))
                            .status()),
            ErrorCode::kInvalidArgument)
      << "a copier with fewer slots than depth";
}

// Real device memory through the CUDA runtime. Skips without a CUDA runtime and device (this
// project's CI machine has neither); on a GPU machine it checks the classification, the
// refusal and a round trip through the stager.
TEST(CudaDeviceTest, RoundTripThroughDeviceMemory) {
  auto copier = CudaRuntimeCopier(DeviceStagingOptions{}.depth);
  if (!copier.ok()) GTEST_SKIP() << copier.status();
  void* rt = nullptr;
  for (const char* n : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
    if (rt == nullptr) rt = dlopen(n, RTLD_NOW | RTLD_NOLOAD);
  }
  ASSERT_NE(rt, nullptr);
  auto cuda_malloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(rt, "cudaMalloc"));
  auto cuda_free = reinterpret_cast<int (*)(void*)>(dlsym(rt, "cudaFree"));
  auto cuda_memcpy =
      reinterpret_cast<int (*)(void*, const void*, size_t, int)>(dlsym(rt, "cudaMemcpy"));
  ASSERT_TRUE(cuda_malloc && cuda_free && cuda_memcpy);
  constexpr size_t kSize = 20 << 20;
  void* dev = nullptr;
  ASSERT_EQ(cuda_malloc(&dev, kSize), 0);
  // The driver is loaded now: the classification asks it for real.
  EXPECT_EQ(ClassifyMemory(dev), MemoryKind::kCudaDevice);
  std::vector<char> heap(4096);
  EXPECT_EQ(ClassifyMemory(heap.data()), MemoryKind::kHost);
  auto cuda_malloc_host = reinterpret_cast<int (*)(void**, size_t)>(dlsym(rt, "cudaMallocHost"));
  auto cuda_free_host = reinterpret_cast<int (*)(void*)>(dlsym(rt, "cudaFreeHost"));
  auto cuda_malloc_managed =
      reinterpret_cast<int (*)(void**, size_t, unsigned)>(dlsym(rt, "cudaMallocManaged"));
  ASSERT_TRUE(cuda_malloc_host && cuda_free_host && cuda_malloc_managed);
  void* pinned = nullptr;
  ASSERT_EQ(cuda_malloc_host(&pinned, 4096), 0);
  EXPECT_EQ(ClassifyMemory(pinned), MemoryKind::kHost) << "page-locked host memory is host";
  cuda_free_host(pinned);
  void* managed = nullptr;
  ASSERT_EQ(cuda_malloc_managed(&managed, 4096, 1 /* cudaMemAttachGlobal */), 0);
  EXPECT_EQ(ClassifyMemory(managed), MemoryKind::kCudaManaged);
  cuda_free(managed);

  ServerProcess server(testing::TestDir(), "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ErrorCodeOf((*c)->RegisterBuffer(dev, kSize).status()),
            ErrorCode::kUnsupportedMemoryType);
  const std::string content = Pattern(kSize, 9);
  ASSERT_EQ(cuda_memcpy(dev, content.data(), kSize, 1 /* host to device */), 0);
  {
    auto stager = DeviceStager::Create(**c, {}, std::move(*copier));
    ASSERT_TRUE(stager.ok()) << stager.status();
    ASSERT_TRUE((*stager)->Put("test-bucket", "gpu", dev, kSize).ok());
    ASSERT_EQ(cuda_memcpy(dev, std::string(kSize, '\0').data(), kSize, 1), 0);
    auto got = (*stager)->Get("test-bucket", "gpu", dev, kSize);
    ASSERT_TRUE(got.ok()) << got.status();
  }
  std::string back(kSize, '\0');
  ASSERT_EQ(cuda_memcpy(back.data(), dev, kSize, 2 /* device to host */), 0);
  EXPECT_EQ(back, content);
  cuda_free(dev);
}

}  // namespace
}  // namespace aobj
