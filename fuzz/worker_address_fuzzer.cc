// Packed UCP worker addresses from a peer (spec AOBJ-SES-011): ParseWorkerAddress and
// CheckWorkerAddress never read outside the blob, and whatever they accept is a complete address
// of UCX 1.13's layout whose entries all lie inside the blob.
//
// With AOBJ_FUZZ_UCX=1 in the environment, every accepted input is also handed to a real
// ucp_ep_create (through UcxWorker::Connect, checked against that worker's own address): UCX must
// refuse it or connect, never abort. Off by default: UCX's memory hooks and shared-memory
// transports are more than a sanitizer run on a shared machine should carry.
// AOBJ_FUZZ_COVERS: src/transport/address_check.cc
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "transport/address_check.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"

namespace {

// A stand-in for this side's address with the transports of the project's machines (UCX 1.13.1,
// v1 layout): self (device 0, iface 8), tcp (18, 2), sysv (8, 8), posix (8, 8), cma (8, 4).
std::string SyntheticLocal() {
  struct Tl {
    uint16_t csum;
    uint8_t dev_len, iface_len;
  };
  const Tl tls[] = {{0x7563, 0, 8}, {0x19cf, 18, 2}, {0x538d, 8, 8}, {0xd3a7, 8, 8},
                    {0x8b47, 8, 4}};
  std::string a(1, '\x20');        // v1, flags WORKER_UUID
  a += std::string(8, '\x5a');     // uuid
  for (size_t i = 0; i < 5; ++i) {
    a.push_back(static_cast<char>(i));                                        // md index
    a.push_back(static_cast<char>(tls[i].dev_len | (i == 4 ? 0x80 : 0)));     // LAST device
    a += std::string(tls[i].dev_len, '\x01');
    a.push_back(static_cast<char>(tls[i].csum & 0xFF));
    a.push_back(static_cast<char>(tls[i].csum >> 8));
    a += std::string(16, '\0');                                               // attributes
    a.push_back(static_cast<char>(tls[i].iface_len | 0x80));                  // LAST iface
    // posix: seg_id with UCT_POSIX_SEG_FLAG_PROCFS, as UCX packs it by default.
    std::string iface(tls[i].iface_len, '\x02');
    if (tls[i].csum == 0xd3a7) iface[7] = '\x80';
    a += iface;
  }
  return a;
}

struct Ucx {
  std::unique_ptr<aobj::UcxContext> context;
  std::unique_ptr<aobj::UcxWorker> worker;
};

Ucx* RealUcx() {
  static Ucx* ucx = [] () -> Ucx* {
    const char* on = std::getenv("AOBJ_FUZZ_UCX");
    if (on == nullptr || std::string(on) != "1") return nullptr;
    auto u = new Ucx;
    auto ctx = aobj::UcxContext::Create(aobj::DataChannelOptions{});
    AOBJ_FUZZ_CHECK(ctx.ok());
    u->context = std::move(*ctx);
    auto w = aobj::UcxWorker::Create(*u->context, "fuzz-worker-address");
    AOBJ_FUZZ_CHECK(w.ok());
    u->worker = std::move(*w);
    return u;
  }();
  return ucx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy to an exact-size heap buffer so ASan sees any read past the end.
  const std::string blob(reinterpret_cast<const char*>(data), size);
  static const std::string local = SyntheticLocal();
  AOBJ_FUZZ_CHECK(aobj::ParseWorkerAddress(local).ok());

  auto layout = aobj::ParseWorkerAddress(blob);
  const bool accepted = aobj::CheckWorkerAddress(blob, local).ok();
  if (accepted) AOBJ_FUZZ_CHECK(layout.ok());
  if (layout.ok()) {
    AOBJ_FUZZ_CHECK(layout->version <= 1);
    // Smallest: v1 header + uuid + UCP_NULL_RESOURCE; v2 header + UCP_NULL_RESOURCE.
    AOBJ_FUZZ_CHECK(size >= (layout->version == 0 ? 10u : 3u));
    AOBJ_FUZZ_CHECK(layout->entries.size() <= aobj::kUcpMaxResources);
    size_t prev_end = 0;
    for (const aobj::WorkerAddressEntry& e : layout->entries) {
      AOBJ_FUZZ_CHECK(e.md_index < aobj::kUcpMaxMds);
      AOBJ_FUZZ_CHECK(e.device < layout->devices);
      AOBJ_FUZZ_CHECK(e.iface_addr_offset >= prev_end);
      AOBJ_FUZZ_CHECK(e.iface_addr_offset <= size && e.iface_addr_len <= size - e.iface_addr_offset);
      prev_end = e.iface_addr_offset + e.iface_addr_len;
      if (accepted) AOBJ_FUZZ_CHECK(e.ep_addrs == 0);
    }
  }
  if (Ucx* ucx = RealUcx()) {
    auto ep = ucx->worker->Connect(blob);  // runs CheckWorkerAddress against the real address
    if (ep.ok()) ucx->worker->Disconnect(*ep);
  }
  return 0;
}
