#include "server/staged_transfer.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace aobj {

std::unique_ptr<uint8_t[]> StagingPool::Take() {
  {
    absl::MutexLock l(&mu_);
    if (!free_.empty()) {
      auto b = std::move(free_.back());
      free_.pop_back();
      return b;
    }
  }
  auto b = std::unique_ptr<uint8_t[]>(new uint8_t[buffer_bytes_]);
  std::memset(b.get(), 0, buffer_bytes_);  // fault the pages in once
  return b;
}

void StagingPool::Give(std::unique_ptr<uint8_t[]> buffer) {
  absl::MutexLock l(&mu_);
  if (free_.size() < 16) free_.push_back(std::move(buffer));
}

absl::Status RunStaged(StagingPool& pool, uint64_t size, StageOrder order,
                       absl::Span<uint8_t> direct, StageStep transfer, StageStep io) {
  const uint64_t chunk = pool.buffer_bytes();
  StagingPool::Lease bufs[2];  // returned to the pool on every return, after the helper's join
  if (direct.empty()) {
    bufs[0] = pool.Lend();
    if (size > chunk) bufs[1] = pool.Lend();
  }
  auto buffer = [&](int k, uint64_t offset) {
    return direct.empty() ? bufs[k % 2].get() : direct.data() + offset;
  };
  auto length = [&](uint64_t offset) { return std::min(chunk, size - offset); };
  const bool io_first = order == StageOrder::kIoFirst;
  const bool overlapped = chunk >= kOverlapMinBytes;
  absl::Status st;
  {
    Overlap overlap;  // joined before the buffers go back, also on an early return
    if (io_first && size > 0) st = io(buffer(0, 0), 0, length(0));
    int k = 0;
    for (uint64_t off = 0; off < size && st.ok(); off += chunk, ++k) {
      const uint64_t n = length(off);
      uint8_t* buf = buffer(k, off);
      const uint64_t next = off + n;
      const bool more = next < size;
      // GET: the next chunk is read while this one travels.
      if (io_first && more && overlapped) {
        overlap.Run([&io, next_buf = buffer(k + 1, next), next, m = length(next)] {
          return io(next_buf, next, m);
        });
      }
      st = transfer(buf, off, n);
      // The helper's step (the next chunk's read, or the chunk before's checks) is over.
      if (absl::Status behind = overlap.Wait(); st.ok()) st = std::move(behind);
      if (!st.ok()) break;
      if (io_first) {
        if (more && !overlapped) st = io(buffer(k + 1, next), next, length(next));
      } else if (more && overlapped) {
        // PUT: this chunk is checked and stored while the next one travels; the last chunk has
        // nothing to overlap with.
        overlap.Run([&io, buf, off, n] { return io(buf, off, n); });
      } else {
        st = io(buf, off, n);
      }
    }
    if (absl::Status behind = overlap.Wait(); st.ok()) st = std::move(behind);
  }
  return st;
}

}  // namespace aobj
