// aobj-conformance: checks an AOBJ/1 server (or, in client mode, a client) against the spec.
// A thin main over conformance/src (conformance/README.md).
#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "conformance/src/peer.h"
#include "conformance/src/suite.h"
#include "tool_util.h"
#include "wire/crypto.h"

namespace {

constexpr char kUsage[] =
    R"(aobj-conformance: test an AOBJ/1 server or client against spec/aobj-1.md

Usage:
  aobj-conformance [flags]                     run the server suite against --target
  aobj-conformance --client-exec CMD [flags]   run the client suite: the suite plays the server
                                               and runs CMD as the client under test
  aobj-conformance --list [--client-exec -]    list the cases (ID, level, profile, requirements)
  aobj-conformance --coverage                  requirements no case checks; exit 1 when a MUST
                                               that is observable on the wire has no case

Target (server mode; the suite speaks only gRPC + UCX, like any client):
  --target HOST:PORT        control channel (default: AOBJ_ENDPOINT, else 127.0.0.1:7878)
  --plaintext               no TLS (default when no --tls-ca is given)
  --tls-ca FILE             verify the server certificate against FILE (enables TLS)
  --tls-cert FILE           client certificate for mutual TLS (with --tls-key)
  --tls-key FILE
  --tls-server-name NAME    the name the server certificate must carry
  --access-key ID           first principal (default: AOBJ_ACCESS_KEY_ID)
  --secret SECRET           (default: AOBJ_SECRET_ACCESS_KEY)
  --credentials FILE        "ID SECRET" lines: the first principal, then the second
  --second-access-key ID    second principal, for access cases (else they are UNSUPPORTED)
  --second-secret SECRET
  --owner-policy            declare that the target restricts buckets to their creator
                            unless granted (the reference server's --authorization owner);
                            without it the suite learns the policy from the target (a bucket
                            that does not exist answers ACCESS_DENIED or NO_SUCH_BUCKET), so one
                            run gives every verdict; reports state the policy
  --cuda-memory             declare that the target supports CUDA memory descriptors
                            (AOBJ-MEM-006); without it a descriptor of memory_type CUDA must
                            fail UNSUPPORTED_MEMORY_TYPE
  --bucket-prefix P         prefix of the buckets the suite creates (default: aobj-conf)

Selection:
  --profile P[,P...]        core, hostile, inline, checksums, ranges, conditional, list, copy,
                            multipart, access, limits, client
  --only ID[,ID...]         case IDs or ID prefixes ("mem/7.2", "ses/")
  --skip ID[,ID...]         leave these cases (IDs or prefixes) out; reports list them
  --strict                  NON-STRICT (a SHOULD not met) counts as a failure

Client mode:
  --client-exec CMD         the driver of the client under test (a shell command line); see
                            conformance/CLIENT-DRIVER.md for the contract
  --work-dir DIR            files of client-mode cases (default: a new directory under /tmp,
                            removed at the end unless a case failed)

Reports:
  --junit FILE              JUnit XML
  --json FILE               JSON: per case ID, requirements, verdict, expected and actual of
                            every check, the transcript of the exchange
  --html FILE               a self-contained HTML matrix
  --timeout-ms N            deadline of every control call (default: 30000)
  --net-devices LIST        UCX_NET_DEVICES of the suite's data channel (and of the client
                            under test) unless set in the environment (default: lo)
  --transports LIST         UCX_TLS of the suite's data channel unless set in the environment
                            (e.g. tcp: TCP-only lanes; default: UCX's choice). Reports state
                            the transports, the kind of memory the suite registered and the
                            memory protection the target reported
  --verbose                 print every case as it ends, with its checks

Verdicts: PASS, FAIL (a MUST not met), NON-STRICT (a SHOULD not met; FAIL with --strict),
UNSUPPORTED (the target did not negotiate the capability, or a needed option is missing),
INFORMATIONAL (a MAY, reported). Exit status: 0 when no case FAILs, 1 otherwise, 2 on usage.
)";

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace aobj::conformance;
  // Hostile cases serialize invalid UTF-8 into string fields on purpose; protobuf would log each.
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  aobj::tools::ParsedArgs args;
  const std::vector<std::string> flags = {
      "target",        "tls-ca",    "tls-cert",    "tls-key",           "tls-server-name",
      "access-key",    "secret",    "credentials", "second-access-key", "second-secret",
      "bucket-prefix", "profile",   "only",        "client-exec",       "work-dir",
      "junit",         "json",      "html",        "timeout-ms",        "net-devices",
      "skip",          "transports"};
  const std::vector<std::string> bool_flags = {"plaintext", "owner-policy", "cuda-memory", "strict",
                                               "list",      "coverage",     "verbose",     "help"};
  absl::Status parsed = aobj::tools::ParseArgs(argc, argv, 1, flags, bool_flags, &args);
  if (!parsed.ok() || args.Has("help") || !args.positional.empty()) {
    if (!parsed.ok()) std::cerr << "aobj-conformance: " << parsed.message() << "\n\n";
    (parsed.ok() && args.Has("help") ? std::cout : std::cerr) << kUsage;
    return parsed.ok() && args.Has("help") ? 0 : 2;
  }

