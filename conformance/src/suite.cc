#include "conformance/src/suite.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "conformance/src/cases_util.h"
#include "conformance/src/peer.h"
#include "wire/crypto.h"

namespace aobj::conformance {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kNonStrict: return "NON-STRICT";
    case Verdict::kUnsupported: return "UNSUPPORTED";
    case Verdict::kInformational: return "INFORMATIONAL";
  }
  return "?";
}

const Requirement* FindRequirement(std::string_view id) {
  for (const auto& r : Requirements()) {
    if (id == r.id) return &r;
  }
  return nullptr;
}

bool IsMustLevel(std::string_view level) { return level == "MUST" || level == "MUST NOT"; }
bool IsShouldLevel(std::string_view level) {
  return level == "SHOULD" || level == "SHOULD NOT";
}

const std::vector<Unobservable>& UnobservableRequirements() {
  static const auto* kList = new std::vector<Unobservable>{
      {"AOBJ-MEM-025", "what a client relies on inside its own process"},
      {"AOBJ-MEM-026",
       "what memory a client's descriptor names is not visible on EMULATED "
       "channels; tests/integration/device_staging_test.cc checks the reference "
       "client's refusal and staging"},
      {"AOBJ-FLO-002", "the order of checks inside the server; flo/10/1 checks admission"},
      {"AOBJ-ERR-010",
       "the registry assigns no code at or above 0x80000000 and a target's "
       "private codes cannot be provoked from the wire"},
      {"AOBJ-CTL-003", "a rule for revisions of the .proto file, not for a running peer"},
      {"AOBJ-EXT-006", "a rule for revisions of the protocol"},
      {"AOBJ-EXT-008", "a rule for the registries"},
      {"AOBJ-EXT-009", "a rule for private-use assignments"},
      {"AOBJ-EXT-013", "a rule for later versions of the protocol (the invariants of section 4.5)"},
      {"AOBJ-EXT-016",
       "a rule for revisions of the .proto file (tests/wire/protocol_test.cc GreaseFieldTest); "
       "that receivers ignore the range is ses/5.3/2"},
      {"AOBJ-AUTH-024",
       "what a client does with a clock it was told, inside the client (the reference only reports "
       "it: GrpcStatusTest.SkewedTimeIsReportedNotApplied)"},
      {"AOBJ-EXT-010",
       "a rule for the registries (the value is never sent by a conforming peer; "
       "the suite cannot make a peer send it)"},
      {"AOBJ-AUTH-012",
       "how the server hashes the octets; indistinguishable on the wire from a "
       "server that re-serializes identically (case auth/6.3/2 checks the "
       "observable half: appended unknown octets are signed over as sent)"},
      {"AOBJ-MEM-012", "a check inside the server's address space on shared-memory transports"},
      {"AOBJ-TRN-002",
       "the server never sends remote keys in AOBJ/1 messages at all; nothing to "
       "observe"},
      {"AOBJ-TRN-012", "a rule for binding specifications (section 2.6)"},
      {"AOBJ-OBJ-263",
       "needs a power loss on the server's host; the reference's announcement per store is "
       "checked by tests/integration (DurableCommitsFollowTheStore)"},
      {"AOBJ-TRN-008",
       "which endpoint a server uses internally; the suite's sessions share one "
       "process, so a descriptor of one used by another names memory of the "
       "same process (tests/integration/endpoint_binding_test.cc "
       "SessionNamingAnotherWorkerGetsNoRmaIntoIt)"},
      {"AOBJ-TRN-003",
       "how a server creates its endpoints internally; the observable part (a "
       "stalled client's request ends within the bound) is dat/13.7/1"},
      {"AOBJ-TRN-010",
       "which endpoints and transports a server uses internally "
       "(tests/integration/dead_peer_test.cc, "
       "tests/transport/address_check_test.cc)"},
      {"AOBJ-SES-024",
       "needs a System V segment of another process on the server's host "
       "(tests/transport/address_check_test.cc "
       "FifoSegmentsNamedByAnAddressAreChecked)"},
      {"AOBJ-MEM-028",
       "needs a remote key naming a segment of a third process on the server's "
       "host (tests/transport/rkey_check_test.cc "
       "PinRefusesSegmentsOfAnotherCreator)"},
      {"AOBJ-SES-030", "needs a server whose active-message send fails"},
      {"AOBJ-SEC-025",
       "needs a client that withholds its HTTP/2 flow-control window (SETTINGS_INITIAL_WINDOW_SIZE "
       "0), which gRPC's client library does not do (tests/integration/request_flood_test.cc "
       "RawFloodTest.RepliesLeftUnreadAreBoundedPerKey)"},
      {"AOBJ-SEC-024",
       "needs raw HTTP/2 frames (CONTINUATION, PING, streams beyond the advertised limit) that "
       "gRPC's client library does not send (tests/integration/request_flood_test.cc "
       "RawFloodTest, h2_guard_test.cc)"},
      {"AOBJ-SEC-026",
       "needs raw HTTP/2 streams, from many connections and addresses, that a gRPC client library "
       "does not send, and whether a call is under way is inside the server "
       "(tests/integration/h2_guard_test.cc AnUnverifiedConnectionsCallsWaitForRoom, "
       "request_flood_test.cc "
       "RawFloodTest.TinyUnverifiedCallsFromManyAddressesDoNotStallNewClients)"},
      {"AOBJ-SEC-027",
       "which calls a server leaves unread is inside it (tests/integration/h2_guard_test.cc "
       "AnUnverifiedConnectionsCallsWaitForRoom, request_flood_test.cc "
       "RawFloodTest.StreamsOpenedWithoutReadingTheAnswersAreBounded)"},
      {"AOBJ-SEC-028",
       "needs a flood from the client's own address that holds every bound "
       "(tests/integration/h2_guard_test.cc H2AdmissionTest)"},
      {"AOBJ-SEC-029",
       "needs a flood of fresh connections from many addresses, about 100 a second, which a "
       "conformance run should not aim at a vendor's server, and which calls wait for a read is "
       "inside the server (tests/integration/request_flood_test.cc "
       "RequestFloodTest.AFreshConnectionForEverySlowCallDoesNotKeepANewClientOut, "
       "h2_guard_test.cc MarkWholeCallsTest)"},
      {"AOBJ-SEC-023",
       "when a server's transport reads a reset, and when it starts work on a stream, are "
       "inside it (tests/integration/request_flood_test.cc "
       "RawFloodTest.RapidResetFromReconnectingConnectionsIsBounded, h2_guard_test.cc)"},
      {"AOBJ-OPS-009",
       "needs the server to be shut down (tests/integration/dead_peer_test.cc "
       "SigtermDuringAStalledTransferStopsWithinFiveSeconds)"},
      {"AOBJ-SEC-020",
       "needs the server's worker address, which only UCX's wireup carries to a peer "
       "(tests/transport/peer_rma_guard_test.cc)"},
      {"AOBJ-SEC-003", "a rule for a client's choice of servers"},
      {"AOBJ-SEC-005", "a rule for deployments"},
      {"AOBJ-SEC-007", "what an implementation logs"},
      {"AOBJ-OPS-010",
       "what a server logs (tests/integration/request_flood_test.cc "
       "UnauthenticatedFailuresAreLoggedInSummary)"},
      {"AOBJ-SEC-004", "what an implementation logs"},
      {"AOBJ-SEC-001",
       "bounds checks on EMULATED channels are the mem/7.2 and mem/7.4 cases; the "
       "deployment half is not observable"},
      {"AOBJ-OBJ-011",
       "needs a server crash; the reference server's process-fault tests "
       "(tests/integration/process_faults_test.cc) check it"},
      {"AOBJ-OBJ-226", "needs a server crash (tests/integration/process_faults_test.cc)"},
      {"AOBJ-OBJ-227", "needs a server restart (tests/integration/process_faults_test.cc)"},
      {"AOBJ-SEC-011", "needs a server restart (tests/integration/authz_test.cc)"},
      {"AOBJ-AUTH-017",
       "needs a full replay cache (2^20 requests within the skew window on "
       "the reference server; tests/session/authenticator_test.cc "
       "AForgottenNonceIsRefusedByItsKeysFloor) or a restart (tests/integration/hostile_test.cc "
       "ARequestOfTheLastRunIsNotServedAgainAfterARestart)"},
      {"AOBJ-AUTH-018",
       "needs a full replay cache (tests/session/authenticator_test.cc "
       "NoSetOfKeysCanFillTheCacheForAnother)"},
      {"AOBJ-SEC-016",
       "needs a storage failure or crash inside CreateBucket "
       "(tests/integration/authz_test.cc)"},
      {"AOBJ-SES-020",
       "needs the server to repeat a 128-bit random value; case ses/5.5/1 checks "
       "format and that 64 IDs differ"},
      {"AOBJ-DAT-153",
       "needs a part corrupted on the server's storage "
       "(tests/store/multipart_test.cc)"},
      {"AOBJ-OBJ-157", "needs an object corrupted on the server's storage (tests/store)"},
      {"AOBJ-OBJ-230",
       "needs objects above 4 GiB (tests/integration/multipart_test.cc, "
       "slow-tier)"},
      {"AOBJ-OBJ-214", "needs a server whose maximum object size is small enough to reach"},
      {"AOBJ-OBJ-228", "needs a server with a configured upload limit"},
      {"AOBJ-OBJ-233",
       "needs a server with a per-principal upload limit small enough to reach "
       "and two principals (tests/store/multipart_test.cc "
       "OneInitiatorCannotTakeEveryUploadSlot, tests/integration/authz_test.cc)"},
      {"AOBJ-OBJ-234",
       "needs an upload older than the server's expiry age "
       "(tests/store/multipart_test.cc, tests/integration/multipart_test.cc)"},
      {"AOBJ-SEC-012",
       "needs a flood and the server's memory (tests/integration/"
       "request_flood_test.cc); refusals of unsigned requests are the auth cases"},
      {"AOBJ-SEC-013",
       "needs a flood past the server's queue bound (tests/integration/"
       "request_flood_test.cc ForgedRequestsMeetABoundedQueue)"},
      {"AOBJ-SEC-014",
       "needs two principals and requests that hold the server's threads "
       "(tests/integration/dead_peer_test.cc, tests/integration/scheduler_test.cc)"},
      {"AOBJ-DAT-009",
       "needs the server's side of the data channel to fail "
       "(tests/integration/channel_loss_test.cc)"},
      {"AOBJ-DAT-010",
       "needs an RMA failure in the middle of a transfer "
       "(tests/integration/channel_loss_test.cc)"},
      {"AOBJ-SES-023", "endpoint release inside the server on refusal"},
      {"AOBJ-SES-017", "the state table as a whole; its rows are the ses/5.9 and ses/5.8 cases"},
      {"AOBJ-CTL-011", "a server start-up rule (tests/integration/tls_test.cc)"},
      {"AOBJ-CTL-012",
       "needs a server configured with a client CA (tests/integration/tls_test.cc)"},
  };
  return *kList;
}

