// Moving a body through two staging buffers, and the helper thread that overlaps its store
// side with its data-channel side: one home for GetObject's and ReceiveBody's (PutObject,
// UploadPart) chunked transfers.
//
// A body of `size` octets moves in chunks of the pool's buffer size. Each chunk has a transfer
// step (RMA over the data channel) and an I/O step (the store read and checksum of a GET, the
// checksums and store append of a PUT). While one chunk travels, the I/O step of its neighbour
// runs on a helper thread: the next chunk's read for a GET (I/O before transfer), the previous
// chunk's checksums for a PUT (I/O after transfer). So a large transfer costs about the larger
// of the two rather than their sum. I/O steps run strictly in chunk order; the first error of
// either kind ends the loop after the helper has finished (no step runs after it returns).
//
// Threading: StagingPool is thread-safe; RunStaged is used by one thread (its helper is
// exec/helpers.h's Overlap).
#ifndef AOBJ_SERVER_STAGED_TRANSFER_H_
#define AOBJ_SERVER_STAGED_TRANSFER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "exec/helpers.h"

namespace aobj {

// Reusable staging buffers (pre-faulted once, reused: fresh pages are slow to first touch).
class StagingPool {
 public:
  // One buffer of the pool, lent until the lease is destroyed (on every return of its user).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&&) = default;
    Lease& operator=(Lease&& other) {
      Return();
      pool_ = other.pool_;
      buffer_ = std::move(other.buffer_);
      return *this;
    }
    ~Lease() { Return(); }
    uint8_t* get() const { return buffer_.get(); }

   private:
    friend class StagingPool;
    Lease(StagingPool* pool, std::unique_ptr<uint8_t[]> buffer)
        : pool_(pool), buffer_(std::move(buffer)) {}
    void Return() {
      if (buffer_) pool_->Give(std::move(buffer_));
    }
    StagingPool* pool_ = nullptr;
    std::unique_ptr<uint8_t[]> buffer_;
  };

  explicit StagingPool(size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}
  Lease Lend() { return Lease(this, Take()); }
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  std::unique_ptr<uint8_t[]> Take();
  void Give(std::unique_ptr<uint8_t[]> buffer);

  const size_t buffer_bytes_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<uint8_t[]>> free_ ABSL_GUARDED_BY(mu_);
};

// Chunks smaller than this are not worth a thread (a server configured with small staging
// buffers would otherwise start one per few kilobytes); their work runs on the caller's thread.
inline constexpr uint64_t kOverlapMinBytes = uint64_t{1} << 20;

// Whether a chunk's I/O step comes before its transfer (GET: read, then send) or after (PUT:
// receive, then check and store).
enum class StageOrder { kIoFirst, kTransferFirst };

// A chunk: `buffer` holds octets [offset, offset + n) of the body.
using StageStep = absl::FunctionRef<absl::Status(uint8_t* buffer, uint64_t offset, uint64_t n)>;

// Runs the chunks of a `size`-octet body as the header says. `direct` (may be empty): memory of
// the whole body to use instead of staging buffers (a store's own buffer for a PUT). `io` may run
// on the helper thread; `transfer` runs on the caller's.
absl::Status RunStaged(StagingPool& pool, uint64_t size, StageOrder order,
                       absl::Span<uint8_t> direct, StageStep transfer, StageStep io);

}  // namespace aobj

#endif  // AOBJ_SERVER_STAGED_TRANSFER_H_