  if (args.Has("coverage")) {
    int missing = 0;
    std::cout << CoverageReport(&missing);
    if (missing > 0) {
      std::cout << "\nFAIL: " << missing << " MUST-level requirement(s) observable on the wire "
                << "have no case\n";
      return 1;
    }
    std::cout << "\nOK: every MUST-level requirement observable on the wire has a case\n";
    return 0;
  }

  RunOptions run;
  run.strict = args.Has("strict");
  run.verbose = args.Has("verbose");
  run.role = args.Has("client-exec") ? Role::kClient : Role::kServer;
  if (args.Has("profile")) run.profiles = absl::StrSplit(args.Get("profile"), ',', absl::SkipEmpty());
  if (args.Has("only")) run.only = absl::StrSplit(args.Get("only"), ',', absl::SkipEmpty());
  if (args.Has("skip")) run.skip = absl::StrSplit(args.Get("skip"), ',', absl::SkipEmpty());
  std::vector<std::string> skipped;
  const auto selected = Select(run, &skipped);

  if (args.Has("list")) {
    int hostile = 0;
    for (const CaseDef* c : selected) {
      hostile += c->hostile ? 1 : 0;
      std::printf("%-14s %-6s %-11s %s%s\n               %s\n", c->id.c_str(),
                  CaseLevel(*c).c_str(), c->profile.c_str(), c->title.c_str(),
                  c->hostile ? " (hostile)" : "", absl::StrJoin(c->requirements, " ").c_str());
    }
    std::printf("%zu cases, %d hostile\n", selected.size(), hostile);
    return 0;
  }