// ---- CaseContext --------------------------------------------------------------------------

CaseContext::CaseContext(const TargetOptions& target, std::string run_id, int case_index)
    : target_(target), run_id_(std::move(run_id)), case_index_(case_index) {}

CaseContext::~CaseContext() {
  try {
    Cleanup();
  } catch (...) {
  }
}

std::string CaseContext::Unique(std::string_view stem) {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrCat(std::string(stem), "-", run_id_, "-", case_index_, "-", ++counter_);
}

std::unique_ptr<Peer> CaseContext::NewPeer(bool second) {
  if (second) {
    if (target_.second_access_key_id.empty()) {
      Unsupported("no second principal given (--second-access-key, --second-secret)");
    }
    return std::make_unique<Peer>(*this, "P2", target_.second_access_key_id,
                                  target_.second_secret);
  }
  return std::make_unique<Peer>(*this, "P1", target_.access_key_id, target_.secret);
}

std::unique_ptr<Peer> CaseContext::Open(bool second) {
  auto p = NewPeer(second);
  RawReply r = p->Open();
  RequireOk(r, "OpenSession");
  return p;
}

std::string CaseContext::NewBucket(Peer& peer) {
  std::string name = Unique(target_.bucket_prefix);
  // Bucket names are at most 63 characters (AOBJ-OBJ-001).
  if (name.size() > 63) name = name.substr(name.size() - 63);
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name[0]))) name.erase(0, 1);
  RequireOk(peer.CreateBucket(name), "CreateBucket " + name);
  buckets_.push_back(name);
  return name;
}

