#include "transport/ucx_handles.h"

#include "transport/peer_rma_guard.h"

namespace aobj {

UcxRequest::UcxRequest(ucs_status_ptr_t answer) {
  if (UCS_PTR_IS_ERR(answer)) {
    immediate_ = UCS_PTR_STATUS(answer);
  } else {
    request_ = answer;  // null: done at once
  }
}

UcxRequest& UcxRequest::operator=(UcxRequest&& other) noexcept {
  if (this != &other) {
    reset();
    request_ = std::exchange(other.request_, nullptr);
    immediate_ = other.immediate_;
  }
  return *this;
}

ucs_status_t UcxRequest::status() const {
  return request_ != nullptr ? ucp_request_check_status(request_) : immediate_;
}

void UcxRequest::reset() {
  if (request_ != nullptr) ucp_request_free(std::exchange(request_, nullptr));
  immediate_ = UCS_OK;
}

UcxRkey::UcxRkey(ucp_rkey_h rkey, std::atomic<uint64_t>* outstanding)
    : rkey_(rkey), outstanding_(outstanding) {
  if (rkey_ != nullptr && outstanding_ != nullptr) outstanding_->fetch_add(1);
}

UcxRkey& UcxRkey::operator=(UcxRkey&& other) noexcept {
  if (this != &other) {
    reset();
    rkey_ = std::exchange(other.rkey_, nullptr);
    outstanding_ = other.outstanding_;
  }
  return *this;
}

void UcxRkey::reset() {
  if (rkey_ == nullptr) return;
  ucp_rkey_destroy(std::exchange(rkey_, nullptr));
  if (outstanding_ != nullptr) outstanding_->fetch_sub(1);
}

void UcxRkey::Forget() {
  if (rkey_ == nullptr) return;
  rkey_ = nullptr;
  if (outstanding_ != nullptr) outstanding_->fetch_sub(1);
}

ucs_status_t UcxEndpoint::Create(ucp_worker_h worker, const ucp_ep_params_t& params,
                                 UcxEndpoint* out) {
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(worker, &params, &ep);
  *out = UcxEndpoint();
  if (st == UCS_OK) out->ep_ = ep;
  return st;
}

UcxEndpoint& UcxEndpoint::operator=(UcxEndpoint&& other) noexcept {
  if (this != &other) {
    if (ep_ != nullptr) Close(/*force=*/false);
    ep_ = std::exchange(other.ep_, nullptr);
  }
  return *this;
}

UcxEndpoint::~UcxEndpoint() {
  if (ep_ != nullptr) Close(/*force=*/false);
}

UcxRequest UcxEndpoint::Close(bool force) {
  if (ep_ == nullptr) return UcxRequest();
  ucp_request_param_t param{};
  if (force) {
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  }
  return UcxRequest(ucp_ep_close_nbx(std::exchange(ep_, nullptr), &param));
}

void WorkerDeleter::operator()(ucp_worker_h worker) const {
  ForgetPeerRmaWorker(worker);
  ucp_worker_destroy(worker);
}

}  // namespace aobj
