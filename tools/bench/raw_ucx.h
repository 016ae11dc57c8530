// aobj-bench: the transport's limit. A raw UCX transfer of the same size, on the same transports
// and the same kind of memory as an AOBJ transfer, with none of our code in between.
//
// A target process (this executable with --internal-ucx-target, playing the client) allocates
// memory with ucp_mem_map(UCP_MEM_MAP_ALLOCATE), as aobj::Client::AllocateBuffer does, and passes
// its worker address, the packed rkey and the base address up a pipe. This process (playing the
// server) creates one UCP worker and endpoint per load thread (UCP_ERR_HANDLING_MODE_NONE, as the
// server does), unpacks the rkey once, and times ucp_put_nbx + ucp_ep_flush_nbx per operation
// for the GET direction and ucp_get_nbx + ucp_ep_flush_nbx for the PUT direction, polling the
// worker while an operation is in flight. The local side is ordinary pre-faulted heap memory, as
// the memory store's object buffers are.
//
// Threading: one coordinator thread drives a RawUcx; RunCell uses `threads` load threads.
#ifndef AOBJ_TOOLS_BENCH_RAW_UCX_H_
#define AOBJ_TOOLS_BENCH_RAW_UCX_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/load.h"
#include "bench/proc_util.h"

namespace aobj::bench {

class RawUcx {
 public:
  // `transports`: UCX_TLS for both sides ("" = UCX's choice). The pool gives local buffers.
  // `caller_memory`: the target registers pre-faulted heap memory (ucp_mem_map without
  // UCP_MEM_MAP_ALLOCATE), as aobj::Client::RegisterBuffer does, instead of letting UCX allocate.
  static absl::StatusOr<std::unique_ptr<RawUcx>> Start(const std::string& transports, int threads,
                                                       uint64_t max_size, BufferPool* pool,
                                                       bool caller_memory = false);
  ~RawUcx();
  RawUcx(const RawUcx&) = delete;
  RawUcx& operator=(const RawUcx&) = delete;

  // How the rkey is handled per operation. kOnce: unpacked at start (the transport's limit).
  // kPerOp: ucp_ep_rkey_unpack + ucp_rkey_destroy around every operation, as the server does per
  // request (a shared-memory rkey attaches the peer's segment, so every page faults again).
  // kPerOpPopulate: kPerOp plus madvise(MADV_POPULATE_WRITE/READ) over the window (through
  // ucp_rkey_ptr) before the transfer: one system call instead of a fault per page.
  // kVerified: kOnce plus the end-to-end checks an AOBJ transfer has, one after the other: the
  // client's CRC32C of the octets (AOBJ-DAT-004), computed as aobj's client computes it (in
  // pieces on up to four threads, none of them the initiator's; a body under one piece on the
  // initiator's thread) over the target's memory through its local mapping (ucp_rkey_ptr;
  // shared-memory lanes only), after a GET's flush and before a PUT's get (the checksum of its
  // source); and for a PUT the server's check of what it read (AOBJ-DAT-005), after the flush
  // on the initiator's thread. The client's check reads memory the next GET writes, so it also
  // slows that transfer: on the 2-core VM of docs/benchmarks.md a 64 MiB copy into memory that
  // another core had just read took twice as long (12.19).
  enum class RkeyMode { kOnce, kPerOp, kPerOpPopulate, kVerified };
  absl::StatusOr<LoadResult> RunCell(Op op, uint64_t size, const LoadSpec& spec,
                                     const std::function<void()>& at_start,
                                     RkeyMode mode = RkeyMode::kOnce);
  // The target process (the "client" side of the transfer).
  pid_t target_pid() const { return target_->pid(); }
  // UCX's description of thread 0's endpoint lanes (ucp_ep_print_info), for the report.
  const std::string& lanes() const { return lanes_; }

 private:
  struct Lane;
  RawUcx() = default;
  std::unique_ptr<ChildProcess> target_;
  void* context_ = nullptr;  // ucp_context_h
  std::vector<std::unique_ptr<Lane>> lanes_by_thread_;
  uint64_t remote_base_ = 0;
  std::string packed_rkey_;
  uint64_t max_size_ = 0;
  BufferPool* pool_ = nullptr;
  std::string lanes_;
};

// Entry point of `aobj-bench --internal-ucx-target BYTES [caller]`.
int UcxTargetMain(int argc, char** argv);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_RAW_UCX_H_
