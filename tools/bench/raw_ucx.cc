#include "bench/raw_ucx.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/buffers.h"
#include "exec/helpers.h"
#include "wire/checksum.h"

namespace aobj::bench {
namespace {

std::string UcxError(const char* what, ucs_status_t st) {
  return absl::StrCat(what, ": ", ucs_status_string(st));
}

absl::StatusOr<ucp_context_h> InitContext(const std::string& transports, bool wakeup) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return absl::InternalError(UcxError("ucp_config_read", st));
  if (!transports.empty() && getenv("UCX_TLS") == nullptr) {
    st = ucp_config_modify(config, "TLS", transports.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return absl::InvalidArgumentError(UcxError("UCX_TLS", st));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | (wakeup ? UCP_FEATURE_WAKEUP : 0);
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return absl::InternalError(UcxError("ucp_init", st));
  return ctx;
}

// Keeps a computed checksum from being optimized away (nothing compares it: raw UCX has no peer
// that states one).
void Sink(uint32_t crc) {
  static std::atomic<uint32_t> sink{0};
  sink.fetch_xor(crc, std::memory_order_relaxed);
}

// Waits for a request by polling the worker (the transfer is what is measured).
ucs_status_t Wait(ucp_worker_h worker, ucs_status_ptr_t req) {
  if (req == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
  ucs_status_t st;
  while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) ucp_worker_progress(worker);
  ucp_request_free(req);
  return st;
}

// The CRC32C of [p, p + size) as aobj's client checks a body (client_internal::ChecksumOf: pieces
// of at least kParallelChecksumPiece on up to four threads, one per core, combined), run from a
// thread of its own, as the client's caller is not the thread that moved the octets. A body
// smaller than one piece is checked on this thread: starting a thread would cost more than the
// check (tens of microseconds here), which would make the line slower than the client's.
uint32_t ClientSideCrc32c(const uint8_t* p, uint64_t size) {
  if (size < client_internal::kParallelChecksumPiece) return Crc32c(0, p, size);
  static const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t pieces = std::max<uint64_t>(
      1, std::min<uint64_t>({cores, 4, size / client_internal::kParallelChecksumPiece}));
  std::vector<uint32_t> crcs(pieces);
  auto bound = [&](uint64_t k) { return k == pieces ? size : size / pieces * k; };
  std::thread caller([&] {
    RunInParallel(pieces, [&](size_t k) {
      crcs[k] = Crc32c(0, p + bound(k), static_cast<size_t>(bound(k + 1) - bound(k)));
    });
  });
  caller.join();
  uint32_t crc = crcs[0];
  for (uint64_t k = 1; k < pieces; ++k) crc = Crc32cCombine(crc, crcs[k], bound(k + 1) - bound(k));
  return crc;
}

}  // namespace

struct RawUcx::Lane {
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  ucp_rkey_h rkey = nullptr;
};

absl::StatusOr<std::unique_ptr<RawUcx>> RawUcx::Start(const std::string& transports, int threads,
                                                      uint64_t max_size, BufferPool* pool,
                                                      bool caller_memory) {
  std::unique_ptr<RawUcx> r(new RawUcx());
  r->max_size_ = max_size;
  r->pool_ = pool;
  ChildProcess::Options c;
  c.argv = {SelfExe(), "--internal-ucx-target",
            absl::StrCat(max_size * static_cast<uint64_t>(threads))};
  if (caller_memory) c.argv.push_back("caller");
  if (!transports.empty()) c.env["UCX_TLS"] = transports;
  c.pipe_stdio = true;
  auto child = ChildProcess::Start(c);
  if (!child.ok()) return child.status();
  r->target_ = std::move(*child);
  std::string addr, rkey, line;
  uint64_t base = 0;
  for (;;) {
    if (!r->target_->ReadLine(&line, 120000)) {
      return absl::InternalError("raw UCX target exited before it was ready");
    }
    if (absl::StartsWith(line, "ERROR ")) return absl::InternalError(line.substr(6));
    if (absl::StartsWith(line, "ADDR ")) addr = absl::HexStringToBytes(line.substr(5));
    if (absl::StartsWith(line, "RKEY ")) rkey = absl::HexStringToBytes(line.substr(5));
    if (absl::StartsWith(line, "BASE ") && !absl::SimpleAtoi(line.substr(5), &base)) {
      return absl::InternalError("raw UCX target sent a bad base address");
    }
    if (line == "READY") break;
  }
  r->remote_base_ = base;
  r->packed_rkey_ = rkey;
  auto ctx = InitContext(transports, /*wakeup=*/false);
  if (!ctx.ok()) return ctx.status();
  r->context_ = *ctx;
  for (int t = 0; t < threads; ++t) {
    auto lane = std::make_unique<Lane>();
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucs_status_t st = ucp_worker_create(*ctx, &wp, &lane->worker);
    if (st != UCS_OK) return absl::InternalError(UcxError("ucp_worker_create", st));
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(addr.data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // as the server: PEER would exclude shm lanes
    st = ucp_ep_create(lane->worker, &ep, &lane->ep);
    if (st != UCS_OK) {
      ucp_worker_destroy(lane->worker);
      return absl::InternalError(UcxError("ucp_ep_create", st));
    }
    st = ucp_ep_rkey_unpack(lane->ep, rkey.data(), &lane->rkey);
    if (st != UCS_OK) {
      r->lanes_by_thread_.push_back(std::move(lane));
      return absl::InternalError(UcxError("ucp_ep_rkey_unpack", st));
    }
    if (t == 0) {
      char* text = nullptr;
      size_t size = 0;
      FILE* f = open_memstream(&text, &size);
      ucp_ep_print_info(lane->ep, f);
      fclose(f);
      std::vector<std::string> lanes;
      for (absl::string_view l : absl::StrSplit(absl::string_view(text, size), '\n')) {
        if (!absl::StrContains(l, "lane[")) continue;
        l = absl::StripAsciiWhitespace(absl::StripPrefix(l, "#"));
        lanes.emplace_back(l.substr(0, l.find("md[")));
        lanes.back() = std::string(absl::StripAsciiWhitespace(lanes.back()));
      }
      r->lanes_ = absl::StrJoin(lanes, ", ");
      free(text);
    }
    r->lanes_by_thread_.push_back(std::move(lane));
  }
  pool->Reserve(static_cast<size_t>(threads));
  return r;
}

RawUcx::~RawUcx() {
  for (auto& lane : lanes_by_thread_) {
    if (lane->rkey != nullptr) ucp_rkey_destroy(lane->rkey);
    if (lane->ep != nullptr) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      Wait(lane->worker, ucp_ep_close_nbx(lane->ep, &p));
    }
    if (lane->worker != nullptr) ucp_worker_destroy(lane->worker);
  }
  lanes_by_thread_.clear();
  if (context_ != nullptr) ucp_cleanup(static_cast<ucp_context_h>(context_));
  if (target_ != nullptr) {
    target_->CloseStdin();
    target_->Stop(15, 3000);
  }
}

absl::StatusOr<LoadResult> RawUcx::RunCell(Op op, uint64_t size, const LoadSpec& spec,
                                           const std::function<void()>& at_start, RkeyMode mode) {
  if (size > max_size_) return absl::InvalidArgumentError("size above the target's buffer");
  LoadSpec s = spec;
  s.threads = static_cast<int>(lanes_by_thread_.size());
  const std::string* packed = &packed_rkey_;
  ThreadSetup setup = [&](int t) -> absl::StatusOr<OpFn> {
    Lane* lane = lanes_by_thread_[static_cast<size_t>(t)].get();
    uint8_t* local = pool_->Get(static_cast<size_t>(t), max_size_);
    if (local == nullptr) return absl::ResourceExhaustedError("cannot allocate a local buffer");
    const uint64_t remote = remote_base_ + static_cast<uint64_t>(t) * max_size_;
    return OpFn([lane, local, remote, size, op, mode, packed]() -> absl::Status {
      ucp_rkey_h rkey = lane->rkey;
      const uint8_t* mine = nullptr;  // kVerified: the target's window, mapped here
      if (mode == RkeyMode::kVerified) {
        void* mapped = nullptr;
        if (ucp_rkey_ptr(rkey, remote, &mapped) != UCS_OK) {
          return absl::UnimplementedError(
              "ucx-verified reads the target's memory through a shared-memory lane, and this "
              "transport has none");
        }
        mine = static_cast<const uint8_t*>(mapped);
        if (op == Op::kPut) Sink(ClientSideCrc32c(mine, size));
      }
      if (mode != RkeyMode::kOnce && mode != RkeyMode::kVerified) {
        ucs_status_t st = ucp_ep_rkey_unpack(lane->ep, packed->data(), &rkey);
        if (st != UCS_OK) return absl::InternalError(UcxError("ucp_ep_rkey_unpack", st));
        void* mapped = nullptr;
        if (mode == RkeyMode::kPerOpPopulate && ucp_rkey_ptr(rkey, remote, &mapped) == UCS_OK) {
          const uintptr_t page = 4096;
          const uintptr_t lo = reinterpret_cast<uintptr_t>(mapped) & ~(page - 1);
          const uintptr_t hi =
              (reinterpret_cast<uintptr_t>(mapped) + size + page - 1) & ~(page - 1);
          madvise(reinterpret_cast<void*>(lo), hi - lo,
                  op == Op::kGet ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
        }
      }
      ucp_request_param_t p{};
      ucs_status_ptr_t req = op == Op::kGet ? ucp_put_nbx(lane->ep, local, size, remote, rkey, &p)
                                            : ucp_get_nbx(lane->ep, local, size, remote, rkey, &p);
      ucs_status_t st = Wait(lane->worker, req);
      if (st == UCS_OK) {
        ucp_request_param_t fp{};
        st = Wait(lane->worker, ucp_ep_flush_nbx(lane->ep, &fp));
      }
      if (mode == RkeyMode::kPerOp || mode == RkeyMode::kPerOpPopulate) ucp_rkey_destroy(rkey);
      if (st != UCS_OK) return absl::InternalError(UcxError("RMA", st));
      if (mode == RkeyMode::kVerified) {
        // GET: the client's check of what landed; PUT: the server's of what it read
        // (AOBJ-DAT-005), on the initiator's thread.
        Sink(op == Op::kGet ? ClientSideCrc32c(mine, size) : Crc32c(0, local, size));
      }
      return absl::OkStatus();
    });
  };
  return RunLoad(s, size, setup, [&]() -> absl::Status {
    if (at_start) at_start();
    return absl::OkStatus();
  });
}

// ---- the target process ------------------------------------------------------------------------

int UcxTargetMain(int argc, char** argv) {
  auto fail = [](const std::string& msg) {
    std::printf("ERROR %s\n", msg.c_str());
    std::fflush(stdout);
    return 1;
  };
  uint64_t bytes = 0;
  if (argc < 3 || !absl::SimpleAtoi(argv[2], &bytes) || bytes == 0) {
    return fail("usage: --internal-ucx-target BYTES [caller]");
  }
  const bool caller = argc >= 4 && std::string(argv[3]) == "caller";
  void* heap = nullptr;
  if (caller) {
    heap = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (heap == MAP_FAILED) return fail("mmap failed");
  }
  auto ctx = InitContext("", /*wakeup=*/true);  // UCX_TLS, if any, came in the environment
  if (!ctx.ok()) return fail(std::string(ctx.status().message()));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  ucs_status_t st = ucp_worker_create(*ctx, &wp, &worker);
  if (st != UCS_OK) return fail(UcxError("ucp_worker_create", st));
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                  UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  mp.address = heap;
  mp.length = bytes;
  mp.flags = caller ? 0 : UCP_MEM_MAP_ALLOCATE;
  mp.memory_type = UCS_MEMORY_TYPE_HOST;
  ucp_mem_h memh = nullptr;
  st = ucp_mem_map(*ctx, &mp, &memh);
  if (st != UCS_OK) return fail(UcxError("ucp_mem_map", st));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  st = ucp_mem_query(memh, &attr);
  if (st != UCS_OK) return fail(UcxError("ucp_mem_query", st));
  auto* base = static_cast<uint8_t*>(attr.address);
  for (uint64_t off = 0; off < bytes; off += 4096) base[off] = 1;  // pre-fault
  void* rkey = nullptr;
  size_t rkey_size = 0;
  st = ucp_rkey_pack(*ctx, memh, &rkey, &rkey_size);
  if (st != UCS_OK) return fail(UcxError("ucp_rkey_pack", st));
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(worker, &addr, &addr_len);
  if (st != UCS_OK) return fail(UcxError("ucp_worker_get_address", st));
  std::printf(
      "ADDR %s\nRKEY %s\nBASE %llu\nREADY\n",
      absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(addr), addr_len)).c_str(),
      absl::BytesToHexString(absl::string_view(static_cast<char*>(rkey), rkey_size)).c_str(),
      static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(base)));
  std::fflush(stdout);
  ucp_worker_release_address(worker, addr);
  ucp_rkey_buffer_release(rkey);