void CaseContext::Cleanup() {
  if (buckets_.empty()) return;
  // A separate session; the case's own may be closed. Cleanup is not part of the verdict.
  std::vector<Exchange> saved = std::move(transcript_);
  std::vector<Check> saved_checks = std::move(checks_);
  transcript_.clear();
  checks_.clear();
  try {
    Peer p(*this, "cleanup", target_.access_key_id, target_.secret);
    if (p.Open().status.ok()) {
      for (const auto& b : buckets_) {
        for (int round = 0; round < 20; ++round) {
          pb::ListMultipartUploadsRequest lu;
          lu.set_bucket(b);
          RawReply r = p.Send(Method::kListMultipartUploads, lu);
          pb::ListMultipartUploadsResponse lur;
          if (!r.status.ok() || !lur.ParseFromString(r.body) || lur.uploads().empty()) break;
          for (const auto& u : lur.uploads()) {
            pb::AbortMultipartUploadRequest a;
            a.set_bucket(b);
            a.set_key(u.key());
            a.set_upload_id(u.upload_id());
            p.Send(Method::kAbortMultipartUpload, a);
          }
        }
        for (int round = 0; round < 50; ++round) {
          pb::ListObjectsV2Request l;
          l.set_bucket(b);
          RawReply r = p.Send(Method::kListObjectsV2, l);
          pb::ListObjectsV2Response lr;
          if (!r.status.ok() || !lr.ParseFromString(r.body) || lr.objects().empty()) break;
          pb::DeleteObjectsRequest d;
          d.set_bucket(b);
          d.set_quiet(true);
          for (const auto& o : lr.objects()) d.add_keys(o.key());
          p.Send(Method::kDeleteObjects, d);
        }
        pb::DeleteBucketRequest db;
        db.set_bucket(b);
        p.Send(Method::kDeleteBucket, db);
      }
      p.Close();
    }
  } catch (...) {
  }
  transcript_ = std::move(saved);
  checks_ = std::move(saved_checks);
  buckets_.clear();
}

