// Device memory: classification through the CUDA driver, the CUDA runtime's copier, and the
// staging of GETs and PUTs through registered host memory (aobj/device.h).
//
// The CUDA libraries are opened with dlopen and the few entry points used are declared here
// with the C ABI of the CUDA driver and runtime APIs (stable since CUDA 4), so that building
// needs no CUDA toolkit.
#include "aobj/device.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "client/range_spec.h"
#include "wire/checksum.h"
#include "wire/range.h"

namespace aobj {
namespace {

static_assert(sizeof(void*) == 8, "the CUDA declarations below assume a 64-bit ABI");

// ---- CUDA driver: what a pointer is ----------------------------------------------------------

// cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr)
using PointerGetAttributeFn = int (*)(void*, int, unsigned long long);
constexpr int kCuSuccess = 0;
constexpr int kCuPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kCuPointerAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kCuMemoryTypeDevice = 2;       // CU_MEMORYTYPE_DEVICE

PointerGetAttributeFn DriverEntryPoint() {
  // Only a driver the process already loaded: without one there is no CUDA allocation to find.
  static std::atomic<PointerGetAttributeFn> fn{nullptr};
  if (PointerGetAttributeFn f = fn.load(std::memory_order_acquire)) return f;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  auto f = reinterpret_cast<PointerGetAttributeFn>(dlsym(lib, "cuPointerGetAttribute"));
  if (f != nullptr) fn.store(f, std::memory_order_release);  // the handle stays open
  return f;
}

// ---- CUDA runtime: copies -------------------------------------------------------------------

struct CudaRuntime {
  int (*get_device_count)(int*) = nullptr;
  int (*stream_create_with_flags)(void**, unsigned) = nullptr;
  int (*stream_destroy)(void*) = nullptr;
  int (*stream_synchronize)(void*) = nullptr;
  int (*memcpy_async)(void*, const void*, size_t, int, void*) = nullptr;
  int (*host_register)(void*, size_t, unsigned) = nullptr;
  int (*host_unregister)(void*) = nullptr;
  const char* (*get_error_string)(int) = nullptr;
};
constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;
// Flags 0 (cudaStreamDefault): the copy streams wait for work queued earlier on the legacy
// default stream, and it waits for them (not cudaStreamNonBlocking).
constexpr unsigned kCudaStreamDefault = 0;
constexpr unsigned kCudaHostRegisterPortable = 1;  // pinned for every CUDA context

// The runtime the application already uses if it loaded one (its state is per library copy),
// else the first that loads; null when none does.
const CudaRuntime* Runtime() {
  static const CudaRuntime* rt = []() -> const CudaRuntime* {
    // Versioned names first: the unversioned one is the toolkit's development link and may be
    // newer than the installed driver.
    const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                           "libcudart.so"};
    void* lib = nullptr;
    for (int mode : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
      for (const char* n : names) {
        if (lib == nullptr) lib = dlopen(n, mode);
      }
    }
    if (lib == nullptr) return nullptr;
    auto* r = new CudaRuntime;
    auto sym = [lib](auto* out, const char* name) {
      *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(dlsym(lib, name));
      return *out != nullptr;
    };
    if (!sym(&r->get_device_count, "cudaGetDeviceCount") ||
        !sym(&r->stream_create_with_flags, "cudaStreamCreateWithFlags") ||
        !sym(&r->stream_destroy, "cudaStreamDestroy") ||
        !sym(&r->stream_synchronize, "cudaStreamSynchronize") ||
        !sym(&r->memcpy_async, "cudaMemcpyAsync") ||
        !sym(&r->host_register, "cudaHostRegister") ||
        !sym(&r->host_unregister, "cudaHostUnregister") ||
        !sym(&r->get_error_string, "cudaGetErrorString")) {
      delete r;
      return nullptr;
    }
    return r;
  }();
  return rt;
}

class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier(const CudaRuntime& rt, std::vector<void*> streams)
      : rt_(rt), streams_(std::move(streams)) {}
  ~CudaCopier() override {
    for (void* s : streams_) {
      rt_.stream_synchronize(s);
      rt_.stream_destroy(s);
    }
  }
  int slots() const override { return static_cast<int>(streams_.size()); }
  absl::Status Pin(void* p, size_t size) override {
    return Check(rt_.host_register(p, size, kCudaHostRegisterPortable), "cudaHostRegister");
  }
  void Unpin(void* p) override { rt_.host_unregister(p); }
  absl::Status Start(int slot, Direction direction, void* dst, const void* src,
                     size_t size) override {
    return Check(rt_.memcpy_async(dst, src, size,
                                  direction == Direction::kToDevice ? kCudaMemcpyHostToDevice
                                                                    : kCudaMemcpyDeviceToHost,
                                  streams_[slot]),
                 "cudaMemcpyAsync");
  }
  absl::Status Finish(int slot) override {
    return Check(rt_.stream_synchronize(streams_[slot]), "cudaStreamSynchronize");
  }

