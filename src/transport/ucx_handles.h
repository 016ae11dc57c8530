// Owners of UCX's handles: the one place where each kind is released.
//
// A UCX call that starts an operation (ucp_*_nbx) answers one of three things (UCX's own
// examples spell them out): done at once (NULL), failed at once (UCS_PTR_IS_ERR), or a request
// in progress that the caller must free. UcxRequest holds that answer and frees the request;
// UcxRkey destroys an unpacked rkey; UcxEndpoint closes an endpoint; WorkerPtr destroys a worker
// (first unmarking it, AOBJ-SEC-020). Each is move-only.
//
// What must outlive what (UCX 1.13.1): every request, rkey and endpoint of a worker is released
// before the worker is destroyed, because they live in the worker's memory pools. Where a worker
// is destroyed with some of them still held (it ends their operations; shutdown, a failed
// session's emulation worker), the holder calls Forget() on them first: they died with it.
// A request freed while in progress is handed back to UCX, which completes it internally; a send
// request may still read its payload until the worker has progressed it or been destroyed.
//
// The one exception to UcxRequest: RMA operations (ucp_put_nbx / ucp_get_nbx) of a batch are
// counted by their completion callbacks, which free their own request (UcxWorker's OnRmaDone):
// destroying a worker ends those operations without a request the batch could poll.
//
// Threading: like the handles they hold, only the thread that progresses their worker.
#ifndef AOBJ_TRANSPORT_UCX_HANDLES_H_
#define AOBJ_TRANSPORT_UCX_HANDLES_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace aobj {

// The answer of one ucp_*_nbx call that has no completion callback.
class UcxRequest {
 public:
  UcxRequest() = default;
  explicit UcxRequest(ucs_status_ptr_t answer);
  UcxRequest(UcxRequest&& other) noexcept
      : request_(std::exchange(other.request_, nullptr)), immediate_(other.immediate_) {}
  UcxRequest& operator=(UcxRequest&& other) noexcept;
  UcxRequest(const UcxRequest&) = delete;
  UcxRequest& operator=(const UcxRequest&) = delete;
  ~UcxRequest() { reset(); }

  // UCS_INPROGRESS while the operation runs, then UCS_OK or why it failed.
  ucs_status_t status() const;
  bool pending() const { return status() == UCS_INPROGRESS; }
  // Frees the request (handing one still in progress back to UCX); status() is then UCS_OK.
  void reset();
  // Its worker was destroyed with it: drop the request without touching it.
  void Forget() { request_ = nullptr; }

 private:
  void* request_ = nullptr;
  ucs_status_t immediate_ = UCS_OK;  // the answer when no request was returned
};

// An unpacked rkey. `outstanding` (may be null, must outlive this) counts live rkeys.
class UcxRkey {
 public:
  UcxRkey() = default;
  UcxRkey(ucp_rkey_h rkey, std::atomic<uint64_t>* outstanding);
  UcxRkey(UcxRkey&& other) noexcept
      : rkey_(std::exchange(other.rkey_, nullptr)), outstanding_(other.outstanding_) {}
  UcxRkey& operator=(UcxRkey&& other) noexcept;
  UcxRkey(const UcxRkey&) = delete;
  UcxRkey& operator=(const UcxRkey&) = delete;
  ~UcxRkey() { reset(); }

  ucp_rkey_h get() const { return rkey_; }
  explicit operator bool() const { return rkey_ != nullptr; }
  // ucp_rkey_destroy.
  void reset();
  // Its worker was destroyed with it (its memory went with the worker's pools).
  void Forget();

 private:
  ucp_rkey_h rkey_ = nullptr;
  std::atomic<uint64_t>* outstanding_ = nullptr;
};

// An endpoint. Closing is asynchronous: Close() hands back the close request, which the owner
// keeps until it completes (UcxWorker's closing list). Destroying an endpoint that was not
// closed starts a flushing close and hands its request to UCX.
class UcxEndpoint {
 public:
  UcxEndpoint() = default;
  // ucp_ep_create; on failure `*out` stays empty.
  static ucs_status_t Create(ucp_worker_h worker, const ucp_ep_params_t& params, UcxEndpoint* out);
  UcxEndpoint(UcxEndpoint&& other) noexcept : ep_(std::exchange(other.ep_, nullptr)) {}
  UcxEndpoint& operator=(UcxEndpoint&& other) noexcept;
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;
  ~UcxEndpoint();

  ucp_ep_h get() const { return ep_; }
  explicit operator bool() const { return ep_ != nullptr; }
  // Starts closing; the endpoint is empty afterwards. `force` (error mode PEER only: UCX 1.13.1
  // refuses it for mode NONE) completes every operation still outstanding with
  // UCS_ERR_CANCELED at once instead of waiting for them and the peer.
  UcxRequest Close(bool force);
  // Its worker was destroyed, and the endpoint with it.
  void Forget() { ep_ = nullptr; }

 private:
  ucp_ep_h ep_ = nullptr;
};

// Destroys a worker, first unmarking it (AOBJ-SEC-020, transport/peer_rma_guard.h).
struct WorkerDeleter {
  void operator()(ucp_worker_h worker) const;
};
using WorkerPtr = std::unique_ptr<std::remove_pointer_t<ucp_worker_h>, WorkerDeleter>;

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_UCX_HANDLES_H_