void CaseContext::Record(Exchange e) {
  std::lock_guard<std::mutex> lock(mu_);
  transcript_.push_back(std::move(e));
}

bool CaseContext::Expect(bool ok, std::string what, std::string expected, std::string actual) {
  std::lock_guard<std::mutex> lock(mu_);
  checks_.push_back({std::move(what), std::move(expected), std::move(actual), ok});
  return ok;
}

void CaseContext::Require(bool ok, std::string what, std::string expected, std::string actual) {
  if (!Expect(ok, std::move(what), std::move(expected), std::move(actual))) throw CaseFailure{};
}

void CaseContext::RequireOk(const RawReply& r, std::string what) {
  Require(r.grpc_status.ok(), std::move(what), "OK", Outcome(r));
}

bool CaseContext::ExpectCode(const RawReply& r, ErrorCode code, std::string what) {
  const bool ok = !r.grpc_status.ok() && r.error_trailers > 0 &&
                  static_cast<uint32_t>(r.error.code()) == static_cast<uint32_t>(code);
  return Expect(ok, std::move(what), CodeName(code), Outcome(r));
}

void CaseContext::RequireCode(const RawReply& r, ErrorCode code, std::string what) {
  if (!ExpectCode(r, code, std::move(what))) throw CaseFailure{};
}

void CaseContext::RequireStillServes() {
  auto p = NewPeer();
  RawReply o = p->Open();
  Require(o.grpc_status.ok(), "afterwards, a new session opens (the target still serves)", "OK",
          Outcome(o));
  const std::string bucket = NewBucket(*p);
  std::string content(65536, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + 3);
  RawReply put = p->Put(bucket, "still-serving", content);
  Require(put.grpc_status.ok(), "afterwards, a PUT of 64 KiB succeeds", "OK", Outcome(put));
  std::string back;
  RawReply get = p->Get(bucket, "still-serving", &back);
  Require(get.grpc_status.ok() && back == content,
          "afterwards, the GET returns the same 64 KiB", "equal content",
          get.grpc_status.ok() ? absl::StrCat(back.size(), " octets, differ") : Outcome(get));
  p->Close();
}

void CaseContext::Unsupported(std::string why) {
  notes_.push_back(std::move(why));
  throw CaseUnsupported{};
}

void CaseContext::Note(std::string text) { notes_.push_back(std::move(text)); }

// ---- registry and runner ------------------------------------------------------------------

const Registry& AllCases() {
  static const Registry* kRegistry = [] {
    auto* r = new Registry;
    RegisterSessionCases(*r);
    RegisterAuthCases(*r);
    RegisterMemoryCases(*r);
    RegisterDataCases(*r);
    RegisterFastPathCases(*r);
    RegisterBatchCases(*r);
    RegisterObjectCases(*r);
    RegisterListCases(*r);
    RegisterMultipartCases(*r);
    RegisterPropertyCases(*r);
    RegisterClientCases(*r);
    return r;
  }();
  return *kRegistry;
}

