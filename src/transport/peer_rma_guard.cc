#include "transport/peer_rma_guard.h"

#include <dlfcn.h>
#include <uct/api/uct.h>

#include <atomic>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace aobj {
namespace {

// UCX 1.13's ucp_am_handler_t (src/ucp/core/ucp_context.h); one global of this type per UCP
// message id, named ucp_am_handler_<id>, which ucp_worker_create() reads to install its handlers.
// The proxy is called with the worker interface (ucp_worker_iface_t, ucp_worker.h), whose
// worker pointer follows the UCT interface handle and attributes.
struct AmHandler {
  uint64_t features;
  uct_am_callback_t cb;
  void* tracer;
  uint32_t flags;
  uct_am_callback_t proxy_cb;
};
struct WorkerIfaceHead {
  uct_iface_h iface;
  uct_iface_attr_t attr;
  ucp_worker_h worker;
};

enum Kind { kPut, kGet, kAtomic, kKinds };
constexpr const char* kSymbols[kKinds] = {"ucp_am_handler_UCP_AM_ID_PUT",
                                          "ucp_am_handler_UCP_AM_ID_GET_REQ",
                                          "ucp_am_handler_UCP_AM_ID_ATOMIC_REQ"};
constexpr uint64_t kFeatures[kKinds] = {UCP_FEATURE_RMA, UCP_FEATURE_RMA,
                                        UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64};

struct Original {
  uct_am_callback_t cb = nullptr;
  uct_am_callback_t proxy_cb = nullptr;
};
Original originals[kKinds];
std::atomic<uint64_t> refused[kKinds];

absl::Mutex mu;
absl::flat_hash_set<ucp_worker_h>* marked ABSL_GUARDED_BY(mu) = nullptr;

bool Marked(ucp_worker_h worker) {
  absl::ReaderMutexLock l(&mu);
  return marked != nullptr && marked->contains(worker);
}

void Refuse(Kind kind) { refused[kind].fetch_add(1, std::memory_order_relaxed); }

template <Kind kind>
ucs_status_t Handler(void* arg, void* data, size_t length, unsigned flags) {
  if (Marked(static_cast<ucp_worker_h>(arg))) {
    Refuse(kind);
    return UCS_OK;  // consumed: UCT releases the data
  }
  return originals[kind].cb(arg, data, length, flags);
}

template <Kind kind>
ucs_status_t Proxy(void* arg, void* data, size_t length, unsigned flags) {
  if (Marked(static_cast<WorkerIfaceHead*>(arg)->worker)) {
    Refuse(kind);
    return UCS_OK;
  }
  return originals[kind].proxy_cb(arg, data, length, flags);
}

constexpr uct_am_callback_t kHandlers[kKinds] = {Handler<kPut>, Handler<kGet>, Handler<kAtomic>};
constexpr uct_am_callback_t kProxies[kKinds] = {Proxy<kPut>, Proxy<kGet>, Proxy<kAtomic>};

// Replaces the handlers once; the status says whether it could.
absl::Status Install() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  if (major != 1 || minor != 13) {
    return absl::FailedPreconditionError(absl::StrCat(
        "UCX ", major, ".", minor, ".", release,
        " is not 1.13: aobj does not know how to make its worker refuse peer-initiated RMA"));
  }
  AmHandler* table[kKinds];
  for (int k = 0; k < kKinds; ++k) {
    table[k] = static_cast<AmHandler*>(dlsym(RTLD_DEFAULT, kSymbols[k]));
    if (table[k] == nullptr || table[k]->cb == nullptr || table[k]->features != kFeatures[k]) {
      return absl::FailedPreconditionError(
          absl::StrCat("libucp has no handler ", kSymbols[k],
                       " of the UCX 1.13 layout: aobj cannot make its "
                       "worker refuse peer-initiated RMA"));
    }
    // The proxy (a counting wrapper, UCP_DEFINE_AM_WITH_PROXY) exists for put and get and atomic
    // requests in 1.13; a table without it is not the layout this file describes.
    if (table[k]->proxy_cb == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(kSymbols[k], " has no proxy handler: not the UCX 1.13 layout"));
    }
  }
  for (int k = 0; k < kKinds; ++k) {
    originals[k] = {table[k]->cb, table[k]->proxy_cb};
    table[k]->cb = kHandlers[k];
    table[k]->proxy_cb = kProxies[k];
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RefusePeerRma(ucp_worker_h worker) {
  // Workers created before the replacement keep UCX's handlers: it must happen before the first
  // worker of the process, which is why UcxContext::Create calls this with a null worker.
  static const absl::Status installed = Install();
  if (!installed.ok() || worker == nullptr) return installed;
  absl::MutexLock l(&mu);
  if (marked == nullptr) marked = new absl::flat_hash_set<ucp_worker_h>();
  marked->insert(worker);
  return absl::OkStatus();
}

void ForgetPeerRmaWorker(ucp_worker_h worker) {
  absl::MutexLock l(&mu);
  if (marked != nullptr) marked->erase(worker);
}

PeerRmaRefusals PeerRmaRefused() {
  return {refused[kPut].load(), refused[kGet].load(), refused[kAtomic].load()};
}

}  // namespace aobj