 private:
  absl::Status Check(int err, const char* call) const {
    if (err == 0) return absl::OkStatus();
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat(call, " failed: ", rt_.get_error_string(err), " (", err, ")"));
  }
  const CudaRuntime& rt_;
  std::vector<void*> streams_;
};

// ---- staging --------------------------------------------------------------------------------

class Stager final : public DeviceStager {
 public:
  Stager(Client& client, DeviceStagingOptions options, std::unique_ptr<DeviceCopier> copier)
      : client_(client), options_(options), copier_(std::move(copier)) {}
  ~Stager() override {
    for (size_t i = 0; i < staging_.size(); ++i) {
      if (i < pinned_) copier_->Unpin(staging_[i]->data());
    }
  }

  absl::Status Init() {
    for (int i = 0; i < options_.depth; ++i) {
      auto buf = client_.AllocateBuffer(options_.chunk_bytes);
      if (!buf.ok()) return buf.status();
      staging_.push_back(std::move(*buf));
      if (absl::Status s = copier_->Pin(staging_.back()->data(), options_.chunk_bytes); !s.ok()) {
        return s;
      }
      ++pinned_;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     void* device, size_t capacity,
                                     const GetOptions& options) override {
    absl::MutexLock lock(&mu_);
    const CallOptions whole = WholeCall(options.call);
    std::unique_ptr<Client> client = client_.WithCallOptions(whole);
    absl::StatusOr<ObjectInfo> head = client->Head(bucket, key, options.conditions);
    if (!head.ok()) return head.status();
    TransferResult result;
    result.info = *head;
    uint64_t first = 0;
    uint64_t length = head->size;
    if (options.range.has_value()) {
      absl::StatusOr<ResolvedRange> r = ResolveRange(ToSpec(*options.range), head->size);
      if (!r.ok()) return r.status();
      first = r->first;
      length = r->length;
      result.range = ContentRange{r->first, r->last(), head->size};
    }
    if (length > capacity) {
      return MakeError(ErrorCode::kDescriptorTooSmall,
                       absl::StrCat("the device buffer holds ", capacity, " octets; the ",
                                    options.range ? "range" : "object", " has ", length));
    }
    GetOptions chunk_options;
    chunk_options.conditions.if_match = head->etag;  // every chunk from the version HEAD saw
    chunk_options.call = whole;
    const uint64_t chunk = options_.chunk_bytes;
    auto* dst = static_cast<uint8_t*>(device);
    InFlight copies(*copier_);
    for (uint64_t off = 0, i = 0; off < length; off += chunk, ++i) {
      const uint64_t n = std::min<uint64_t>(chunk, length - off);
      const int slot = static_cast<int>(i % staging_.size());
      // The staging buffer is free once the copy of the chunk it held before has finished.
      if (absl::Status s = copies.Finish(slot); !s.ok()) return s;
      chunk_options.range = ByteRange::FirstLast(first + off, first + off + n - 1);
      absl::StatusOr<TransferResult> got =
          client->Get(bucket, key, {{staging_[slot].get(), 0, n}}, chunk_options);
      if (!got.ok()) return got.status();
      if (got->bytes_transferred != n) {
        return MakeError(ErrorCode::kIncompleteTransfer,
                         absl::StrCat("a chunk of ", n, " octets came back with ",
                                      got->bytes_transferred));
      }
      result.path = got->path;
      if (absl::Status s = copies.Start(slot, DeviceCopier::Direction::kToDevice, dst + off,
                                        staging_[slot]->data(), n);
          !s.ok()) {
        return s;
      }
      result.bytes_transferred += n;
    }
    if (absl::Status s = copies.FinishAll(); !s.ok()) return s;
    if (length == 0) result.path = TransferPath::kNone;
    return result;
  }

  absl::StatusOr<ObjectInfo> Put(const std::string& bucket, const std::string& key,
                                 const void* device, size_t size,
                                 const PutOptions& options) override {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<Client> client = client_.WithCallOptions(WholeCall(options.call));
    const auto* src = static_cast<const uint8_t*>(device);
    const uint64_t chunk = options_.chunk_bytes;
    InFlight copies(*copier_);
    if (size <= chunk) {
      if (size > 0) {
        if (absl::Status s = copies.Start(0, DeviceCopier::Direction::kToHost,
                                          staging_[0]->data(), src, size);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = copies.FinishAll(); !s.ok()) return s;
      }
      absl::StatusOr<TransferResult> put = client->Put(bucket, key, *staging_[0], size, options);
      if (!put.ok()) return put.status();
      return put->info;
    }
    const uint64_t count = (size + chunk - 1) / chunk;
    if (count > 10000) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat(size, " octets in parts of ", chunk, " need ", count,
                                    " parts; at most 10000 (raise chunk_bytes)"));
    }
    absl::StatusOr<UploadInfo> upload = client->CreateMultipartUpload(bucket, key, options);
    if (!upload.ok()) return upload.status();
    // Up to `depth` parts upload at once, each from its own staging buffer: a server that
    // hashes every part with MD5 (AOBJ-OBJ-207; not under OPAQUE_PART_ETAG, AOBJ-OBJ-254) does
    // it on one core per part, so parts in flight together spread that over its cores. Part i
    // is copied while earlier parts upload.
    std::vector<std::shared_ptr<Operation<UploadPartResult>>> uploading(staging_.size());
    std::vector<uint32_t> part_in(staging_.size(), 0);  // the part number each slot uploads
    std::vector<CompletedPart> parts(count);
    std::vector<uint32_t> crcs(count);  // the parts' CRC32C, for the whole's (AOBJ-OBJ-260)
    absl::Status failed;
    // Waits for the upload of the part that used `slot` last and records its result.
    auto settle = [&](int slot) {
      auto& op = uploading[static_cast<size_t>(slot)];
      if (op == nullptr) return;
      const absl::StatusOr<UploadPartResult>& r = op->Wait();
      if (r.ok()) {
        const uint32_t number = part_in[static_cast<size_t>(slot)];
        parts[number - 1] = {number, r->etag};
        crcs[number - 1] = r->crc32c;
      } else {
        failed.Update(r.status());
      }
      op = nullptr;
    };
    auto fail = [&](absl::Status s) -> absl::Status {
      copies.FinishAll().IgnoreError();  // no copy may still run into staging memory
      for (int slot = 0; slot < static_cast<int>(uploading.size()); ++slot) settle(slot);
      client_.AbortMultipartUpload(bucket, key, upload->upload_id).IgnoreError();  // no deadline
      return s;
    };
    const CallOptions part_call = WholeCall(options.call);
    for (uint64_t i = 0; i < count; ++i) {
      const int slot = static_cast<int>(i % staging_.size());
      settle(slot);  // the staging buffer is free once its previous part has uploaded
      if (!failed.ok()) return fail(failed);
      const uint64_t n = std::min<uint64_t>(chunk, size - i * chunk);
      if (absl::Status s = copies.Start(slot, DeviceCopier::Direction::kToHost,
                                        staging_[slot]->data(), src + i * chunk, n);
          !s.ok()) {
        return fail(s);
      }
      if (absl::Status s = copies.Finish(slot); !s.ok()) return fail(s);
      part_in[static_cast<size_t>(slot)] = static_cast<uint32_t>(i + 1);
      uploading[static_cast<size_t>(slot)] =
          client_.UploadPartAsync(bucket, key, upload->upload_id, static_cast<uint32_t>(i + 1),
                                  *staging_[slot], 0, n, part_call);
    }
    for (int slot = 0; slot < static_cast<int>(uploading.size()); ++slot) settle(slot);
    if (!failed.ok()) return fail(failed);
    uint32_t whole = 0;
    for (uint64_t i = 0; i < count; ++i) {
      whole = Crc32cCombine(whole, crcs[i], std::min<uint64_t>(chunk, size - i * chunk));
    }
    absl::StatusOr<ObjectInfo> info = client->CompleteMultipartUpload(
        bucket, key, upload->upload_id, parts, options.conditions, whole);
    if (!info.ok()) return fail(info.status());
    return info;
  }

 private:
  // `call` as one absolute deadline for the whole staged transfer (a relative timeout counts
  // from now, not from each chunk's request).
  static CallOptions WholeCall(const CallOptions& call) {
    CallOptions whole;
    whole.deadline = call.deadline;
    if (call.timeout > absl::ZeroDuration()) {
      whole.deadline = std::min(whole.deadline, absl::Now() + call.timeout);
    }
    return whole;
  }

  // The copies started and not yet finished, per slot; the destructor waits for the rest, so
  // that no copy outlives the call that started it (the caller may free the device memory).
  class InFlight {
   public:
    explicit InFlight(DeviceCopier& copier) : copier_(copier), busy_(copier.slots(), false) {}
    ~InFlight() { FinishAll().IgnoreError(); }
    absl::Status Start(int slot, DeviceCopier::Direction d, void* dst, const void* src,
                       size_t n) {
      busy_[slot] = true;
      return copier_.Start(slot, d, dst, src, n);
    }
    absl::Status Finish(int slot) {
      if (!busy_[slot]) return absl::OkStatus();
      busy_[slot] = false;
      return copier_.Finish(slot);
    }
    absl::Status FinishAll() {
      absl::Status first;
      for (int s = 0; s < static_cast<int>(busy_.size()); ++s) first.Update(Finish(s));
      return first;
    }

   private:
    DeviceCopier& copier_;
    std::vector<bool> busy_;
  };

  Client& client_;
  const DeviceStagingOptions options_;
  std::unique_ptr<DeviceCopier> copier_;
  std::vector<std::unique_ptr<Buffer>> staging_;
  size_t pinned_ = 0;
  absl::Mutex mu_;  // one call at a time
};

}  // namespace