  TargetOptions target;
  target.data_channel.net_devices = args.Get("net-devices", "lo");
  target.data_channel.transports = args.Get("transports");
  const char* env_endpoint = std::getenv("AOBJ_ENDPOINT");
  target.endpoint = args.Get("target", env_endpoint ? env_endpoint : "127.0.0.1:7878");
  if (args.Has("tls-ca")) {
    target.tls.enabled = true;
    target.tls.ca_file = args.Get("tls-ca");
    target.tls.cert_file = args.Get("tls-cert");
    target.tls.key_file = args.Get("tls-key");
    target.tls.server_name_override = args.Get("tls-server-name");
  } else if (args.Has("tls-cert") || args.Has("tls-key")) {
    std::cerr << "aobj-conformance: --tls-cert/--tls-key need --tls-ca (the CA that signed the "
                 "server's certificate)\n";
    return 2;
  }
  if (args.Has("credentials")) {
    std::ifstream f(args.Get("credentials"));
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      if (parts.size() < 2 || parts[0][0] == '#') continue;
      if (n == 0) target.access_key_id = parts[0], target.secret = parts[1];
      if (n == 1) target.second_access_key_id = parts[0], target.second_secret = parts[1];
      ++n;
    }
    if (n == 0) {
      std::cerr << "aobj-conformance: no \"ID SECRET\" line in " << args.Get("credentials") << "\n";
      return 2;
    }
  }
  const char* env_id = std::getenv("AOBJ_ACCESS_KEY_ID");
  const char* env_secret = std::getenv("AOBJ_SECRET_ACCESS_KEY");
  if (target.access_key_id.empty()) {
    target.access_key_id = args.Get("access-key", env_id ? env_id : "");
    target.secret = args.Get("secret", env_secret ? env_secret : "");
  }
  if (args.Has("second-access-key")) {
    target.second_access_key_id = args.Get("second-access-key");
    target.second_secret = args.Get("second-secret");
  }
  target.owner_policy = args.Has("owner-policy");
  target.cuda_memory = args.Has("cuda-memory");
  target.bucket_prefix = args.Get("bucket-prefix", "aobj-conf");
  int64_t timeout_ms = 30000;
  if (!args.GetInt("timeout-ms", 30000, &timeout_ms).ok() || timeout_ms <= 0) {
    std::cerr << "aobj-conformance: --timeout-ms needs a positive number\n";
    return 2;
  }
  target.call_timeout = absl::Milliseconds(timeout_ms);
  target.client_exec = args.Get("client-exec");
  if (run.role == Role::kServer && (target.access_key_id.empty() || target.secret.empty())) {
    std::cerr << "aobj-conformance: no credentials: give --access-key and --secret, "
                 "--credentials FILE, or AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY\n";
    return 2;
  }
  bool own_work_dir = false;
  if (args.Has("work-dir")) {
    target.work_dir = args.Get("work-dir");
    // Created when missing: the client runs write their output files there.
    std::error_code ec;
    std::filesystem::create_directories(target.work_dir, ec);
    if (ec || !std::filesystem::is_directory(target.work_dir)) {
      std::cerr << "aobj-conformance: --work-dir " << target.work_dir
                << ": cannot create the directory" << (ec ? ": " + ec.message() : "") << "\n";
      return 2;
    }
  } else {
    char tmpl[] = "/tmp/aobj-conformance-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) target.work_dir = tmpl;
    own_work_dir = !target.work_dir.empty();
  }
  auto drop_work_dir = [&] {
    std::error_code ec;
    if (own_work_dir) std::filesystem::remove_all(target.work_dir, ec);
  };
  if (selected.empty()) {
    std::cerr << "aobj-conformance: no case matches the selection (see --list)\n";
    drop_work_dir();
    return 2;
  }

  // A short run id keeps bucket names of parallel runs apart.
  const std::string run_id = aobj::HexEncode(aobj::RandomBytes(3));
  RunSummary summary;
  summary.suite_version = "AOBJ/1 suite 0.1";
  summary.target = run.role == Role::kServer ? target.endpoint : target.client_exec;
  summary.mode = run.role == Role::kServer ? "server" : "client";
  summary.strict = run.strict;
  summary.started = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  summary.skipped = skipped;
  if (run.role == Role::kServer) {
    if (target.owner_policy) {
      summary.authorization = "restricted (declared: --owner-policy)";
    } else {
      auto policy = DetectAuthorizationPolicy(&target);
      if (!policy.ok()) {
        // A target that breaks a rule on its first replies still gets every verdict: the cases
        // meet the same replies and fail with the rule named. Cases that need a restricted
        // bucket report UNSUPPORTED.
        std::cerr << "aobj-conformance: cannot learn the target's authorization policy ("
                  << policy.status().message() << "); running as if it were open\n";
        summary.authorization =
            absl::StrCat("not detected (", policy.status().message(), "); cases run as if open");
      } else {
        summary.authorization = *policy;
      }
    }
  }
  std::cerr << "aobj-conformance: " << selected.size() << " cases against " << summary.target
            << " (" << summary.mode << " mode)\n";
  int index = 0;
  for (const CaseDef* c : selected) {
    CaseResult r = RunCase(*c, target, run_id, ++index, run.strict);
    if (run.verbose || r.verdict != Verdict::kPass) {
      std::fprintf(stderr, "[%3d/%zu] %-13s %s  %s (%.2f s)\n", index, selected.size(),
                   std::string(VerdictName(r.verdict)).c_str(), c->id.c_str(), c->title.c_str(),
                   r.seconds);
      if (run.verbose) {
        for (const auto& ch : r.checks) {
          if (ch.ok) {
            std::fprintf(stderr, "        ok   %s: %s\n", ch.what.c_str(), ch.expected.c_str());
          } else {
            std::fprintf(stderr, "        FAIL %s: expected %s, got %s\n", ch.what.c_str(),
                         ch.expected.c_str(), ch.actual.c_str());
          }
        }
      }
    } else if (isatty(2)) {
      std::fprintf(stderr, "\r[%3d/%zu] %s          ", index, selected.size(), c->id.c_str());
    }
    summary.results.push_back(std::move(r));
  }
  if (isatty(2)) std::fprintf(stderr, "\r%60s\r", "");
  if (run.role == Role::kServer) summary.data_channel = DescribeDataChannel(target);
  std::cout << ConsoleSummary(summary);
  bool wrote = true;
  if (args.Has("junit")) wrote &= WriteFile(args.Get("junit"), JunitXml(summary));
  if (args.Has("json")) wrote &= WriteFile(args.Get("json"), JsonReport(summary));
  if (args.Has("html")) wrote &= WriteFile(args.Get("html"), HtmlReport(summary));
  const bool failed = RunFailed(summary);
  // The directory this run made under /tmp: kept for a look when a client case failed.
  if (failed && own_work_dir && run.role == Role::kClient) {
    std::cerr << "aobj-conformance: the client runs' files are in " << target.work_dir << "\n";
  } else {
    drop_work_dir();
  }
  if (!wrote) {
    std::cerr << "aobj-conformance: could not write a report file\n";
    return 2;
  }
  return failed ? 1 : 0;
}
