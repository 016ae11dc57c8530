// The AOBJ/1 conformance suite: cases, verdicts and the runner (conformance/README.md).
//
// A case has a stable ID `area/section/n`, names the requirement IDs it checks (their level
// comes from spec/requirements.json, compiled in), and runs against a target through a
// CaseContext. The suite speaks only the wire protocol: gRPC control calls signed by hand and a
// UCX worker of its own; nothing of the reference server is linked in.
//
// Threading: a case runs on one thread; cases run one after another.
#ifndef AOBJ_CONFORMANCE_SUITE_H_
#define AOBJ_CONFORMANCE_SUITE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aobj/status.h"
#include "aobj/types.h"

namespace aobj {
struct RawReply;
}

namespace aobj::conformance {

class Peer;

enum class Verdict { kPass, kFail, kNonStrict, kUnsupported, kInformational };
std::string_view VerdictName(Verdict v);

// A row of spec/requirements.json (generated into requirements_table.cc at build time).
struct Requirement {
  const char* id;       // "AOBJ-SES-004"
  const char* level;    // "MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY"
  const char* section;  // "5.2"
  const char* title;    // section title
};
const std::vector<Requirement>& Requirements();
const Requirement* FindRequirement(std::string_view id);
bool IsMustLevel(std::string_view level);    // MUST, MUST NOT
bool IsShouldLevel(std::string_view level);  // SHOULD, SHOULD NOT

// Requirements that no exchange on the wire can show met or broken (rules for the registries,
// for revisions of the .proto, for deployments, for what a peer logs). The coverage report lists
// them apart, with the reason, instead of failing on them.
struct Unobservable {
  const char* id;
  const char* reason;
};
const std::vector<Unobservable>& UnobservableRequirements();

// Who the suite talks to.
struct TargetOptions {
  std::string endpoint = "127.0.0.1:7878";
  TlsOptions tls;  // enabled: TLS (mutual when cert_file is set)
  std::string access_key_id;
  std::string secret;
  // A second principal for access tests; empty: those cases are UNSUPPORTED.
  std::string second_access_key_id;
  std::string second_secret;
  // A principal with no grant on anything the first creates; the reference server's `owner`
  // authorization policy gives exactly that to any second principal.
  bool owner_policy = false;
  // The target accepts descriptors of memory_type CUDA (AOBJ-MEM-006 lets a server that
  // supports CUDA memory do so). Declared: without it, a CUDA descriptor must fail
  // UNSUPPORTED_MEMORY_TYPE, as it does on the reference server.
  bool cuda_memory = false;
  absl::Duration call_timeout = absl::Seconds(30);
  std::string bucket_prefix = "aobj-conf";
  DataChannelOptions data_channel;
  // Client mode: the driver command of the client under test (conformance/README.md, "Client
  // conformance"); the suite plays the server on 127.0.0.1.
  std::string client_exec;
  std::string work_dir = "/tmp";  // where client-mode cases put their files
};

// One control-channel exchange, kept for the report.
struct Exchange {
  std::string peer;      // "P1", "P2", "raw"
  std::string method;    // "PutObject"
  std::string request;   // short text form of the request (tampering noted)
  std::string outcome;   // "OK" or "NO_SUCH_KEY (gRPC NOT_FOUND): message"
  std::string response;  // short text form of the reply message
};

// One assertion of a case.
struct Check {
  std::string what;
  std::string expected;
  // What was observed. Cases often describe only the failure here, so reports show it for
  // failed checks only (JSON omits it when ok is true).
  std::string actual;
  bool ok = true;
};

struct CaseFailure {};      // thrown by a failed Require()
struct CaseUnsupported {};  // thrown by Unsupported()

class CaseContext {
 public:
  CaseContext(const TargetOptions& target, std::string run_id, int case_index);
  ~CaseContext();

  const TargetOptions& target() const { return target_; }

  // A new peer (not yet in a session) for the first or the second principal.
  std::unique_ptr<Peer> NewPeer(bool second = false);
  // A peer with an open session (a failure to open fails the case).
  std::unique_ptr<Peer> Open(bool second = false);
  // Creates a fresh bucket through `peer` (removed with its contents when the case ends).
  std::string NewBucket(Peer& peer);

  // Records a check; a failed one ends the case (FAIL, or NON-STRICT when the case checks only
  // SHOULD-level requirements).
  void Require(bool ok, std::string what, std::string expected, std::string actual);
  // Records a check without ending the case when it fails.
  bool Expect(bool ok, std::string what, std::string expected, std::string actual);
  void RequireOk(const RawReply& r, std::string what);
  void RequireCode(const RawReply& r, ErrorCode code, std::string what);
  bool ExpectCode(const RawReply& r, ErrorCode code, std::string what);
  // A new session of the first principal still gets full service: a PUT by RMA of 64 KiB and
  // the GET of it back, equal octet for octet (every hostile case ends with it).
  void RequireStillServes();
  [[noreturn]] void Unsupported(std::string why);
  void Note(std::string text);

