// Gateways (aobj/gateways.h): a client's sessions over several gateways of one store.
#include "aobj/gateways.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "aobj/status.h"
#include "wire/error_registry.h"

namespace aobj {

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

namespace {

std::string MovedLine(const std::string& from, const std::string& why, const absl::Status& last,
                      const std::string& to) {
  return absl::StrCat("gateway ", from, " ", why, ": ", last.message().substr(0, 200),
                      "; its transfers continue on ", to);
}

}  // namespace

struct Gateways::State {
  struct Opened {
    std::unique_ptr<Client> client;
    size_t gateway = 0;
    uint64_t served = 0;
  };

  State(ClientOptions o, std::vector<std::string> g, std::function<void(const std::string&)> n)
      : options(std::move(o)), gateways(std::move(g)), notice(std::move(n)) {}

  // A session on gateway `g`, or on the next gateway after it that answers (a gateway already
  // in use takes the lanes over); the index of the session in `opened`, or the error of the
  // last attempt. The line to tell `notice` when the lanes moved goes to `*moved`, for the
  // caller to emit once `mu` is released (a notice may call back into Gateways).
  absl::StatusOr<size_t> OpenFrom(size_t g, const std::string& why_moved, std::string* moved)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    absl::Status last;
    for (size_t i = 0; i < gateways.size(); ++i) {
      const size_t at = (g + i) % gateways.size();
      if (at != g && current[at] >= 0) {
        *moved = MovedLine(gateways[g], why_moved, last, gateways[at]);
        return static_cast<size_t>(current[at]);
      }
      ClientOptions o = options;
      o.endpoint = gateways[at];
      absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
      if (!c.ok()) {
        last = c.status();
        continue;
      }
      if (at != g) *moved = MovedLine(gateways[g], why_moved, last, gateways[at]);
      opened.push_back({*std::move(c), at, 0});
      current[at] = static_cast<int64_t>(opened.size() - 1);
      return opened.size() - 1;
    }
    return last;
  }

  void Tell(const std::string& line) const {
    if (notice && !line.empty()) notice(line);
  }

  mutable absl::Mutex mu;
  const ClientOptions options;
  const std::vector<std::string> gateways;  // [0]: the first session's
  const std::function<void(const std::string&)> notice;
  std::vector<Opened> opened ABSL_GUARDED_BY(mu);    // generation -> session
  std::vector<int64_t> current ABSL_GUARDED_BY(mu);  // per gateway: generation, or -1
  uint64_t renewals ABSL_GUARDED_BY(mu) = 0;
};

absl::StatusOr<std::unique_ptr<Gateways>> Gateways::Connect(
    const ClientOptions& options, const std::vector<std::string>& endpoints, size_t max_gateways,
    std::function<void(const std::string&)> notice) {
  if (endpoints.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "no gateway endpoints to connect to");
  }
  absl::Status last;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    ClientOptions o = options;
    o.endpoint = endpoints[i];
    absl::StatusOr<std::unique_ptr<Client>> first = Client::Connect(o);
    if (!first.ok()) {
      last = first.status();
      if (notice && i + 1 < endpoints.size()) {
        notice(absl::StrCat("gateway ", endpoints[i], " cannot be reached: ",
                            last.message().substr(0, 200), "; trying ", endpoints[i + 1]));
      }
      continue;
    }
    std::vector<std::string> configured = {endpoints[i]};
    configured.insert(configured.end(), endpoints.begin(), endpoints.end());
    std::vector<std::string> list =
        GatewayList(configured, (*first)->session().gateways, std::max<size_t>(max_gateways, 1));
    return std::make_unique<Gateways>(o, *std::move(first), std::move(list), std::move(notice));
  }
  return last;
}

Gateways::Gateways(ClientOptions options, std::unique_ptr<Client> first,
                   std::vector<std::string> gateways,
                   std::function<void(const std::string&)> notice) {
  if (gateways.empty()) gateways.push_back(options.endpoint);
  state_ = std::make_unique<State>(std::move(options), std::move(gateways), std::move(notice));
  absl::MutexLock l(&state_->mu);
  state_->opened.push_back({std::move(first), 0, 0});
  state_->current.assign(state_->gateways.size(), -1);
  state_->current[0] = 0;
}

Gateways::~Gateways() {
  absl::MutexLock l(&state_->mu);
  // The newest first: it is the one whose close the server can still answer.
  while (!state_->opened.empty()) state_->opened.pop_back();
}

const std::vector<std::string>& Gateways::gateways() const { return state_->gateways; }

Client& Gateways::ForLane(size_t lane, uint64_t* generation) {
  State& s = *state_;
  std::string moved;
  Client* client;
  {
    absl::MutexLock l(&s.mu);
    const size_t g = lane % s.gateways.size();
    int64_t gen = s.current[g];
    if (gen < 0) {
      absl::StatusOr<size_t> opened = s.OpenFrom(g, "cannot be reached", &moved);
      // None answers: the lane shares lane 0's session, whose failures the caller reports.
      gen = opened.ok() ? static_cast<int64_t>(*opened) : s.current[0] >= 0 ? s.current[0] : 0;
      if (opened.ok() && s.opened[*opened].gateway != g) {
        s.current[g] = gen;  // this gateway's lanes stay on the one that answered
      }
    }
    if (generation != nullptr) *generation = static_cast<uint64_t>(gen);
    client = s.opened[static_cast<size_t>(gen)].client.get();
  }
  s.Tell(moved);
  return *client;
}

absl::Status Gateways::Renew(uint64_t seen) {
  State& s = *state_;
  std::string moved;
  absl::Status result;
  {
    absl::MutexLock l(&s.mu);
    if (seen >= s.opened.size()) return absl::OkStatus();
    // Every gateway slot whose current session is `seen` moves to the new one.
    std::vector<size_t> slots;
    for (size_t g = 0; g < s.current.size(); ++g) {
      if (s.current[g] == static_cast<int64_t>(seen)) slots.push_back(g);
    }
    if (slots.empty()) return absl::OkStatus();  // another thread did it
    absl::StatusOr<size_t> next = s.OpenFrom(s.opened[seen].gateway, "was lost", &moved);
    if (next.ok()) {
      ++s.renewals;
      for (size_t g : slots) s.current[g] = static_cast<int64_t>(*next);
    } else {
      result = next.status();
    }
  }
  s.Tell(moved);
  return result;
}

Client& Gateways::At(uint64_t generation) {
  absl::MutexLock l(&state_->mu);
  return *state_->opened[std::min<size_t>(generation, state_->opened.size() - 1)].client;
}

std::string Gateways::GatewayOf(uint64_t generation) const {
  absl::MutexLock l(&state_->mu);
  const size_t at = std::min<size_t>(generation, state_->opened.size() - 1);
  return state_->gateways[state_->opened[at].gateway];
}

uint64_t Gateways::renewals() const {
  absl::MutexLock l(&state_->mu);
  return state_->renewals;
}

void Gateways::Served(uint64_t generation) {
  absl::MutexLock l(&state_->mu);
  if (generation < state_->opened.size()) ++state_->opened[generation].served;
}

std::vector<std::pair<std::string, uint64_t>> Gateways::ServedByGateway() const {
  absl::MutexLock l(&state_->mu);
  std::vector<uint64_t> by(state_->gateways.size(), 0);
  for (const State::Opened& o : state_->opened) by[o.gateway] += o.served;
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t g = 0; g < by.size(); ++g) {
    if (by[g] > 0) out.emplace_back(state_->gateways[g], by[g]);
  }
  return out;
}

}  // namespace aobj
