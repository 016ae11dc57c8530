// GPU (CUDA device) memory with the AOBJ/1 client (spec section 7.5, AOBJ-MEM-026).
//
// The data channel moves bytes with UCX. Debian's UCX 1.13.1 is built without CUDA, so it
// cannot register device memory: handed a device pointer it would treat it as host memory, and
// the server's RMA would then land in the wrong memory or fault. The client therefore never
// registers device memory: Client::RegisterBuffer() fails UNSUPPORTED_MEMORY_TYPE for it (and
// for CUDA managed memory), telling device memory from host memory with ClassifyMemory().
//
// DeviceStager moves objects between the server and device memory through registered host
// memory instead, with the CUDA copy of one chunk overlapped with the network transfer of the
// next:
//   GET: ranged GETs of `chunk_bytes`, pinned to one version of the object (If-Match on the
//        ETag that HEAD saw), each into one of `depth` staging buffers while the previous chunk
//        is copied host-to-device on a CUDA stream of its own.
//   PUT: an object of at most `chunk_bytes` is copied device-to-host and sent with one
//        PutObject; a larger one becomes a multipart upload of `chunk_bytes` parts, up to
//        `depth` of them uploading at once while the next is copied into a free staging
//        buffer (without ClientOptions::opaque_etags, the server hashes each part with MD5,
//        AOBJ-OBJ-207, one core per part; with it, neither parts nor PutObjects are hashed,
//        AOBJ-OBJ-254 and AOBJ-OBJ-016). Keep chunk_bytes at or
//        above the server's minimum part size (5 MiB in S3 and by default in aobj-server,
//        --min-part-size), else CompleteMultipartUpload fails ENTITY_TOO_SMALL.
// Staging memory: depth x chunk_bytes, allocated by the client (AllocateBuffer) and page-locked
// for CUDA (cudaHostRegister, portable).
//
// Ordering with the caller's GPU work: the copies run on streams of their own that are ordered
// after work on the legacy default stream, and nothing else. Work on other streams (or on a
// per-thread default stream) that writes the memory a Put reads, or reads the memory a Get
// writes, must be complete before the call (cudaStreamSynchronize); every copy has completed
// when the call returns, whatever its result.
// Deadlines: options.call bounds the whole call (HEAD, every chunk or part, Complete).
//
// The CUDA runtime is loaded when first needed (dlopen of libcudart), so neither the library
// nor its users need the CUDA toolkit to build, and a process without CUDA loads nothing.
//
// Threading: a DeviceStager serves one call at a time (calls from several threads are
// serialized); make one per thread for parallel transfers. The Client must outlive it.
// Errors: absl::Status with the AOBJ code attached (aobj/status.h); those of Client's calls,
// plus UNSUPPORTED_MEMORY_TYPE when no CUDA runtime or device is present and INTERNAL for a
// failed CUDA call (its message names the call and CUDA's error string).
#ifndef AOBJ_DEVICE_H_
#define AOBJ_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "aobj/client.h"

namespace aobj {

// What a pointer points at (MemoryKind, aobj/types.h): asks the CUDA driver already loaded in the process (libcuda.so.1, cuPointerGetAttribute);
// kHost when the process has not loaded it, since then no CUDA allocation can exist.
// Thread-safe.
MemoryKind ClassifyMemory(const void* p);

// Copies between host and device memory for DeviceStager, in `slots()` independent queues
// (CUDA streams): Start() queues a copy on a slot and returns; Finish() waits until every copy
// queued on that slot has completed. Implementations need not be thread-safe.
class DeviceCopier {
 public:
  enum class Direction { kToDevice, kToHost };
  virtual ~DeviceCopier() = default;
  virtual int slots() const = 0;
  // Makes host memory [p, p + size) fast to copy from and to (page-locks it); Unpin undoes it.
  virtual absl::Status Pin(void* p, size_t size) = 0;
  virtual void Unpin(void* p) = 0;
  virtual absl::Status Start(int slot, Direction direction, void* dst, const void* src,
                             size_t size) = 0;
  virtual absl::Status Finish(int slot) = 0;
};

// The CUDA runtime's copier on the calling thread's current device, with `slots` non-blocking
// streams. UNSUPPORTED_MEMORY_TYPE when libcudart cannot be loaded or there is no device.
absl::StatusOr<std::unique_ptr<DeviceCopier>> CudaRuntimeCopier(int slots);

struct DeviceStagingOptions {
  size_t chunk_bytes = size_t{16} << 20;  // per ranged GET and per part; at least 4 KiB
  // Staging buffers, 2 to 8: chunks in flight (a GET's copy overlaps the next chunk's transfer;
  // a PUT uploads up to this many parts at once, within ClientOptions::async_threads). 4 made
  // 64 MiB and 256 MiB PUTs about twice as fast as 2 on an H200 (docs/benchmarks.md 12.12).
  int depth = 4;
};

class DeviceStager {
 public:
  // Allocates and pins the staging buffers. `copier` null: CudaRuntimeCopier(options.depth).
  // INVALID_ARGUMENT for chunk_bytes or depth out of range.
  static absl::StatusOr<std::unique_ptr<DeviceStager>> Create(
      Client& client, const DeviceStagingOptions& options = {},
      std::unique_ptr<DeviceCopier> copier = nullptr);
  virtual ~DeviceStager() = default;

  // Reads bucket/key (or options.range of it) into device memory [device, device + capacity):
  // DESCRIPTOR_TOO_SMALL when it does not fit. Every chunk is verified like any GET (byte count,
  // checksum, range: AOBJ-DAT-004, AOBJ-DAT-105) and pinned to the version HEAD saw
  // (PRECONDITION_FAILED if the object changes meanwhile). On failure the device memory may
  // hold a prefix of the object; no copy into it is still running when the call returns.
  // `bytes_transferred` is the total; `range` is set when options.range was.
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             void* device, size_t capacity,
                                             const GetOptions& options = {}) = 0;
  // Stores device[0, size) under bucket/key (multipart above chunk_bytes; a failed multipart
  // upload is aborted). The device memory must not change until return.
  virtual absl::StatusOr<ObjectInfo> Put(const std::string& bucket, const std::string& key,
                                         const void* device, size_t size,
                                         const PutOptions& options = {}) = 0;
};

}  // namespace aobj

#endif  // AOBJ_DEVICE_H_