std::string CaseLevel(const CaseDef& def) {
  int best = 0;  // 3 MUST, 2 SHOULD, 1 MAY
  for (const auto& id : def.requirements) {
    const Requirement* r = FindRequirement(id);
    if (r == nullptr) continue;
    int v = IsMustLevel(r->level) ? 3 : IsShouldLevel(r->level) ? 2 : 1;
    best = std::max(best, v);
  }
  return best == 3 ? "MUST" : best == 2 ? "SHOULD" : best == 1 ? "MAY" : "";
}

absl::StatusOr<std::string> DetectAuthorizationPolicy(TargetOptions* target) {
  CaseContext ctx(*target, HexEncode(RandomBytes(3)), 0);
  std::string bucket;
  RawReply r;
  try {
    auto p = ctx.Open();
    pb::HeadBucketRequest hb;
    bucket = ctx.Unique("no-such-bucket");
    hb.set_bucket(bucket);
    r = p->Send(Method::kHeadBucket, hb);
  } catch (const CaseFailure&) {
    std::string why = "the first session could not be opened";
    for (const auto& c : ctx.checks()) {
      if (!c.ok) why = absl::StrCat(c.what, ": expected ", c.expected, ", got ", c.actual);
    }
    return MakeError(ErrorCode::kInternal, why);
  }
  const ErrorCode code = CodeOf(r);
  if (code == ErrorCode::kAccessDenied || code == ErrorCode::kNoSuchBucket) {
    target->owner_policy = code == ErrorCode::kAccessDenied;
    return absl::StrCat(target->owner_policy ? "restricted" : "open",
                        " (detected: HeadBucket of a bucket that does not exist answered ",
                        CodeName(code), ")");
  }
  return MakeError(ErrorCode::kInternal,
                   absl::StrCat("HeadBucket of a bucket that does not exist (", bucket,
                                ") answered ", Outcome(r),
                                "; a target answers NO_SUCH_BUCKET, or ACCESS_DENIED when it "
                                "restricts buckets (AOBJ-OBJ-008, AOBJ-SEC-008)"));
}

std::vector<const CaseDef*> Select(const RunOptions& options, std::vector<std::string>* skipped) {
  std::vector<const CaseDef*> out;
  for (const auto& c : AllCases().cases()) {
    if (c.role != options.role) continue;
    if (!options.profiles.empty() &&
        std::find(options.profiles.begin(), options.profiles.end(), c.profile) ==
            options.profiles.end() &&
        !(c.hostile && std::find(options.profiles.begin(), options.profiles.end(), "hostile") !=
                           options.profiles.end())) {
      continue;
    }
    if (!options.only.empty()) {
      bool match = false;
      for (const auto& o : options.only) match = match || absl::StartsWith(c.id, o);
      if (!match) continue;
    }
    if (std::any_of(options.skip.begin(), options.skip.end(),
                    [&](const std::string& p) { return absl::StartsWith(c.id, p); })) {
      if (skipped != nullptr) skipped->push_back(c.id);
      continue;
    }
    out.push_back(&c);
  }
  return out;
}

CaseResult RunCase(const CaseDef& def, const TargetOptions& target, const std::string& run_id,
                   int index, bool strict) {
  CaseResult res;
  res.def = &def;
  res.level = CaseLevel(def);
  const auto start = std::chrono::steady_clock::now();
  bool failed = false, unsupported = false;
  {
    CaseContext ctx(target, run_id, index);
    try {
      def.run(ctx);
    } catch (const CaseFailure&) {
      failed = true;
    } catch (const CaseUnsupported&) {
      unsupported = true;
    } catch (const std::exception& e) {
      ctx.Expect(false, "the case ran to its end", "no exception", e.what());
      failed = true;
    }
    for (const auto& c : ctx.checks()) {
      if (!c.ok) {
        failed = true;
        if (res.reason.empty()) {
          res.reason = absl::StrCat(c.what, ": expected ", c.expected, ", got ", c.actual);
        }
      }
    }
    res.checks = ctx.checks();
    res.transcript = std::move(ctx.transcript());
    res.notes = ctx.notes();
  }
  if (unsupported) {
    res.verdict = Verdict::kUnsupported;
    if (!res.notes.empty()) res.reason = res.notes.back();
  } else if (failed) {
    if (res.level == "MUST") res.verdict = Verdict::kFail;
    else if (res.level == "SHOULD") res.verdict = strict ? Verdict::kFail : Verdict::kNonStrict;
    else res.verdict = Verdict::kInformational;
  } else {
    res.verdict = res.level == "MAY" ? Verdict::kInformational : Verdict::kPass;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace aobj::conformance