MemoryKind ClassifyMemory(const void* p) {
  PointerGetAttributeFn get = DriverEntryPoint();
  if (get == nullptr || p == nullptr) return MemoryKind::kHost;
  const auto ptr = reinterpret_cast<unsigned long long>(p);
  unsigned int managed = 0;
  if (get(&managed, kCuPointerAttributeIsManaged, ptr) == kCuSuccess && managed != 0) {
    return MemoryKind::kCudaManaged;
  }
  unsigned int type = 0;
  // CUDA_ERROR_INVALID_VALUE (and CUDA_ERROR_NOT_INITIALIZED) for memory CUDA does not know.
  if (get(&type, kCuPointerAttributeMemoryType, ptr) == kCuSuccess && type == kCuMemoryTypeDevice) {
    return MemoryKind::kCudaDevice;
  }
  return MemoryKind::kHost;
}

absl::StatusOr<std::unique_ptr<DeviceCopier>> CudaRuntimeCopier(int slots) {
  const CudaRuntime* rt = Runtime();
  if (rt == nullptr) {
    return MakeError(ErrorCode::kUnsupportedMemoryType,
                     "no CUDA runtime (libcudart) could be loaded: device memory is unavailable");
  }
  int devices = 0;
  if (int err = rt->get_device_count(&devices); err != 0 || devices == 0) {
    return MakeError(ErrorCode::kUnsupportedMemoryType,
                     absl::StrCat("the CUDA runtime finds no device",
                                  err != 0 ? absl::StrCat(": ", rt->get_error_string(err), " (",
                                                          err, ")")
                                           : std::string()));
  }
  std::vector<void*> streams;
  for (int i = 0; i < slots; ++i) {
    void* s = nullptr;
    if (int err = rt->stream_create_with_flags(&s, kCudaStreamDefault); err != 0) {
      for (void* t : streams) rt->stream_destroy(t);
      return MakeError(ErrorCode::kInternal, absl::StrCat("cudaStreamCreateWithFlags failed: ",
                                                          rt->get_error_string(err)));
    }
    streams.push_back(s);
  }
  return std::unique_ptr<DeviceCopier>(new CudaCopier(*rt, std::move(streams)));
}

absl::StatusOr<std::unique_ptr<DeviceStager>> DeviceStager::Create(
    Client& client, const DeviceStagingOptions& options, std::unique_ptr<DeviceCopier> copier) {
  if (options.chunk_bytes < 4096 || options.depth < 2 || options.depth > 8) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "DeviceStagingOptions: chunk_bytes at least 4096, depth 2 to 8");
  }
  if (copier == nullptr) {
    auto cuda = CudaRuntimeCopier(options.depth);
    if (!cuda.ok()) return cuda.status();
    copier = std::move(*cuda);
  }
  if (copier->slots() < options.depth) {
    return MakeError(ErrorCode::kInvalidArgument, "the copier has fewer slots than depth");
  }
  auto stager = std::make_unique<Stager>(client, options, std::move(copier));
  if (absl::Status s = stager->Init(); !s.ok()) return s;
  return std::unique_ptr<DeviceStager>(std::move(stager));
}

}  // namespace aobj