  // Serve (emulated RMA over tcp needs the target's progress) until stdin closes. On UCX-allocated
  // memory the shared-memory lanes need no target progress, so sleep on the worker's event fd in
  // between and cost no CPU. Caller memory is reached by emulation over active messages, which
  // the target must serve: spin, the best case for that path.
  int efd = -1;
  ucp_worker_get_efd(worker, &efd);
  if (caller) {
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    for (;;) {
      for (int i = 0; i < 1000; ++i) ucp_worker_progress(worker);
      char c;
      const ssize_t r = read(0, &c, 1);
      if (r == 0 || (r < 0 && errno != EAGAIN)) break;
    }
  }
  for (; !caller;) {
    while (ucp_worker_progress(worker) != 0) {
    }
    if (ucp_worker_arm(worker) == UCS_ERR_BUSY) continue;
    pollfd p[2] = {{efd, POLLIN, 0}, {0, POLLIN, 0}};
    if (poll(p, 2, 1000) < 0) continue;
    if (p[1].revents != 0) {
      char c;
      if (read(0, &c, 1) <= 0) break;
    }
  }
  ucp_mem_unmap(*ctx, memh);
  if (heap != nullptr) munmap(heap, bytes);
  ucp_worker_destroy(worker);
  ucp_cleanup(*ctx);
  return 0;
}

}  // namespace aobj::bench