  // Thread-safe: cases with concurrent peers record from several threads.
  void Record(Exchange e);
  std::vector<Exchange>& transcript() { return transcript_; }
  const std::vector<Check>& checks() const { return checks_; }
  const std::vector<std::string>& notes() const { return notes_; }
  std::string Unique(std::string_view stem);  // a name unique in this run

 private:
  void Cleanup();
  const TargetOptions& target_;
  std::mutex mu_;
  std::string run_id_;
  int case_index_;
  int counter_ = 0;
  std::vector<Exchange> transcript_;
  std::vector<Check> checks_;
  std::vector<std::string> notes_;
  std::vector<std::string> buckets_;
};

enum class Role { kServer, kClient };

struct CaseDef {
  std::string id;                         // "ses/5.2/1"
  std::string title;
  std::string profile;                    // core, inline, checksums, multipart, ...
  std::vector<std::string> requirements;  // "AOBJ-SES-004"
  bool hostile = false;                   // malformed, out-of-bounds or abusive input
  Role role = Role::kServer;
  std::function<void(CaseContext&)> run;  // server cases
};

class Registry {
 public:
  void Add(CaseDef c) { cases_.push_back(std::move(c)); }
  const std::vector<CaseDef>& cases() const { return cases_; }

 private:
  std::vector<CaseDef> cases_;
};

// Every case of the suite, in ID order.
const Registry& AllCases();

// The case files register themselves here (one function per file, called by AllCases()).
void RegisterSessionCases(Registry& r);
void RegisterAuthCases(Registry& r);
void RegisterMemoryCases(Registry& r);
void RegisterDataCases(Registry& r);
void RegisterFastPathCases(Registry& r);  // section 8.9
void RegisterBatchCases(Registry& r);     // section 9.16
void RegisterObjectCases(Registry& r);
void RegisterListCases(Registry& r);
void RegisterMultipartCases(Registry& r);
void RegisterPropertyCases(Registry& r);  // random sizes, ranges, listings (issue 17)
void RegisterClientCases(Registry& r);

struct CaseResult {
  const CaseDef* def = nullptr;
  Verdict verdict = Verdict::kPass;
  std::string level;   // the strongest level among the case's requirements
  std::string reason;  // the first failed check, or why UNSUPPORTED
  std::vector<Check> checks;
  std::vector<Exchange> transcript;
  std::vector<std::string> notes;
  double seconds = 0;
};

struct RunOptions {
  bool strict = false;  // NON-STRICT counts as a failure
  std::vector<std::string> profiles;  // empty: all
  std::vector<std::string> only;      // IDs or ID prefixes; empty: all
  std::vector<std::string> skip;      // IDs or ID prefixes left out (reports list them)
  Role role = Role::kServer;
  bool verbose = false;
};

// Learns the target's authorization policy from the wire, so that one run gives every verdict:
// a bucket that does not exist answers ACCESS_DENIED on a target that restricts buckets
// (AOBJ-SEC-008: refused before any other processing) and NO_SUCH_BUCKET on an open one. Sets
// `target->owner_policy` and returns a line for the reports; an error when the answer is neither.
absl::StatusOr<std::string> DetectAuthorizationPolicy(TargetOptions* target);

// The cases `options` selects, in order; with `skipped`, the IDs that --skip left out.
std::vector<const CaseDef*> Select(const RunOptions& options,
                                   std::vector<std::string>* skipped = nullptr);
// Runs one server case.
CaseResult RunCase(const CaseDef& def, const TargetOptions& target, const std::string& run_id,
                   int index, bool strict);
// The strongest level among `def`'s requirements.
std::string CaseLevel(const CaseDef& def);

// Reports (report.cc).
struct RunSummary {
  std::string suite_version;
  std::string target;
  std::string mode;  // "server" or "client"
  bool strict = false;
  std::string started;  // RFC 3339
  std::string data_channel;          // server mode: DescribeDataChannel() after the run
  std::string authorization;         // server mode: the target's policy, declared or detected
  std::vector<std::string> skipped;  // case IDs left out by --skip
  std::vector<CaseResult> results;
};
int CountVerdict(const RunSummary& s, Verdict v);
bool RunFailed(const RunSummary& s);
std::string ConsoleSummary(const RunSummary& s);
std::string JunitXml(const RunSummary& s);
std::string JsonReport(const RunSummary& s);
std::string HtmlReport(const RunSummary& s);
// The coverage report; `must_missing` receives the number of MUST-level requirements that no
// case checks and that are not unobservable.
std::string CoverageReport(int* must_missing);

}  // namespace aobj::conformance

#endif  // AOBJ_CONFORMANCE_SUITE_H_
