#include "cli_retry.h"

#include <algorithm>
#include <utility>

#include "aobj/status.h"
#include "wire/error_registry.h"

namespace aobj::cli {

absl::Duration RetryPolicy::Pause(int attempt, absl::BitGen& rng) const {
  absl::Duration d = base;
  for (int i = 1; i < attempt && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  const double half = absl::ToDoubleSeconds(d) / 2;
  return absl::Seconds(half + absl::Uniform(rng, 0.0, half));
}

bool SessionLost(const absl::Status& status) {
  if (!ControlChannelFailure(status).empty()) return true;
  switch (ErrorCodeOf(status)) {
    case ErrorCode::kNoSuchSession:
    case ErrorCode::kSessionExpired:
    case ErrorCode::kDataChannelUnavailable:
    case ErrorCode::kDeadlineExceeded:
    case ErrorCode::kTransferFailed:
    case ErrorCode::kEndpointUnconfirmed:
      return status.GetPayload(kErrorCodePayloadUrl).has_value();
    default:
      return false;
  }
}

bool UnknownOutcome(const absl::Status& status) {
  if (!ControlChannelFailure(status).empty()) return true;
  const ErrorCode code = ErrorCodeOf(status);
  return code == ErrorCode::kDeadlineExceeded || code == ErrorCode::kCancelled;
}

bool Retryable(const absl::Status& status) {
  if (status.ok()) return false;
  if (SessionLost(status)) return true;
  if (!status.GetPayload(kErrorCodePayloadUrl).has_value()) return false;  // not the server's
  return GetErrorInfo(ErrorCodeOf(status)).retryable;
}

Sessions::Sessions(ClientOptions options, std::unique_ptr<Client> first)
    : options_(std::move(options)) {
  clients_.push_back(std::move(first));
}

Sessions::~Sessions() {
  absl::MutexLock l(&mu_);
  // The newest first: it is the one whose close the server can still answer.
  while (!clients_.empty()) clients_.pop_back();
}

Client& Sessions::Current(uint64_t* generation) {
  absl::MutexLock l(&mu_);
  if (generation != nullptr) *generation = clients_.size() - 1;
  return *clients_.back();
}

absl::Status Sessions::Renew(uint64_t seen) {
  absl::MutexLock l(&mu_);
  if (clients_.size() - 1 != seen) return absl::OkStatus();  // another thread did it
  absl::StatusOr<std::unique_ptr<Client>> next = Client::Connect(options_);
  if (!next.ok()) return next.status();
  clients_.push_back(std::move(*next));
  return absl::OkStatus();
}

Client& Sessions::At(uint64_t generation) {
  absl::MutexLock l(&mu_);
  return *clients_[std::min<size_t>(generation, clients_.size() - 1)];
}

uint64_t Sessions::renewals() const {
  absl::MutexLock l(&mu_);
  return clients_.size() - 1;
}

}  // namespace aobj::cli
