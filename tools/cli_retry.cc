#include "cli_retry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
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

absl::Status RetryRepeatable(
    const RetryPolicy& policy, Sessions* sessions, Client& fallback,
    const std::function<absl::Status(Client&)>& call,
    const std::function<void(const absl::Status&, int, absl::Duration)>& before_retry) {
  absl::BitGen rng;
  for (int attempt = 1;; ++attempt) {
    uint64_t generation = 0;
    Client& c = sessions != nullptr ? sessions->Current(&generation) : fallback;
    const absl::Status st = call(c);
    if (st.ok() || attempt >= policy.max_attempts || !Retryable(st)) return st;
    const absl::Duration pause = policy.Pause(attempt, rng);
    if (before_retry) before_retry(st, attempt + 1, pause);
    absl::SleepFor(pause);
    if (sessions != nullptr && SessionLost(st)) {
      sessions->Renew(generation).IgnoreError();  // the next attempt says why
    }
  }
}

Sessions::Sessions(ClientOptions options, std::unique_ptr<Client> first,
                   std::vector<std::string> gateways,
                   std::function<void(const std::string&)> notice)
    : options_(std::move(options)),
      gateways_(gateways.empty() ? std::vector<std::string>{options_.endpoint}
                                 : std::move(gateways)),
      notice_(std::move(notice)) {
  absl::MutexLock l(&mu_);
  opened_.push_back({std::move(first), 0, 0});
  current_.assign(gateways_.size(), -1);
  current_[0] = 0;
}

Sessions::~Sessions() {
  absl::MutexLock l(&mu_);
  // The newest first: it is the one whose close the server can still answer.
  while (!opened_.empty()) opened_.pop_back();
}

absl::StatusOr<size_t> Sessions::OpenFrom(size_t g, const std::string& why_moved) {
  absl::Status last;
  for (size_t i = 0; i < gateways_.size(); ++i) {
    const size_t at = (g + i) % gateways_.size();
    if (at != g && current_[at] >= 0) {  // a gateway already in use takes the lanes over
      if (notice_) {
        notice_(absl::StrCat("gateway ", gateways_[g], " ", why_moved, ": ",
                             last.message().substr(0, 200), "; its transfers continue on ",
                             gateways_[at]));
      }
      return static_cast<size_t>(current_[at]);
    }
    ClientOptions o = options_;
    o.endpoint = gateways_[at];
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
    if (!c.ok()) {
      last = c.status();
      continue;
    }
    if (at != g && notice_) {
      notice_(absl::StrCat("gateway ", gateways_[g], " ", why_moved, ": ",
                           last.message().substr(0, 200), "; its transfers continue on ",
                           gateways_[at]));
    }
    opened_.push_back({*std::move(c), at, 0});
    current_[at] = static_cast<int64_t>(opened_.size() - 1);
    return opened_.size() - 1;
  }
  return last;
}

Client& Sessions::ForLane(size_t lane, uint64_t* generation) {
  absl::MutexLock l(&mu_);
  const size_t g = lane % gateways_.size();
  int64_t gen = current_[g];
  if (gen < 0) {
    absl::StatusOr<size_t> opened = OpenFrom(g, "cannot be reached");
    // None answers: the lane shares lane 0's session, whose failures the retries report.
    gen = opened.ok() ? static_cast<int64_t>(*opened) : current_[0] >= 0 ? current_[0] : 0;
    if (opened.ok() && opened_[*opened].gateway != g) {
      current_[g] = gen;  // this gateway's lanes stay on the one that answered
    }
  }
  if (generation != nullptr) *generation = static_cast<uint64_t>(gen);
  return *opened_[static_cast<size_t>(gen)].client;
}

absl::Status Sessions::Renew(uint64_t seen) {
  absl::MutexLock l(&mu_);
  if (seen >= opened_.size()) return absl::OkStatus();
  // Every gateway slot whose current session is `seen` moves to the new one.
  std::vector<size_t> slots;
  for (size_t g = 0; g < current_.size(); ++g) {
    if (current_[g] == static_cast<int64_t>(seen)) slots.push_back(g);
  }
  if (slots.empty()) return absl::OkStatus();  // another thread did it
  absl::StatusOr<size_t> next = OpenFrom(opened_[seen].gateway, "was lost");
  if (!next.ok()) return next.status();
  ++renewals_;
  for (size_t g : slots) current_[g] = static_cast<int64_t>(*next);
  return absl::OkStatus();
}

Client& Sessions::At(uint64_t generation) {
  absl::MutexLock l(&mu_);
  return *opened_[std::min<size_t>(generation, opened_.size() - 1)].client;
}

uint64_t Sessions::renewals() const {
  absl::MutexLock l(&mu_);
  return renewals_;
}

void Sessions::Served(uint64_t generation) {
  absl::MutexLock l(&mu_);
  if (generation < opened_.size()) ++opened_[generation].served;
}

std::vector<std::pair<std::string, uint64_t>> Sessions::ServedByGateway() const {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> by(gateways_.size(), 0);
  for (const Opened& o : opened_) by[o.gateway] += o.served;
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t g = 0; g < by.size(); ++g) {
    if (by[g] > 0) out.emplace_back(gateways_[g], by[g]);
  }
  return out;
}

std::vector<std::string> GatewayList(const std::vector<std::string>& configured,
                                     const std::vector<std::string>& listed, size_t limit) {
  std::vector<std::string> out;
  for (const auto* list : {&configured, &listed}) {
    for (const std::string& g : *list) {
      if (out.size() == limit) return out;
      if (!g.empty() && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
    }
  }
  return out;
}

}  // namespace aobj::cli
