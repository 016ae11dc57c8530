// Client cases: the suite plays the server (fake_server.h), runs the client under test through
// its driver (conformance/CLIENT-DRIVER.md) and checks what the client sent and what it
// reported. Every case starts its own fake server, with a fresh principal.
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "conformance/src/cases_util.h"
#include "conformance/src/fake_server.h"
#include "google/protobuf/unknown_field_set.h"

namespace aobj::conformance {
namespace {

constexpr char kBucket[] = "conf-client";

void AddClient(Registry& r, std::string id, std::string title,
               std::vector<std::string> requirements, bool hostile,
               std::function<void(CaseContext&)> run) {
  CaseDef c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.profile = "client";
  c.requirements = std::move(requirements);
  c.hostile = hostile;
  c.role = Role::kClient;
  c.run = std::move(run);
  r.Add(std::move(c));
}

// A fake server with `script`, a fresh principal and the bucket kBucket, listening.
std::unique_ptr<FakeServer> Serve(CaseContext& ctx, FakeScript script = {}) {
  if (ctx.target().client_exec.empty()) ctx.Unsupported("no client under test (--client-exec)");
  // The secret is recognizable so that AOBJ-AUTH-004 can look for it in everything received.
  auto s = std::make_unique<FakeServer>(ctx, std::move(script),
                                        "AKCONF" + absl::AsciiStrToUpper(HexEncode(RandomBytes(6))),
                                        "conf-secret-" + HexEncode(RandomBytes(16)));
  absl::Status st = s->Start();
  ctx.Require(st.ok(), "start the suite's fake server on 127.0.0.1", "OK", st.ToString());
  s->AddBucket(kBucket);
  return s;
}

std::string WriteFile(CaseContext& ctx, const std::string& content) {
  const std::string path = ctx.target().work_dir + "/" + ctx.Unique("in") + ".bin";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  ctx.Require(static_cast<bool>(f), "write the input file " + path, "written", "write failed");
  return path;
}

std::string OutPath(CaseContext& ctx) {
  return ctx.target().work_dir + "/" + ctx.Unique("out") + ".bin";
}

// The file's content, or nullopt when it does not exist.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string RunText(const ClientRun& run) {
  if (run.timed_out) return absl::StrCat("killed after ", run.seconds, " s");
  return absl::StrCat("exit ", run.exit_code,
                      run.error_name.empty() ? " (no \"error: NAME\" line)"
                                             : ", error: " + run.error_name);
}

void RequireSuccess(CaseContext& ctx, const ClientRun& run, const std::string& what) {
  ctx.Require(run.ok(), what + ": the client reports success", "exit 0", RunText(run));
}

// put BUCKET KEY FILE succeeds, and the success is real: the server holds the file.
void PutOk(CaseContext& ctx, FakeServer& server, const std::string& key,
           const std::string& content, const std::string& what) {
  RequireSuccess(ctx, RunClient(ctx, server, {"put", kBucket, key, WriteFile(ctx, content)}),
                 what);
  auto stored = server.Object(kBucket, key);
  ctx.Require(stored.has_value() && stored->content == content,
              what + ": the server holds the file (the success is real)", "equal content",
              stored ? absl::StrCat(stored->content.size(), " octets, differ")
                     : "no object stored");
}

// ls BUCKET PREFIX succeeds and lists every key of `keys`, one per line.
ClientRun LsOk(CaseContext& ctx, FakeServer& server, const std::string& prefix,
               const std::vector<std::string>& keys, const std::string& what) {
  ClientRun run = RunClient(ctx, server, {"ls", kBucket, prefix});
  RequireSuccess(ctx, run, what);
  std::set<std::string> lines;
  for (absl::string_view l : absl::StrSplit(run.out, '\n')) {
    lines.insert(std::string(absl::StripAsciiWhitespace(l)));
  }
  for (const auto& k : keys) {
    ctx.Require(lines.count(k) > 0, what + ": the driver lists " + k, "a line " + k, "missing");
  }
  return run;
}

// get BUCKET KEY FILE succeeds, and the file holds `content`.
void GetOk(CaseContext& ctx, FakeServer& server, const std::string& key,
           const std::string& content, const std::string& what) {
  const std::string out = OutPath(ctx);
  RequireSuccess(ctx, RunClient(ctx, server, {"get", kBucket, key, out}), what);
  auto file = ReadFile(out);
  ctx.Require(file.has_value() && *file == content,
              what + ": the file holds the object (the success is real)", "equal content",
              file ? absl::StrCat(file->size(), " octets, differ") : "no file");
}

// Three objects of `size` octets under `prefix` (contents seeded from `seed`) on the fake server,
// then the driver's get-all of them into a fresh directory with a per-call deadline of
// `deadline_ms`; the run must end within the time limit.
ClientRun GetAll(CaseContext& ctx, FakeServer& server, const std::string& prefix, size_t size,
                 int seed, const std::string& deadline_ms,
                 std::map<std::string, std::string>* objects, std::string* dir) {
  for (int i = 0; i < 3; ++i) {
    const std::string key = absl::StrCat(prefix, "k", i);
    (*objects)[key] = Content(size, seed + i);
    server.AddObject(kBucket, key, (*objects)[key]);
  }
  *dir = ctx.target().work_dir + "/" + ctx.Unique("dir");
  ctx.Require(mkdir(dir->c_str(), 0700) == 0, "make the directory " + *dir, "made",
              std::strerror(errno));
  ClientRun run = RunClient(ctx, server, {"get-all", deadline_ms, kBucket, prefix, *dir});
  ctx.Require(!run.timed_out, "the client ends within the time limit", "ends", RunText(run));
  return run;
}

// The client must fail, and name `code` on its "error: NAME" line.
void RequireFailure(CaseContext& ctx, const ClientRun& run, const std::string& what,
                    ErrorCode code) {
  ctx.Require(!run.timed_out, what + ": the client ends within the time limit", "ends",
              RunText(run));
  ctx.Require(run.exit_code != 0, what + ": the client never reports success", "non-zero exit",
              RunText(run));
  const std::string name(GetErrorInfo(code).name);
  ctx.Require(run.error_name == name, what + ": the client reports " + name,
              "error: " + name, RunText(run));
}

std::vector<ReceivedRequest> OfMethod(const std::vector<ReceivedRequest>& all, Method m) {
  std::vector<ReceivedRequest> out;
  for (const auto& r : all) {
    if (r.method == m) out.push_back(r);
  }
  return out;
}

template <class M>
M ParseAs(CaseContext& ctx, const ReceivedRequest& r) {
  M m;
  ctx.Require(m.ParseFromString(r.body),
              absl::StrCat("request #", r.index, " (", r.method_name, ") parses"),
              "a parsable message", absl::StrCat(r.body.size(), " unparsable octets"));
  return m;
}

std::string Describe(const ReceivedRequest& r) {
  return absl::StrCat("#", r.index, " ", r.method_name);
}

// AOBJ-SES-001: OpenSession first; every later call names a session the server issued.
void CheckSessionDiscipline(CaseContext& ctx, FakeServer& server) {
  const auto reqs = server.Requests();
  ctx.Require(!reqs.empty(), "the client sent requests", "at least one", "none");
  ctx.Require(reqs[0].method == Method::kOpenSession, "the first call is OpenSession",
              "OpenSession", reqs[0].method_name);
  const auto ids = server.SessionIds();
  const std::set<std::string> issued(ids.begin(), ids.end());
  for (const auto& r : reqs) {
    if (r.method == Method::kOpenSession) continue;
    int entries = 0;
    for (const auto& [k, v] : r.metadata) entries += k == kMetaSessionId ? 1 : 0;
    ctx.Require(entries == 1 && issued.count(r.auth.session_hex) > 0,
                Describe(r) + " names a session the server issued, in aobj-session-id",
                "one aobj-session-id entry with an issued ID",
                absl::StrCat(entries, " entries, value '", r.auth.session_hex, "'"));
  }
}

// Every request carries well-formed authentication entries and a signature that verifies over
// the octets received.
void CheckSignatures(CaseContext& ctx, FakeServer& server) {
  for (const auto& r : server.Requests()) {
    ctx.Require(r.auth_syntax_ok, Describe(r) + ": authentication entries well formed (AOBJ-AUTH-001)",
                "every entry present once, in its format", r.auth_syntax_error);
    ctx.Require(r.signature_ok,
                Describe(r) + ": HMAC-SHA256 over the octets received verifies (AOBJ-AUTH-002/003/016)",
                "verifies", "does not verify");
  }
}

// What the client used of each capability, checked against `allowed` (AOBJ-EXT-005/007).
void CheckCapabilityUse(CaseContext& ctx, FakeServer& server, const std::set<uint32_t>& allowed,
                        const std::string& why) {
  auto has = [&](uint32_t c) { return allowed.count(c) > 0; };
  for (const auto& r : server.Requests()) {
    if (r.method == Method::kPutObject) {
      auto p = ParseAs<pb::PutObjectRequest>(ctx, r);
      if (!has(kCapInline)) {
        ctx.Require(p.inline_data().empty(), Describe(r) + ": no inline_data (INLINE " + why + ")",
                    "no inline body", absl::StrCat(p.inline_data().size(), " inline octets"));
      }
      if (!has(kCapCrc64)) {
        ctx.Require(p.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_CRC64NVME,
                    Describe(r) + ": not CRC64NVME (" + why + ")", "CRC32C", "CRC64NVME");
      }
      if (!has(kCapMultiDescriptor)) {
        ctx.Require(p.source_size() <= 1,
                    Describe(r) + ": at most one descriptor (MULTI_DESCRIPTOR " + why + ")",
                    "<= 1", absl::StrCat(p.source_size()));
      }
    } else if (r.method == Method::kGetObject) {
      auto g = ParseAs<pb::GetObjectRequest>(ctx, r);
      if (!has(kCapInline)) {
        ctx.Require(!g.accept_inline(), Describe(r) + ": accept_inline not set (INLINE " + why + ")",
                    "false", "true");
      }
      if (!has(kCapCrc64)) {
        ctx.Require(g.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_CRC64NVME,
                    Describe(r) + ": not CRC64NVME (" + why + ")", "CRC32C or UNSPECIFIED",
                    "CRC64NVME");
      }
      if (!has(kCapMultiDescriptor)) {
        ctx.Require(g.destination_size() <= 1,
                    Describe(r) + ": at most one descriptor (MULTI_DESCRIPTOR " + why + ")",
                    "<= 1", absl::StrCat(g.destination_size()));
      }
    }
  }
}

std::set<uint32_t> Offered(CaseContext& ctx, FakeServer& server) {
  auto opens = OfMethod(server.Requests(), Method::kOpenSession);
  ctx.Require(!opens.empty(), "the client opened a session", "an OpenSession", "none");
  auto o = ParseAs<pb::OpenSessionRequest>(ctx, opens[0]);
  return std::set<uint32_t>(o.capabilities().begin(), o.capabilities().end());
}

// After a request answered `code` for its session, no request names that session again
// (AOBJ-SES-022).
void CheckNoUseAfter(CaseContext& ctx, FakeServer& server, ErrorCode code) {
  const auto reqs = server.Requests();
  const std::string name(GetErrorInfo(code).name);
  int failed_at = -1;
  std::string session;
  for (const auto& r : reqs) {
    if (failed_at < 0 && absl::StartsWith(r.outcome, name)) {
      failed_at = r.index;
      session = r.auth.session_hex;
      continue;
    }
    if (failed_at >= 0 && r.method != Method::kOpenSession) {
      ctx.Require(r.auth.session_hex != session,
                  absl::StrCat(Describe(r), " after ", name, " on #", failed_at,
                               " does not name that session"),
                  "another session (or a new OpenSession)",
                  absl::StrCat("aobj-session-id ", r.auth.session_hex));
    }
  }
  ctx.Require(failed_at >= 0, "the scripted " + name + " was sent", "one reply with " + name,
              "no request reached it");
}

// One PutObject only: the request that failed with a code the client must not treat as
// retryable was not sent again.
// A client that refused its session's negotiation sends nothing but OpenSession (and perhaps
// CloseSession) on it (AOBJ-SES-037, AOBJ-AUTH-021).
void RequireOnlySessionCalls(CaseContext& ctx, FakeServer& server, const std::string& when) {
  for (const auto& q : server.Requests()) {
    ctx.Require(q.method == Method::kOpenSession || q.method == Method::kCloseSession,
                Describe(q) + " is OpenSession or CloseSession: nothing is used " + when,
                "OpenSession or CloseSession", q.method_name);
  }
}

void RequireNotRetried(CaseContext& ctx, FakeServer& server, Method m, const std::string& why) {
  const auto n = OfMethod(server.Requests(), m).size();
  ctx.Require(n == 1, absl::StrCat(MethodName(m), " sent once: ", why), "1 request",
              absl::StrCat(n, " requests"));
}

Fault ErrorFault(Method m, uint32_t code, grpc::StatusCode grpc_code, bool retryable,
                 std::string name = "") {
  Fault f;
  f.method = m;
  f.kind = FaultKind::kError;
  f.code = code;
  f.grpc_code = grpc_code;
  f.retryable = retryable;
  f.name = std::move(name);
  return f;
}

Fault KindFault(Method m, FaultKind kind) {
  Fault f;
  f.method = m;
  f.kind = kind;
  return f;
}

// A GET of a seeded object under `script`; the client must fail with `code`.
void GetFails(CaseContext& ctx, FakeScript script, ErrorCode code, const std::string& what) {
  auto server = Serve(ctx, std::move(script));
  const std::string content = Content(256 << 10, 7);
  server->AddObject(kBucket, "obj", content);
  const std::string out = OutPath(ctx);
  ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", out});
  RequireFailure(ctx, run, what, code);
}

// A PUT of a 256 KiB file under `script`; the client must fail with `code`.
void PutFails(CaseContext& ctx, FakeScript script, ErrorCode code, const std::string& what) {
  auto server = Serve(ctx, std::move(script));
  const std::string in = WriteFile(ctx, Content(256 << 10, 8));
  ClientRun run = RunClient(ctx, *server, {"put", kBucket, "obj", in});
  RequireFailure(ctx, run, what, code);
}

// Test certificates for the TLS cases, made once per run in the work directory with the
// openssl command (UNSUPPORTED without it): a CA and a server certificate it signed for
// 127.0.0.1, a second CA with a server certificate for 127.0.0.1, and one from the first CA
// for another name only.
struct TlsFiles {
  std::string dir;
  std::string F(const std::string& name) const { return dir + "/" + name; }
};
const TlsFiles& MakeTlsFiles(CaseContext& ctx) {
  static std::mutex mu;
  static std::map<std::string, TlsFiles> made;  // by work directory
  std::lock_guard<std::mutex> lock(mu);
  const std::string dir = ctx.target().work_dir + "/tls";
  if (made.count(dir) > 0) return made[dir];
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    ctx.Unsupported("the TLS cases make their certificates with the openssl command, not found");
  }
  const std::string script = R"(set -e
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
for ca in ca other-ca; do
  openssl req -x509 $ec -keyout $ca.key -out $ca.pem -days 2 -subj /CN=aobj-conformance-$ca 2>/dev/null
done
printf 'subjectAltName=IP:127.0.0.1
' > ip.ext
printf 'subjectAltName=DNS:not-this-server.invalid
' > name.ext
sign() {  # sign NAME CA EXT
  openssl req $ec -keyout $1.key -out $1.csr -subj /CN=$1 2>/dev/null
  openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days 2 -extfile $3 2>/dev/null
}
sign server ca ip.ext
sign rogue other-ca ip.ext
sign misnamed ca name.ext
)";
  const std::string path = ctx.target().work_dir + "/make-tls.sh";
  {
    std::ofstream f(path);
    f << script;
  }
  const std::string cmd = "mkdir -p '" + dir + "' && cd '" + dir + "' && sh '" + path + "'";
  ctx.Require(std::system(cmd.c_str()) == 0, "make test certificates with openssl in " + dir,
              "made", "openssl failed");
  made[dir] = TlsFiles{dir};
  return made[dir];
}

// A fake server on TLS with the certificate `name` (server, rogue or misnamed); the client is
// told to trust ca.pem.
std::unique_ptr<FakeServer> ServeTls(CaseContext& ctx, const std::string& name) {
  const TlsFiles& tls = MakeTlsFiles(ctx);
  FakeScript script;
  script.tls_cert_file = tls.F(name + ".pem");
  script.tls_key_file = tls.F(name + ".key");
  script.tls_ca_file = tls.F("ca.pem");
  return Serve(ctx, std::move(script));
}

// The client must refuse a server whose certificate it cannot verify, before any request.
void TlsRefused(CaseContext& ctx, const std::string& name, const std::string& what) {
  auto server = ServeTls(ctx, name);
  server->AddObject(kBucket, "obj", Content(70000, 171));
  const std::string out = OutPath(ctx);
  ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", out});
  ctx.Require(!run.timed_out && run.exit_code != 0,
              what + ": the client does not report success", "non-zero exit", RunText(run));
  const auto reqs = server->Requests();
  ctx.Require(reqs.empty(),
              what + ": no request reached the server (AOBJ-CTL-013: verify before sending)",
              "no request", absl::StrCat(reqs.size(), " request(s), the first ",
                                         reqs.empty() ? "" : reqs[0].method_name));
  ctx.Require(!ReadFile(out).has_value(), what + ": no file written", "no file", "a file");
}

// Every line "KEY ok" or "KEY error: NAME" of a get-all run: key -> "ok" or NAME.
std::map<std::string, std::string> KeyOutcomes(const std::string& out) {
  std::map<std::string, std::string> m;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() == 2 && f[1] == "ok") m.emplace(f[0], "ok");
    if (f.size() == 3 && f[1] == "error:") m.emplace(f[0], f[2]);
  }
  return m;
}

// Every key of `objects` that `outcome` reports "ok" must have its file (DIR/key without its
// first `prefix_len` characters) hold exactly the object.
void RequireOkFilesHoldObjects(CaseContext& ctx, const std::map<std::string, std::string>& outcome,
                               const std::map<std::string, std::string>& objects,
                               const std::string& dir, size_t prefix_len,
                               const std::string& what = "") {
  for (const auto& [key, content] : objects) {
    auto it = outcome.find(key);
    if (it == outcome.end() || it->second != "ok") continue;
    auto file = ReadFile(dir + "/" + key.substr(prefix_len));
    ctx.Require(file.has_value() && *file == content,
                what + key + " reported downloaded: the file holds the object", "equal content",
                file ? "differs" : "no file");
  }
}

// `n` objects of 300000 octets (too large to batch) under "many/" on `server`, downloaded by one
// get-all run of the client into a new directory, which is returned: the run must succeed and
// report each key downloaded, and each file hold its object. Object i's content is
// Content(300000, seed + i).
std::string GetAllOfMany(CaseContext& ctx, FakeServer& server, int n, uint8_t seed) {
  std::map<std::string, std::string> objects;
  for (int i = 0; i < n; ++i) {
    objects[absl::StrCat("many/k", i)] = Content(300000, seed + i);
    server.AddObject(kBucket, absl::StrCat("many/k", i), objects[absl::StrCat("many/k", i)]);
  }
  const std::string dir = ctx.target().work_dir + "/" + ctx.Unique("dir");
  ctx.Require(mkdir(dir.c_str(), 0700) == 0, "make the directory " + dir, "made",
              std::strerror(errno));
  ClientRun run = RunClient(ctx, server, {"get-all", "20000", kBucket, "many/", dir});
  RequireSuccess(ctx, run, absl::StrCat("get-all of ", n, " objects with one client"));
  const auto outcome = KeyOutcomes(run.out);
  for (const auto& [key, content] : objects) {
    ctx.Require(outcome.count(key) > 0 && outcome.at(key) == "ok", key + " reported downloaded",
                "ok", outcome.count(key) > 0 ? outcome.at(key) : "no line");
  }
  RequireOkFilesHoldObjects(ctx, outcome, objects, dir, 5);
  return dir;
}

// get-range 1000-300999 of a 1 MiB object under `script`: the client must fail with INTERNAL
// (AOBJ-DAT-105) and leave no file claiming to be the range.
void RangeFails(CaseContext& ctx, FakeScript script, const std::string& what) {
  auto server = Serve(ctx, std::move(script));
  server->AddObject(kBucket, "obj", Content(1 << 20, 152));
  const std::string out = OutPath(ctx);
  ClientRun run = RunClient(ctx, *server, {"get-range", kBucket, "obj", "1000", "300999", out});
  RequireFailure(ctx, run, "ranged GET answered with " + what, ErrorCode::kInternal);
  ctx.Require(!ReadFile(out).has_value(), "no file claims to be the range", "no file",
              "a file was written");
}

// Every multipart request names an upload ID the server issued, exactly (AOBJ-OBJ-202).
void CheckUploadIds(CaseContext& ctx, FakeServer& server) {
  std::set<std::string> issued;
  for (const auto& u : server.Uploads()) issued.insert(u.upload_id);
  for (const auto& q : server.Requests()) {
    std::string id;
    if (q.method == Method::kUploadPart) {
      id = ParseAs<pb::UploadPartRequest>(ctx, q).upload_id();
    } else if (q.method == Method::kCompleteMultipartUpload) {
      id = ParseAs<pb::CompleteMultipartUploadRequest>(ctx, q).upload_id();
    } else if (q.method == Method::kAbortMultipartUpload) {
      id = ParseAs<pb::AbortMultipartUploadRequest>(ctx, q).upload_id();
    } else {
      continue;
    }
    ctx.Require(issued.count(id) > 0,
                Describe(q) + " names the upload ID as issued, unchanged (AOBJ-OBJ-202)",
                "an issued ID", "'" + id + "'");
  }
}

// put-multipart of 600 KiB in parts of 256 KiB, the second UploadPart answered with `kind`:
// the client must not list that part in a CompleteMultipartUpload before a reply for it has
// verified (AOBJ-DAT-154), and must fail with `code` unless it uploaded the part again.
std::unique_ptr<FakeServer> PartFails(CaseContext& ctx, FaultKind kind, ErrorCode code) {
  FakeScript script;
  Fault f = KindFault(Method::kUploadPart, kind);
  f.nth = 2;
  script.faults.push_back(f);
  auto server = Serve(ctx, std::move(script));
  const std::string content = Content(600 << 10, 162);
  ClientRun run = RunClient(ctx, *server,
                            {"put-multipart", kBucket, "obj", WriteFile(ctx, content),
                             std::to_string(256 << 10)});
  ctx.Require(server->WaitAnswered(absl::Seconds(30)), "the fake server answered every request",
              "answered", "still busy");
  CheckUploadIds(ctx, *server);
  const auto reqs = server->Requests();
  const auto parts = OfMethod(reqs, Method::kUploadPart);
  ctx.Require(parts.size() >= 2, "the client sent at least two UploadPart", ">= 2",
              absl::StrCat(parts.size()));
  int faulty = -1;  // the request whose reply carried the fault
  for (const auto& q : parts) {
    if (q.fault_applied) faulty = q.index;
  }
  ctx.Require(faulty >= 0, "one UploadPart reply carried the scripted fault", "one", "none");
  // For each part number, whether the latest UploadPart reply for it so far was the bad one.
  std::map<uint32_t, bool> unverified;
  for (const auto& q : reqs) {
    if (q.method == Method::kUploadPart) {
      unverified[ParseAs<pb::UploadPartRequest>(ctx, q).part_number()] = q.index == faulty;
    } else if (q.method == Method::kCompleteMultipartUpload) {
      const auto complete = ParseAs<pb::CompleteMultipartUploadRequest>(ctx, q);
      for (const auto& p : complete.parts()) {
        ctx.Require(!unverified[p.part_number()],
                    absl::StrCat(Describe(q), " does not list part ", p.part_number(),
                                 " whose only reply failed verification (AOBJ-DAT-154)"),
                    "not listed", "listed");
      }
    }
  }
  if (run.ok()) {
    auto stored = server->Object(kBucket, "obj");
    ctx.Require(stored.has_value() && stored->content == content,
                "the client reports success after uploading the part again: the server holds "
                "the file",
                "equal content", stored ? "differs" : "no object");
    ctx.Note("the client uploaded the part again");
  } else {
    RequireFailure(ctx, run, "the upload with a bad UploadPart reply", code);
  }
  return server;
}

}  // namespace

void RegisterClientCases(Registry& r) {
  // ---- 3: control channel ----------------------------------------------------------------
  AddClient(r, "cli/3.4/1", "no request is larger than 4 MiB plus the effective inline_threshold",
            {"AOBJ-CTL-006"}, false, [](CaseContext& ctx) {
              auto server = Serve(ctx);
              PutOk(ctx, *server, "big", Content(5 << 20, 31), "put of 5 MiB");
              const uint64_t threshold = FakeScript().limits.inline_threshold();
              for (const auto& q : server->Requests()) {
                const uint64_t bound =
                    (4u << 20) + (q.method == Method::kOpenSession ? 0 : threshold);
                ctx.Require(q.body.size() <= bound, Describe(q) + ": request message size",
                            absl::StrCat("<= ", bound, " octets"),
                            absl::StrCat(q.body.size(), " octets"));
              }
            });
  AddClient(r, "cli/3.4/2",
            "replies of 4 MiB plus inline_threshold are accepted; unknown reply fields ignored",
            {"AOBJ-CTL-007", "AOBJ-CTL-004"}, false, [](CaseContext& ctx) {
              FakeScript script;
              const uint64_t big = (4u << 20) + script.limits.inline_threshold();
              for (Method m : {Method::kHeadObject, Method::kGetObject}) {
                Fault f = KindFault(m, FaultKind::kPadResponse);
                f.nth = 0;
                f.pad_to = big;
                script.faults.push_back(f);
              }
              auto server = Serve(ctx, script);
              const std::string content = Content(300 << 10, 32);
              server->AddObject(kBucket, "padded", content);
              const std::string out = OutPath(ctx);
              RequireSuccess(ctx, RunClient(ctx, *server, {"get", kBucket, "padded", out}),
                             absl::StrCat("get with replies padded to ", big, " octets"));
              auto file = ReadFile(out);
              ctx.Require(file.has_value() && *file == content, "the file holds the object",
                          "equal content", file ? absl::StrCat(file->size(), " octets, differ")
                                                : "no file");
            });
  AddClient(r, "cli/3.7/1", "every call carries a gRPC deadline", {"AOBJ-CTL-010"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              server->AddObject(kBucket, "obj", Content(70000, 33));
              PutOk(ctx, *server, "new", Content(70000, 34), "put");
              GetOk(ctx, *server, "obj", Content(70000, 33), "get");
              for (const auto& q : server->Requests()) {
                ctx.Require(q.has_deadline, Describe(q) + " carries a deadline", "grpc-timeout",
                            "no deadline");
              }
            });

  AddClient(r, "cli/3.6/1", "TLS: the client verifies the server's certificate and works over it",
            {"AOBJ-CTL-013"}, false, [](CaseContext& ctx) {
              auto server = ServeTls(ctx, "server");
              server->AddObject(kBucket, "obj", Content(70000, 172));
              GetOk(ctx, *server, "obj", Content(70000, 172), "get over TLS");
            });
  AddClient(r, "cli/3.6/2",
            "TLS: a server certificate from a CA the client does not trust is refused before "
            "any request",
            {"AOBJ-CTL-013"}, true,
            [](CaseContext& ctx) { TlsRefused(ctx, "rogue", "certificate from another CA"); });
  AddClient(r, "cli/3.6/3",
            "TLS: a server certificate for another name is refused before any request",
            {"AOBJ-CTL-013"}, true, [](CaseContext& ctx) {
              TlsRefused(ctx, "misnamed", "certificate for not-this-server.invalid only");
            });

  // ---- 4: versions, capabilities, grease -------------------------------------------------
  AddClient(r, "cli/4.2/1",
            "capabilities the server did not grant are not used (only CRC32C negotiated)",
            {"AOBJ-EXT-007", "AOBJ-SES-016"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.capabilities = {kCapCrc32c};
              auto server = Serve(ctx, script);
              const std::string small = Content(1000, 41), large = Content(100000, 42);
              server->AddObject(kBucket, "small-seed", small);
              PutOk(ctx, *server, "small", small, "put of 1000 octets");
              PutOk(ctx, *server, "large", large, "put of 100000 octets");
              GetOk(ctx, *server, "small-seed", small, "get of 1000 octets");
              CheckCapabilityUse(ctx, *server, {kCapCrc32c}, "not negotiated");
            });
  AddClient(r, "cli/4.2/2",
            "a response listing a capability the client did not offer ends the session unused",
            {"AOBJ-SES-037", "AOBJ-EXT-005"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.list_all_capabilities = true;
              script.capabilities = {kCapInline, kCapCrc32c, kCapCrc64, kCapMultiDescriptor,
                                     0x00ff00ffu, 0xf0000001u};
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(1000, 43));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "small", in});
              RequireFailure(ctx, run, "put answered capabilities 0x00ff00ff and 0xf0000001",
                             ErrorCode::kNegotiationFailed);
              RequireOnlySessionCalls(ctx, *server, "after a negotiation it did not offer");
            });
  AddClient(r, "cli/4.2/3",
            "a response selecting a version the client did not offer ends the session unused",
            {"AOBJ-SES-037"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.supported_versions.set_max(2);
              script.answer_version = 2;
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(1000, 45));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "small", in});
              const auto opens = OfMethod(server->Requests(), Method::kOpenSession);
              bool offered_two = false;
              for (const auto& o : opens) {
                auto req = ParseAs<pb::OpenSessionRequest>(ctx, o);
                for (uint32_t v : req.offered_versions()) offered_two = offered_two || v == 2;
                if (req.offered_versions().empty() && req.versions().max() >= 2) offered_two = true;
              }
              if (offered_two) {
                ctx.Note("the client offered version 2, so this run shows nothing");
                return;
              }
              RequireFailure(ctx, run, "put answered version 2", ErrorCode::kNegotiationFailed);
              RequireOnlySessionCalls(ctx, *server, "after a version it did not offer");
            });
  AddClient(r, "cli/4.2/4",
            "a response selecting a data-channel binding the client did not offer ends the "
            "session unused",
            {"AOBJ-SES-041"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.answer_binding = 2;  // verbs (Appendix D): this fake server has none
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(1000, 48));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "small", in});
              bool offered_two = false;
              for (const auto& o : OfMethod(server->Requests(), Method::kOpenSession)) {
                auto req = ParseAs<pb::OpenSessionRequest>(ctx, o);
                for (const auto& b : req.bindings()) offered_two = offered_two || b.binding() == 2;
              }
              if (offered_two) {
                ctx.Note("the client offered the verbs binding, so this run shows nothing");
                return;
              }
              RequireFailure(ctx, run, "put answered binding 2 (verbs)",
                             ErrorCode::kNegotiationFailed);
              RequireOnlySessionCalls(ctx, *server, "after a binding it did not offer");
            });
  AddClient(r, "cli/4.3/4",
            "a grease capability ID with parameters and a grease field in the response are "
            "ignored; the client offers a list of versions with grease among them",
            {"AOBJ-EXT-012", "AOBJ-EXT-001", "AOBJ-SES-034", "AOBJ-EXT-011", "AOBJ-EXT-018",
             "AOBJ-CTL-004", "AOBJ-EXT-022"},
            true, [](CaseContext& ctx) {
              FakeScript script;
              script.grease_capability = 0x7A3A5A1Au;
              auto server = Serve(ctx, script);
              const std::string small = Content(1000, 46);
              PutOk(ctx, *server, "small", small, "put with a grease capability answered");
              GetOk(ctx, *server, "small", small, "get with a grease capability answered");
              const auto opens = OfMethod(server->Requests(), Method::kOpenSession);
              ctx.Require(!opens.empty(), "the client opened a session", "an OpenSession", "none");
              if (opens.empty()) return;
              auto req = ParseAs<pb::OpenSessionRequest>(ctx, opens[0]);
              bool one = false, grease = false;
              for (uint32_t v : req.offered_versions()) {
                one = one || v == 1;
                grease = grease || IsGrease(v);
              }
              ctx.Require(one, "offered_versions lists version 1 (AOBJ-SES-034)", "1 listed",
                          req.ShortDebugString());
              uint32_t highest = 0;
              for (uint32_t v : req.offered_versions()) {
                if (!IsGrease(v)) highest = std::max(highest, v);
              }
              ctx.Require(!req.has_versions() || highest == 0 || req.versions().max() <= highest,
                          "the range's maximum is a version the client implements (AOBJ-EXT-022)",
                          absl::StrCat("<= ", highest), req.versions().ShortDebugString());
              if (!grease) ctx.Note("no grease version offered (AOBJ-EXT-011 is a SHOULD)");
            });
  AddClient(r, "cli/4.3/5",
            "the OpenSession request carries a grease capability with parameters and a grease "
            "field",
            {"AOBJ-EXT-017", "AOBJ-EXT-002"}, false, [](CaseContext& ctx) {
              FakeScript script;
              auto server = Serve(ctx, script);
              const std::string small = Content(1000, 48);
              PutOk(ctx, *server, "small", small, "put");
              const auto opens = OfMethod(server->Requests(), Method::kOpenSession);
              ctx.Require(!opens.empty(), "the client opened a session", "an OpenSession", "none");
              if (opens.empty()) return;
              auto req = ParseAs<pb::OpenSessionRequest>(ctx, opens[0]);
              uint32_t grease = 0;
              for (uint32_t c : req.capabilities()) {
                if (IsGrease(c)) grease = c;
              }
              ctx.Require(grease != 0, "a grease capability ID offered (AOBJ-EXT-002)",
                          "one matching (v & 0x0F0F0F0F) == 0x0A0A0A0A", req.ShortDebugString());
              RequireGreaseParamsAndField(ctx, req, grease);
            });
  AddClient(r, "cli/6.8/1",
            "an OpenSession response without its signature, or altered after signing, is not used",
            {"AOBJ-AUTH-021"}, true, [](CaseContext& ctx) {
              using RS = FakeScript::ResponseSignature;
              for (RS how : {RS::kAbsent, RS::kRewrittenAfterSigning}) {
                FakeScript script;
                script.response_signature = how;
                auto server = Serve(ctx, script);
                const std::string in = WriteFile(ctx, Content(1000, 47));
                ClientRun run = RunClient(ctx, *server, {"put", kBucket, "small", in});
                const std::string what =
                    how == RS::kAbsent ? "put answered an unsigned OpenSession"
                                       : "put answered an OpenSession rewritten after signing";
                RequireFailure(ctx, run, what, ErrorCode::kSignatureDoesNotMatch);
                RequireOnlySessionCalls(ctx, *server, what);
              }
            });
  AddClient(r, "cli/4.3/1", "an unknown (grease) error code is INTERNAL and not retried",
            {"AOBJ-EXT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              // Marked retryable and UNAVAILABLE: a client that believed either would retry.
              script.faults.push_back(ErrorFault(Method::kPutObject, 0x2A3A4A5Au,
                                                 grpc::StatusCode::UNAVAILABLE, true,
                                                 "GREASE_ERROR"));
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(256 << 10, 44));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "obj", in});
              RequireFailure(ctx, run, "PutObject failed with code 0x2a3a4a5a",
                             ErrorCode::kInternal);
              RequireNotRetried(ctx, *server, Method::kPutObject,
                                "an unknown code is not retryable (AOBJ-EXT-004)");
            });
  AddClient(r, "cli/4.3/2", "an unassigned error code is INTERNAL and not retried",
            {"AOBJ-EXT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kPutObject, 4000,
                                                 grpc::StatusCode::UNAVAILABLE, true, "FUTURE"));
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(256 << 10, 45));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "obj", in});
              RequireFailure(ctx, run, "PutObject failed with code 4000", ErrorCode::kInternal);
              RequireNotRetried(ctx, *server, Method::kPutObject,
                                "an unknown code is not retryable (AOBJ-EXT-004)");
            });
  AddClient(r, "cli/4.3/3", "OpenSession offers one grease capability", {"AOBJ-EXT-002"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              PutOk(ctx, *server, "obj", Content(70000, 46), "put");
              int grease = 0;
              for (uint32_t c : Offered(ctx, *server)) {
                grease += (c & 0x0F0F0F0Fu) == 0x0A0A0A0Au ? 1 : 0;
              }
              ctx.Require(grease == 1, "grease capability IDs offered", "1",
                          absl::StrCat(grease));
            });

  // ---- 5: sessions -----------------------------------------------------------------------
  AddClient(r, "cli/5.1/1",
            "OpenSession first, with a worker address and CRC32C; the session ID on every call",
            {"AOBJ-SES-001", "AOBJ-TRN-001", "AOBJ-TRN-013", "AOBJ-DAT-022"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              const std::string content = Content(100000, 51);
              PutOk(ctx, *server, "obj", content, "put");
              server->AddObject(kBucket, "seed", content);
              GetOk(ctx, *server, "seed", content, "get");
              CheckSessionDiscipline(ctx, *server);
              for (const auto& o : OfMethod(server->Requests(), Method::kOpenSession)) {
                auto open = ParseAs<pb::OpenSessionRequest>(ctx, o);
                ctx.Require(!open.worker_address().empty(),
                            Describe(o) + " carries the client's UCX worker address (AOBJ-TRN-001)",
                            "non-empty", "empty");
                bool crc32c = false;
                for (uint32_t c : open.capabilities()) crc32c = crc32c || c == kCapCrc32c;
                ctx.Require(crc32c, Describe(o) + " offers CRC32C (AOBJ-DAT-022)",
                            "capability 2 offered",
                            absl::StrJoin(open.capabilities(), ","));
              }
              ctx.Require(server->endpoints_connected() == 2,
                          "the server connected an endpoint to each worker address",
                          "2 endpoints", absl::StrCat(server->endpoints_connected()));
              auto stored = server->Object(kBucket, "obj");
              ctx.Require(stored.has_value() && stored->content == content,
                          "the object the server stored is the file", "equal content",
                          stored ? "differs" : "not stored");
            });
  AddClient(r, "cli/5.11/1",
            "listed gateways are a hint: the client keeps working when they cannot be reached",
            {"AOBJ-SES-033"}, true, [](CaseContext& ctx) {
              FakeScript script;
              // Port 1 on loopback: nothing listens there (a connection is refused at once).
              script.gateways = {"127.0.0.1:1", "127.0.0.1:1"};
              auto server = Serve(ctx, script);
              const std::string content = Content(70000, 52);
              PutOk(ctx, *server, "via-listed", content, "put with unreachable listed gateways");
              server->AddObject(kBucket, "seed", content);
              GetOk(ctx, *server, "seed", content, "get with unreachable listed gateways");
            });
  AddClient(r, "cli/5.1/2", "requests stay inside the session's effective limits",
            {"AOBJ-SES-016"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.limits.set_inline_threshold(1024);
              script.limits.set_max_descriptors(2);
              auto server = Serve(ctx, script);
              for (size_t n : {size_t{512}, size_t{4096}, size_t{200000}}) {
                PutOk(ctx, *server, absl::StrCat("o", n), Content(n, 52),
                      absl::StrCat("put of ", n, " octets"));
                GetOk(ctx, *server, absl::StrCat("o", n), Content(n, 52),
                      absl::StrCat("get of ", n, " octets"));
              }
              for (const auto& q : server->Requests()) {
                if (q.method == Method::kOpenSession) {
                  auto o = ParseAs<pb::OpenSessionRequest>(ctx, q);
                  ctx.Require(o.versions().min() <= 1 && o.versions().max() >= 1,
                              Describe(q) + " offers version 1", "1 in range",
                              absl::StrCat("[", o.versions().min(), ", ", o.versions().max(), "]"));
                } else if (q.method == Method::kPutObject) {
                  auto p = ParseAs<pb::PutObjectRequest>(ctx, q);
                  ctx.Require(p.inline_data().size() <= 1024,
                              Describe(q) + ": inline body within inline_threshold 1024",
                              "<= 1024", absl::StrCat(p.inline_data().size()));
                  ctx.Require(p.source_size() <= 2, Describe(q) + ": descriptors within 2",
                              "<= 2", absl::StrCat(p.source_size()));
                } else if (q.method == Method::kGetObject) {
                  auto g = ParseAs<pb::GetObjectRequest>(ctx, q);
                  ctx.Require(g.destination_size() <= 2, Describe(q) + ": descriptors within 2",
                              "<= 2", absl::StrCat(g.destination_size()));
                }
                ctx.Require(absl::StartsWith(q.outcome, "OK"), Describe(q) + " was accepted",
                            "OK", q.outcome);
              }
            });
  AddClient(r, "cli/5.2/1", "UNSUPPORTED_VERSION: the client fails cleanly with that error",
            {"AOBJ-SES-001", "AOBJ-ERR-003"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.refuse_version = true;
              script.supported_versions.set_min(7);
              script.supported_versions.set_max(9);
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 53))});
              RequireFailure(ctx, run, "OpenSession refused", ErrorCode::kUnsupportedVersion);
              for (const auto& q : server->Requests()) {
                ctx.Require(q.method == Method::kOpenSession,
                            Describe(q) + ": without a session only OpenSession is sent",
                            "OpenSession", q.method_name);
              }
            });
  AddClient(r, "cli/5.6/1", "the client proves its endpoint before its first RMA request",
            {"AOBJ-SES-028"}, true, [](CaseContext& ctx) {
              auto server = Serve(ctx);
              PutOk(ctx, *server, "obj", Content(70000, 57), "put by RMA");
              int confirmed_at = -1, first_data = -1;
              for (const auto& q : server->Requests()) {
                if (q.method == Method::kConfirmEndpoint && q.outcome == "OK" &&
                    confirmed_at < 0) {
                  confirmed_at = q.index;
                }
                if ((q.method == Method::kPutObject || q.method == Method::kGetObject ||
                     q.method == Method::kUploadPart) && first_data < 0) {
                  first_data = q.index;
                }
              }
              ctx.Require(confirmed_at >= 0,
                          "ConfirmEndpoint with the proof over the challenges sent to its worker",
                          "accepted", confirmed_at < 0 ? "never sent or refused" : "accepted");
              ctx.Require(first_data > confirmed_at, "ConfirmEndpoint before the first data request",
                          "before", absl::StrCat("confirm #", confirmed_at, ", data #", first_data));
            });
  AddClient(r, "cli/5.8/1", "RenewSession while a data request outlasts half the lease",
            {"AOBJ-SES-019"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.lease_ms = 1000;
              Fault slow = KindFault(Method::kPutObject, FaultKind::kDelay);
              slow.delay = absl::Milliseconds(1600);
              script.faults.push_back(slow);
              auto server = Serve(ctx, script);
              PutOk(ctx, *server, "obj", Content(70000, 54),
                    "put answered after 1.6 s with lease_ms 1000");
              auto puts = OfMethod(server->Requests(), Method::kPutObject);
              ctx.Require(puts.size() == 1, "one PutObject", "1", absl::StrCat(puts.size()));
              const absl::Time sent = puts[0].received;
              int renewals = 0;
              for (const auto& q : OfMethod(server->Requests(), Method::kRenewSession)) {
                const absl::Duration at = q.received - sent;
                if (at > absl::ZeroDuration() && at < absl::Milliseconds(1600)) ++renewals;
              }
              ctx.Require(renewals >= 1,
                          "RenewSession sent while the PUT was in flight (half the lease is 500 ms)",
                          ">= 1", absl::StrCat(renewals));
            });
  AddClient(r, "cli/5.9/1", "after SESSION_EXPIRED no request names the session",
            {"AOBJ-SES-022"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kCount, 10,
                                                 grpc::StatusCode::FAILED_PRECONDITION, false));
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 55))});
              RequireFailure(ctx, run, "the session expired", ErrorCode::kSessionExpired);
              CheckNoUseAfter(ctx, *server, ErrorCode::kSessionExpired);
            });
  AddClient(r, "cli/5.9/2", "after NO_SUCH_SESSION no request names the session",
            {"AOBJ-SES-022"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(
                  ErrorFault(Method::kCount, 9, grpc::StatusCode::NOT_FOUND, false));
              auto server = Serve(ctx, script);
              server->AddObject(kBucket, "obj", Content(70000, 56));
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", OutPath(ctx)});
              RequireFailure(ctx, run, "the session is unknown", ErrorCode::kNoSuchSession);
              CheckNoUseAfter(ctx, *server, ErrorCode::kNoSuchSession);
            });

  // ---- 6: authentication -----------------------------------------------------------------
  AddClient(r, "cli/6.1/1", "the secret appears in no octet or metadata entry received",
            {"AOBJ-AUTH-004"}, false, [](CaseContext& ctx) {
              auto server = Serve(ctx);
              server->AddObject(kBucket, "a/1", Content(5000, 61));
              PutOk(ctx, *server, "a/2", Content(70000, 62), "put");
              GetOk(ctx, *server, "a/1", Content(5000, 61), "get");
              LsOk(ctx, *server, "a/", {"a/1", "a/2"}, "ls");
              const std::string& secret = server->secret();
              const std::vector<std::string> forms = {
                  secret, HexEncode(secret), absl::AsciiStrToUpper(HexEncode(secret)),
                  absl::Base64Escape(secret), absl::WebSafeBase64Escape(secret)};
              for (const auto& q : server->Requests()) {
                for (const auto& form : forms) {
                  ctx.Require(!absl::StrContains(q.body, form),
                              Describe(q) + ": the message does not contain the secret",
                              "absent", "found");
                  for (const auto& [k, v] : q.metadata) {
                    ctx.Require(!absl::StrContains(v, form) && !absl::StrContains(k, form),
                                Describe(q) + ": metadata entry " + k + " does not hold the secret",
                                "absent", "found");
                  }
                }
              }
            });
  AddClient(r, "cli/6.2/1", "nonces never repeat for one access key, across runs",
            {"AOBJ-AUTH-011"}, false, [](CaseContext& ctx) {
              auto server = Serve(ctx);
              server->AddObject(kBucket, "k", Content(3000, 63));
              for (int i = 0; i < 3; ++i) {
                PutOk(ctx, *server, absl::StrCat("p", i), Content(20000, 64 + i), "put");
                GetOk(ctx, *server, "k", Content(3000, 63), "get");
              }
              std::set<std::string> seen;
              for (const auto& q : server->Requests()) {
                ctx.Require(q.auth.nonce_hex.size() == 32, Describe(q) + ": nonce of 16 octets",
                            "32 hex characters", q.auth.nonce_hex);
                ctx.Require(seen.insert(q.auth.nonce_hex).second,
                            Describe(q) + ": nonce not sent before", "new", q.auth.nonce_hex);
              }
              ctx.Note(absl::StrCat(seen.size(), " requests, all nonces distinct; whether they "
                                                 "come from a CSPRNG is not observable"));
            });
  AddClient(r, "cli/6.3/1", "every request is signed over the octets the server received",
            {"AOBJ-AUTH-001", "AOBJ-AUTH-002", "AOBJ-AUTH-003", "AOBJ-AUTH-016"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              server->AddObject(kBucket, "d/x", Content(9000, 65));
              server->AddObject(kBucket, "d/y", Content(0, 66));
              PutOk(ctx, *server, "d/z", Content(1234, 67), "put (small)");
              PutOk(ctx, *server, "d/w", Content(99999, 68), "put (large)");
              GetOk(ctx, *server, "d/x", Content(9000, 65), "get");
              GetOk(ctx, *server, "d/y", "", "get of an empty object");
              LsOk(ctx, *server, "d/", {"d/w", "d/x", "d/y", "d/z"}, "ls");
              CheckSignatures(ctx, *server);
              std::set<Method> methods;
              for (const auto& q : server->Requests()) methods.insert(q.method);
              ctx.Note(absl::StrCat(server->Requests().size(), " requests of ", methods.size(),
                                    " methods checked"));
            });

  // ---- 7: memory -------------------------------------------------------------------------
  AddClient(r, "cli/7.5/1", "a PUT window keeps the body until the reply",
            {"AOBJ-MEM-011"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.reread_put_after = absl::Milliseconds(400);
              auto server = Serve(ctx, script);
              const std::string content = Content(512 << 10, 71);
              PutOk(ctx, *server, "obj", content, "put, the server reading the window twice, 400 ms apart");
              auto puts = OfMethod(server->Requests(), Method::kPutObject);
              ctx.Require(puts.size() == 1 && puts[0].window_bytes > 0,
                          "one PutObject by RMA", "1 with descriptors",
                          absl::StrCat(puts.size(), " PutObject"));
              ctx.Require(puts[0].rma_error.empty(),
                          "the window read 400 ms later still holds the body", "unchanged",
                          puts[0].rma_error);
              auto stored = server->Object(kBucket, "obj");
              ctx.Require(stored.has_value() && stored->content == content,
                          "the object stored is the file", "equal", stored ? "differs" : "none");
            });

  AddClient(r, "cli/7.5/3",
            "after TRANSFER_FAILED in an EMULATED session, no data request uses that session's "
            "worker again",
            {"AOBJ-MEM-027"}, true, [](CaseContext& ctx) {
              // The first GetObject fails TRANSFER_FAILED (retryable). Emulated writes of the
              // server may still wait in the client's receive queues, so the windows of that
              // worker are not the client's until it destroys the worker (AOBJ-MEM-014): a
              // later data request must come from a new session (a new worker), or not at all.
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kGetObject, 41,
                                                 grpc::StatusCode::UNAVAILABLE, true));
              auto server = Serve(ctx, script);
              std::map<std::string, std::string> objects;
              std::string dir;
              ClientRun run = GetAll(ctx, *server, "tf/", 256 << 10, 150, "10000", &objects, &dir);
              const std::map<std::string, std::string> outcome = KeyOutcomes(run.out);
              RequireOkFilesHoldObjects(ctx, outcome, objects, dir, 3);
              auto gets = OfMethod(server->Requests(), Method::kGetObject);
              ctx.Require(!gets.empty(), "the client sent a GetObject", ">= 1", "none");
              const ReceivedRequest& failed = gets[0];
              const std::string failed_key = ParseAs<pb::GetObjectRequest>(ctx, failed).key();
              ctx.Require(outcome.count(failed_key) == 0 || outcome.at(failed_key) != "ok" ||
                              gets.size() > 1,
                          "the GET that failed TRANSFER_FAILED is not reported downloaded "
                          "unless it was sent again",
                          "an error, or a retry", "reported ok without a retry");
              // A client that moves several objects at once may have sent other requests of
              // the session before the failure reached it: up to max_in_flight - 1 of them may
              // arrive after the failed one, and only at once. More, or any that arrives seconds
              // later, was started on that worker after the failure.
              const int in_flight_allowance = 16 - 1;  // the fake server's max_in_flight, less one
              int later_same = 0, late = 0;
              int later_new = 0;
              for (const auto& q : server->Requests()) {
                if (q.index <= failed.index) continue;
                if (q.method != Method::kGetObject && q.method != Method::kPutObject &&
                    q.method != Method::kUploadPart) {
                  continue;
                }
                if (q.auth.session_hex == failed.auth.session_hex) {
                  ++later_same;
                  if (q.received - failed.received > absl::Seconds(2)) {
                    ++late;
                    ctx.Expect(false,
                               Describe(q) +
                                   " uses the session (and worker) whose GET failed "
                                   "TRANSFER_FAILED, seconds after the failure",
                               "a new session", "the same session");
                  }
                } else {
                  ++later_new;
                }
              }
              ctx.Require(late == 0 && later_same <= in_flight_allowance,
                          "no data request started on the worker of the failed one after the "
                          "failure (AOBJ-MEM-027)",
                          absl::StrCat("at most ", in_flight_allowance,
                                       " already in flight, none seconds later"),
                          absl::StrCat(later_same, " requests after it, ", late, " seconds later"));
              ctx.Note(absl::StrCat(later_same,
                                    " data request(s) of the session after the failed "
                                    "one (in flight), ",
                                    later_new, " on a new session"));
            });

  AddClient(r, "cli/7.5/2",
            "a GET that ends without a reply: DEADLINE_EXCEEDED, and its windows are not reused "
            "on that worker",
            {"AOBJ-MEM-014", "AOBJ-CTL-014"}, true, [](CaseContext& ctx) {
              // The first GetObject is held 6 s, then served (the fake server writes into its
              // windows then, as a slow server would); the client's deadline is 2 s (every call
              // has it, OpenSession and the listing too, so it leaves room for a busy machine).
              FakeScript script;
              Fault late = KindFault(Method::kGetObject, FaultKind::kDelay);
              late.delay = absl::Seconds(6);
              script.faults.push_back(late);
              auto server = Serve(ctx, script);
              std::map<std::string, std::string> objects;
              std::string dir;
              ClientRun run = GetAll(ctx, *server, "late/", 1 << 20, 140, "2000", &objects, &dir);
              ctx.Require(server->WaitAnswered(absl::Seconds(30)),
                          "the fake server answered every request", "answered", "still busy");
              const std::map<std::string, std::string> outcome = KeyOutcomes(run.out);
              for (const auto& [key, content] : objects) {
                auto it = outcome.find(key);
                ctx.Require(it != outcome.end(), "the driver reports an outcome for " + key,
                            "a line '" + key + " ok' or '" + key + " error: NAME'", "none");
                if (it->second != "ok") continue;
                auto file = ReadFile(dir + "/" + key.substr(5));
                ctx.Require(file.has_value() && *file == content,
                            key + " reported downloaded: the file holds the object",
                            "equal content", file ? "differs" : "no file");
              }
              // The held request is the one the fault matched, not the first recorded: with
              // several GETs in flight, the order they were recorded in and the order their
              // handlers reached the fault can differ.
              auto gets = OfMethod(server->Requests(), Method::kGetObject);
              const ReceivedRequest* held = nullptr;
              for (const auto& g : gets) {
                if (g.fault_applied) {
                  held = &g;
                  break;
                }
              }
              ctx.Require(held != nullptr && !held->windows.empty(),
                          "the GetObject held past the deadline named windows (RMA)",
                          "descriptors", held == nullptr ? "no GetObject held" : "none");
              const ReceivedRequest& first = *held;
              const std::string first_key = ParseAs<pb::GetObjectRequest>(ctx, first).key();
              ctx.Require(outcome.at(first_key) == "DEADLINE_EXCEEDED",
                          "the GET held past the deadline is reported DEADLINE_EXCEEDED "
                          "(AOBJ-CTL-014), never success",
                          "DEADLINE_EXCEEDED", outcome.at(first_key));
              int same_worker = 0;
              int other_worker = 0;
              for (const auto& q : server->Requests()) {
                if (q.index <= first.index || q.windows.empty()) continue;
                if (q.endpoint != first.endpoint) {
                  ++other_worker;
                  continue;
                }
                ++same_worker;
                for (const auto& [a, n] : q.windows) {
                  for (const auto& [fa, fn] : first.windows) {
                    ctx.Require(a + n <= fa || fa + fn <= a,
                                Describe(q) + " on the same worker does not reuse a window of " +
                                    Describe(first) + " (AOBJ-MEM-014)",
                                "disjoint windows",
                                absl::StrCat("[", a, ", +", n, ") overlaps [", fa, ", +", fn,
                                             ")"));
                  }
                }
              }
              ctx.Note(absl::StrCat(same_worker, " later data request(s) on the same worker, ",
                                    other_worker,
                                    " on another worker (a new session after the old worker was "
                                    "destroyed)"));
            });

  // ---- 8: data movement ------------------------------------------------------------------
  AddClient(r, "cli/8.1/1", "GET reply with path UNSPECIFIED is a failure (INTERNAL)",
            {"AOBJ-DAT-031"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kGetObject, FaultKind::kPathUnspecified));
              GetFails(ctx, script, ErrorCode::kInternal, "GET answered with path UNSPECIFIED");
            });
  AddClient(r, "cli/8.1/2", "PUT reply with path UNSPECIFIED is a failure (INTERNAL)",
            {"AOBJ-DAT-031"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kPutObject, FaultKind::kPathUnspecified));
              PutFails(ctx, script, ErrorCode::kInternal, "PUT answered with path UNSPECIFIED");
            });
  AddClient(r, "cli/8.1/3", "GET answered INLINE without accept_inline is a failure (INTERNAL)",
            {"AOBJ-DAT-031", "AOBJ-EXT-007"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.capabilities = {kCapCrc32c, kCapCrc64, kCapMultiDescriptor};  // no INLINE
              script.faults.push_back(KindFault(Method::kGetObject, FaultKind::kPathInline));
              auto server = Serve(ctx, script);
              const std::string content = Content(3000, 81);
              server->AddObject(kBucket, "obj", content);
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", OutPath(ctx)});
              for (const auto& g : OfMethod(server->Requests(), Method::kGetObject)) {
                auto req = ParseAs<pb::GetObjectRequest>(ctx, g);
                ctx.Require(!req.accept_inline(),
                            Describe(g) + ": accept_inline not set (INLINE not negotiated)",
                            "false", "true");
              }
              RequireFailure(ctx, run, "GET answered INLINE", ErrorCode::kInternal);
            });
  AddClient(r, "cli/8.4/1",
            "an inline GET body longer than the client's windows: DESCRIPTOR_TOO_SMALL",
            {"AOBJ-DAT-162"}, true, [](CaseContext& ctx) {
              // HEAD says one octet less than the object holds, as if it grew before the GET;
              // a client that sizes its window from HEAD gets a longer inline body back.
              FakeScript script;
              script.faults.push_back(KindFault(Method::kHeadObject, FaultKind::kUndersizedHead));
              auto server = Serve(ctx, script);
              const std::string content = Content(3000, 83);
              server->AddObject(kBucket, "obj", content);
              const std::string out = OutPath(ctx);
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", out});
              uint64_t smallest = UINT64_MAX;
              for (const auto& g : OfMethod(server->Requests(), Method::kGetObject)) {
                auto req = ParseAs<pb::GetObjectRequest>(ctx, g);
                uint64_t windows = 0;
                for (const auto& d : req.destination()) windows += d.length();
                if (req.accept_inline()) smallest = std::min(smallest, windows);
              }
              if (smallest >= content.size()) {
                ctx.Unsupported(
                    "the client never asked for this object inline with windows shorter than it "
                    "(it does not size its windows from HeadObject)");
              }
              RequireFailure(ctx, run, "GET whose inline body is one octet longer than the windows",
                             ErrorCode::kDescriptorTooSmall);
            });
  AddClient(r, "cli/8.7/1", "GET with bytes_transferred below the size: INCOMPLETE_TRANSFER",
            {"AOBJ-DAT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kGetObject, FaultKind::kShortTransfer));
              GetFails(ctx, script, ErrorCode::kIncompleteTransfer,
                       "GET reply reporting one octet less than the object");
            });
  AddClient(r, "cli/8.7/2", "GET that wrote half the body but claims all of it: BAD_DIGEST",
            {"AOBJ-DAT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kGetObject, FaultKind::kPartialWrite));
              GetFails(ctx, script, ErrorCode::kBadDigest,
                       "GET that wrote only the first half of the window");
            });
  AddClient(r, "cli/8.7/3", "GET reply with a wrong checksum: BAD_DIGEST", {"AOBJ-DAT-004"},
            true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kGetObject, FaultKind::kWrongChecksum));
              GetFails(ctx, script, ErrorCode::kBadDigest, "GET reply with a wrong checksum");
            });
  AddClient(r, "cli/8.7/4", "PUT reply with bytes_transferred below the size: INCOMPLETE_TRANSFER",
            {"AOBJ-DAT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kPutObject, FaultKind::kShortTransfer));
              PutFails(ctx, script, ErrorCode::kIncompleteTransfer,
                       "PUT reply reporting one octet less than the size");
            });
  // AOBJ-OBJ-244: a GetObjects result whose region does not hold what it claims is that item's
  // failure. What the client does next is its own (report the error, or read the object again);
  // what it must not do is take the region's octets as the object.
  AddClient(r, "cli/9.16/1", "GetObjects results that do not hold what they claim are not accepted",
            {"AOBJ-OBJ-244"}, true, [](CaseContext& ctx) {
              int batched = 0;
              for (FaultKind kind : {FaultKind::kPartialWrite, FaultKind::kShortTransfer,
                                     FaultKind::kWrongChecksum}) {
                const std::string what =
                    kind == FaultKind::kPartialWrite    ? "half the octets written, all claimed"
                    : kind == FaultKind::kShortTransfer ? "one octet less than the object"
                                                        : "a wrong checksum";
                FakeScript script;
                script.capabilities = {1, 2, 3, 4, 8};  // BATCH_GET
                script.faults.push_back(KindFault(Method::kGetObjects, kind));
                auto server = Serve(ctx, script);
                std::map<std::string, std::string> objects;
                std::string dir;
                ClientRun run = GetAll(ctx, *server, "bg/", 3000, 170, "20000", &objects, &dir);
                if (OfMethod(server->Requests(), Method::kGetObjects).empty()) continue;
                ++batched;
                RequireOkFilesHoldObjects(ctx, KeyOutcomes(run.out), objects, dir, 3, what + ": ");
              }
              if (batched == 0) {
                ctx.Unsupported("the client read the objects without GetObjects (BATCH_GET)");
              }
            });
  AddClient(
      r, "cli/9.17/1",
      "PutObjects results that do not hold what was sent, and a batch that fails after "
      "storing: no key reported uploaded holds other octets",
      {"AOBJ-OBJ-252", "AOBJ-OBJ-253"}, true, [](CaseContext& ctx) {
        int batched = 0;
        for (FaultKind kind :
             {FaultKind::kWrongChecksum, FaultKind::kShortTransfer, FaultKind::kStoreThenFail}) {
          const std::string what =
              kind == FaultKind::kWrongChecksum   ? "an item stored with another octet"
              : kind == FaultKind::kShortTransfer ? "an item stored one octet short"
                                                  : "every item stored changed, then the "
                                                    "request failed";
          FakeScript script;
          script.capabilities = {1, 2, 3, 4, 9};  // BATCH_PUT
          script.faults.push_back(KindFault(Method::kPutObjects, kind));
          auto server = Serve(ctx, script);
          const std::string dir = ctx.target().work_dir + "/" + ctx.Unique("up");
          ctx.Require(mkdir(dir.c_str(), 0700) == 0, "make the directory " + dir, "made",
                      std::strerror(errno));
          std::map<std::string, std::string> files;  // key -> content
          for (int i = 0; i < 3; ++i) {
            const std::string name = absl::StrCat("f", i);
            files["bp/" + name] = Content(2000 + i, 180 + i);
            std::ofstream(dir + "/" + name, std::ios::binary) << files["bp/" + name];
          }
          ClientRun run = RunClient(ctx, *server, {"put-all", "20000", kBucket, "bp/", dir});
          ctx.Require(!run.timed_out, what + ": the client ends within the time limit", "ends",
                      RunText(run));
          if (OfMethod(server->Requests(), Method::kPutObjects).empty()) continue;
          ++batched;
          const std::map<std::string, std::string> outcome = KeyOutcomes(run.out);
          for (const auto& [key, content] : files) {
            auto it = outcome.find(key);
            if (it == outcome.end() || it->second != "ok") continue;
            std::optional<StoredObject> obj = server->Object(kBucket, key);
            ctx.Require(obj.has_value() && obj->content == content,
                        what + ": " + key + " reported uploaded: the server holds the file",
                        "equal content",
                        obj ? absl::StrCat(obj->content.size(), " octets, differ") : "no object");
          }
        }
        if (batched == 0) {
          ctx.Unsupported("the client uploaded the files without PutObjects (BATCH_PUT)");
        }
      });
  AddClient(r, "cli/8.7/5", "PUT reply with a wrong checksum: BAD_DIGEST", {"AOBJ-DAT-004"}, true,
            [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(KindFault(Method::kPutObject, FaultKind::kWrongChecksum));
              PutFails(ctx, script, ErrorCode::kBadDigest, "PUT reply with a wrong checksum");
            });

  // ---- 9: listing ------------------------------------------------------------------------
  AddClient(r, "cli/9.12/1", "continuation tokens go back unchanged, with the same listing",
            {"AOBJ-OBJ-106"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.list_page = 2;
              auto server = Serve(ctx, script);
              std::vector<std::string> keys;
              for (int i = 0; i < 5; ++i) {
                keys.push_back(absl::StrCat("pre/k", i));
                server->AddObject(kBucket, keys.back(), Content(100 + i, 90 + i));
              }
              server->AddObject(kBucket, "other/k", Content(10, 99));
              LsOk(ctx, *server, "pre/", keys, "ls of 5 keys in pages of 2");
              const auto lists = OfMethod(server->Requests(), Method::kListObjectsV2);
              ctx.Require(lists.size() >= 3, "the client followed every page", ">= 3 requests",
                          absl::StrCat(lists.size()));
              for (const auto& q : lists) {
                ctx.Require(absl::StartsWith(q.outcome, "OK"),
                            Describe(q) + ": the token came back unchanged with the same bucket, "
                                          "prefix and delimiter",
                            "OK", q.outcome);
              }
            });

  // ---- 9.9: byte ranges -------------------------------------------------------------------
  AddClient(r, "cli/9.9/1", "a ranged GET: the file holds exactly the octets asked for",
            {"AOBJ-DAT-100", "AOBJ-DAT-105"}, false, [](CaseContext& ctx) {
              auto server = Serve(ctx);
              const std::string content = Content(1 << 20, 151);
              server->AddObject(kBucket, "obj", content);
              const std::string out = OutPath(ctx);
              RequireSuccess(ctx,
                             RunClient(ctx, *server,
                                       {"get-range", kBucket, "obj", "1000", "300999", out}),
                             "get-range 1000-300999 of 1 MiB");
              auto file = ReadFile(out);
              ctx.Require(file.has_value() && *file == content.substr(1000, 300000),
                          "the file holds octets 1000..300999", "300000 equal octets",
                          file ? absl::StrCat(file->size(), " octets, differ") : "no file");
              bool ranged = false;
              for (const auto& q : OfMethod(server->Requests(), Method::kGetObject)) {
                ranged = ranged || ParseAs<pb::GetObjectRequest>(ctx, q).has_range();
              }
              ctx.Require(ranged, "the client asked for a range", "a GetObject with range",
                          "none");
            });
  AddClient(r, "cli/9.9/2",
            "a ranged GET answered with other offsets than the range asked for: INTERNAL, never "
            "success",
            {"AOBJ-DAT-105"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(
                  KindFault(Method::kGetObject, FaultKind::kShiftedContentRange));
              RangeFails(ctx, std::move(script), "content_range one octet later than asked");
            });
  AddClient(r, "cli/9.9/3",
            "a ranged GET answered with a complete_length that is not the object's size: "
            "INTERNAL, never success",
            {"AOBJ-DAT-105"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(
                  KindFault(Method::kGetObject, FaultKind::kWrongCompleteLength));
              RangeFails(ctx, std::move(script), "complete_length of size + 1");
            });

  // ---- 9.15: multipart uploads ---------------------------------------------------------------
  AddClient(r, "cli/9.15/1",
            "a multipart upload: the upload ID comes back unchanged, parts are listed ascending "
            "with the ETags answered, and the whole content's CRC32C is named",
            {"AOBJ-OBJ-202", "AOBJ-DAT-154", "AOBJ-OBJ-260", "AOBJ-OBJ-258"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              const std::string content = Content(600 << 10, 161);
              RequireSuccess(ctx,
                             RunClient(ctx, *server,
                                       {"put-multipart", kBucket, "obj", WriteFile(ctx, content),
                                        std::to_string(256 << 10)}),
                             "put-multipart of 600 KiB in parts of 256 KiB");
              auto stored = server->Object(kBucket, "obj");
              ctx.Require(stored.has_value() && stored->content == content,
                          "the server holds the file (the success is real)", "equal content",
                          stored ? "differs" : "no object");
              const auto uploads = server->Uploads();
              ctx.Require(uploads.size() == 1 && uploads[0].completed,
                          "one upload, created and completed", "1 completed",
                          absl::StrCat(uploads.size(), " upload(s)"));
              CheckUploadIds(ctx, *server);
              auto completes = OfMethod(server->Requests(), Method::kCompleteMultipartUpload);
              ctx.Require(completes.size() == 1, "one CompleteMultipartUpload", "1",
                          absl::StrCat(completes.size()));
              auto c = ParseAs<pb::CompleteMultipartUploadRequest>(ctx, completes[0]);
              ctx.Require(c.parts_size() == 3, "three parts listed", "3",
                          absl::StrCat(c.parts_size()));
              if (c.checksum().empty()) {
                ctx.Note("no full-object checksum sent (AOBJ-OBJ-260 is a SHOULD)");
              } else {
                ctx.Require(c.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                                c.checksum() == Crc32cOf(content),
                            "the full-object checksum is the content's CRC32C (AOBJ-OBJ-258)",
                            Hex(Crc32cOf(content)), Hex(c.checksum()));
              }
              for (int i = 0; i < c.parts_size(); ++i) {
                const uint32_t n = c.parts(i).part_number();
                auto part = uploads[0].parts.find(n);
                std::string etag = c.parts(i).etag();
                if (etag.empty() || etag.front() != '"') etag = "\"" + etag + "\"";
                ctx.Require(n == static_cast<uint32_t>(i + 1) && part != uploads[0].parts.end() &&
                                part->second.etag == etag,
                            absl::StrCat("entry ", i, " is part ", i + 1, " with its ETag"),
                            absl::StrCat("part ", i + 1), absl::StrCat("part ", n, " ", etag));
              }
            });
  AddClient(r, "cli/9.15/2",
            "an UploadPart reply with a wrong checksum: BAD_DIGEST, the part is never listed "
            "unverified",
            {"AOBJ-DAT-154", "AOBJ-DAT-004"}, true, [](CaseContext& ctx) {
              PartFails(ctx, FaultKind::kWrongChecksum, ErrorCode::kBadDigest);
            });
  AddClient(r, "cli/9.15/3",
            "an UploadPart reply one octet short: INCOMPLETE_TRANSFER, the part is never listed "
            "unverified",
            {"AOBJ-DAT-154", "AOBJ-DAT-004"}, true, [](CaseContext& ctx) {
              PartFails(ctx, FaultKind::kShortTransfer, ErrorCode::kIncompleteTransfer);
            });
  AddClient(r, "cli/9.15/4", "an upload the client abandons is aborted", {"AOBJ-OBJ-229"}, true,
            [](CaseContext& ctx) {
              auto server = PartFails(ctx, FaultKind::kWrongChecksum, ErrorCode::kBadDigest);
              const auto uploads = server->Uploads();
              ctx.Require(uploads.size() == 1, "one upload created", "1",
                          absl::StrCat(uploads.size()));
              if (uploads[0].completed) {
                ctx.Note("the client uploaded the part again and completed the upload");
                return;
              }
              ctx.Require(uploads[0].aborted, "the abandoned upload was aborted",
                          "AbortMultipartUpload", "left in progress");
            });

  // ---- 10: flow control ------------------------------------------------------------------
  AddClient(r, "cli/10/1", "at most max_in_flight (1) data requests outstanding",
            {"AOBJ-FLO-001"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.limits.set_max_in_flight(1);
              Fault slow = KindFault(Method::kCount, FaultKind::kDelay);
              slow.nth = 0;
              slow.delay = absl::Milliseconds(100);
              script.faults.push_back(slow);
              auto server = Serve(ctx, script);
              server->AddObject(kBucket, "obj", Content(300000, 101));
              PutOk(ctx, *server, "new", Content(300000, 102), "put");
              GetOk(ctx, *server, "obj", Content(300000, 101), "get");
              // Several objects with one client, which may pipeline them.
              GetAllOfMany(ctx, *server, 4, 104);
              ctx.Require(server->max_data_in_flight() <= 1, "data requests in progress at once",
                          "<= 1", absl::StrCat(server->max_data_in_flight()));
            });
  AddClient(r, "cli/10/2", "TOO_MANY_TRANSFERS: a retry, if any, waits and is a new request",
            {"AOBJ-FLO-003", "AOBJ-ERR-007"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kPutObject, 13,
                                                 grpc::StatusCode::RESOURCE_EXHAUSTED, true));
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 103))});
              auto puts = OfMethod(server->Requests(), Method::kPutObject);
              ctx.Require(!puts.empty(), "the client sent the PutObject", ">= 1", "none");
              if (puts.size() == 1) {
                RequireFailure(ctx, run, "PUT refused with TOO_MANY_TRANSFERS, not retried",
                               ErrorCode::kTooManyTransfers);
                ctx.Note("the client did not retry (allowed: AOBJ-ERR-007 is a MAY)");
                return;
              }
              for (size_t i = 1; i < puts.size(); ++i) {
                ctx.Require(puts[i].auth.nonce_hex != puts[i - 1].auth.nonce_hex,
                            Describe(puts[i]) + ": the retry has a new nonce", "new nonce",
                            "same nonce");
                const absl::Duration gap = puts[i].received - puts[i - 1].received;
                ctx.Require(gap >= absl::Milliseconds(5), Describe(puts[i]) + ": waited first",
                            ">= 5 ms after the refusal", absl::FormatDuration(gap));
              }
            });

  AddClient(
      r, "cli/10/3",
      "SLOW_DOWN with retry_after_ms: a retry, if any, comes no sooner than the hint",
      {"AOBJ-FLO-007"}, true, [](CaseContext& ctx) {
        FakeScript script;
        Fault slow = ErrorFault(Method::kPutObject, 12, grpc::StatusCode::RESOURCE_EXHAUSTED, true);
        slow.retry_after_ms = 700;
        script.faults.push_back(slow);
        auto server = Serve(ctx, script);
        ClientRun run =
            RunClient(ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(7000, 104))});
        auto puts = OfMethod(server->Requests(), Method::kPutObject);
        ctx.Require(!puts.empty(), "the client sent the PutObject", ">= 1", "none");
        if (puts.size() == 1) {
          RequireFailure(ctx, run, "PUT refused with SLOW_DOWN, not retried", ErrorCode::kSlowDown);
          ctx.Note("the client did not retry (allowed: AOBJ-ERR-007 is a MAY)");
          return;
        }
        const absl::Duration gap = puts[1].received - puts[0].received;
        ctx.Require(gap >= absl::Milliseconds(700),
                    Describe(puts[1]) + ": sent no sooner than retry_after_ms",
                    ">= 700 ms after the refusal", absl::FormatDuration(gap));
        RequireSuccess(ctx, run, "PUT retried after SLOW_DOWN");
      });

  AddClient(r, "cli/10/4",
            "a reply granting 1 credit: no data request is sent while another is outstanding",
            {"AOBJ-FLO-010"}, false, [](CaseContext& ctx) {
              FakeScript script;
              script.limits.set_max_in_flight(4);
              script.grant_credits = 1;
              // The first GET is answered after 200 ms, granting 1, the others after 600 ms
              // each: a client that pipelines has sent its first ones before the grant and
              // still has some outstanding when it arrives. When they end together, one that
              // ignores the grant sends several at once, each held 600 ms; one that follows it
              // sends one at a time.
              // (The first fault that matches a request is applied: the first GET takes the
              // first, every later GET the second.)
              for (int nth : {1, 0}) {
                Fault slow = KindFault(Method::kGetObject, FaultKind::kDelay);
                slow.nth = nth;
                slow.delay = absl::Milliseconds(nth == 1 ? 200 : 600);
                script.faults.push_back(slow);
              }
              auto server = Serve(ctx, script);
              GetAllOfMany(ctx, *server, 8, 120);
              std::string first;
              const int over = server->data_requests_over_grant(&first);
              ctx.Require(over == 0,
                          "data requests sent while another sent after the grant was "
                          "outstanding (from 250 ms after the first reply granting 1)",
                          "0", absl::StrCat(over, ": ", first));
              if (server->max_data_in_flight() <= 1) {
                ctx.Note(
                    "the client never had two data requests outstanding; the grant was not "
                    "needed to hold it back");
              }
            });

  // ---- 11: errors ------------------------------------------------------------------------
  AddClient(r, "cli/11.1/1", "error code 0 is treated as an unknown code: INTERNAL, not retried",
            {"AOBJ-ERR-009", "AOBJ-EXT-004"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kPutObject, 0,
                                                 grpc::StatusCode::UNAVAILABLE, true, ""));
              auto server = Serve(ctx, script);
              const std::string in = WriteFile(ctx, Content(256 << 10, 111));
              ClientRun run = RunClient(ctx, *server, {"put", kBucket, "obj", in});
              RequireFailure(ctx, run, "PutObject failed with code 0", ErrorCode::kInternal);
              RequireNotRetried(ctx, *server, Method::kPutObject,
                                "code 0 is unknown, hence not retryable");
            });
  AddClient(r, "cli/11.3/1", "the trailer decides, not the gRPC status",
            {"AOBJ-ERR-003"}, true, [](CaseContext& ctx) {
              FakeScript script;
              // gRPC says RESOURCE_EXHAUSTED (like SLOW_DOWN); the trailer says NO_SUCH_KEY.
              script.faults.push_back(ErrorFault(Method::kCount, 21,
                                                 grpc::StatusCode::RESOURCE_EXHAUSTED, false));
              auto server = Serve(ctx, script);
              server->AddObject(kBucket, "obj", Content(70000, 112));
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", OutPath(ctx)});
              RequireFailure(ctx, run, "NO_SUCH_KEY under gRPC RESOURCE_EXHAUSTED",
                             ErrorCode::kNoSuchKey);
            });
  AddClient(r, "cli/11.3/2", "a PUT failing without aobj-error-bin is never success",
            {"AOBJ-ERR-006"}, true, [](CaseContext& ctx) {
              FakeScript script;
              Fault f = KindFault(Method::kPutObject, FaultKind::kErrorNoTrailer);
              f.grpc_code = grpc::StatusCode::INTERNAL;
              script.faults.push_back(f);
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(256 << 10, 113))});
              ctx.Require(!run.timed_out && run.exit_code != 0,
                          "the client does not report success", "non-zero exit", RunText(run));
            });
  AddClient(r, "cli/11.3/3", "a GET failing without aobj-error-bin is never success",
            {"AOBJ-ERR-006"}, true, [](CaseContext& ctx) {
              FakeScript script;
              Fault f = KindFault(Method::kGetObject, FaultKind::kErrorNoTrailer);
              f.grpc_code = grpc::StatusCode::UNKNOWN;
              script.faults.push_back(f);
              auto server = Serve(ctx, script);
              const std::string content = Content(256 << 10, 114);
              server->AddObject(kBucket, "obj", content);
              const std::string out = OutPath(ctx);
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", out});
              ctx.Require(!run.timed_out && run.exit_code != 0,
                          "the client does not report success", "non-zero exit", RunText(run));
            });
  AddClient(r, "cli/11.3/5",
            "a PUT whose connection failed without a reply (outcome unknown) is not repeated",
            {"AOBJ-ERR-011", "AOBJ-ERR-006"}, true, [](CaseContext& ctx) {
              FakeScript script;
              Fault f = KindFault(Method::kPutObject, FaultKind::kErrorNoTrailer);
              f.grpc_code = grpc::StatusCode::UNAVAILABLE;
              script.faults.push_back(f);
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 117))});
              ctx.Require(!run.timed_out && run.exit_code != 0,
                          "the client does not report success", "non-zero exit", RunText(run));
              RequireNotRetried(ctx, *server, Method::kPutObject,
                                "its outcome is unknown, and a PUT changes state");
            });
  AddClient(r, "cli/11.3/4", "a request failing with a code that is not retryable is not repeated",
            {"AOBJ-ERR-008"}, true, [](CaseContext& ctx) {
              FakeScript script;
              script.faults.push_back(ErrorFault(Method::kPutObject, 26,
                                                 grpc::StatusCode::INVALID_ARGUMENT, false));
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 115))});
              RequireFailure(ctx, run, "PUT refused with ENTITY_TOO_LARGE",
                             ErrorCode::kEntityTooLarge);
              RequireNotRetried(ctx, *server, Method::kPutObject, "ENTITY_TOO_LARGE");
            });

  AddClient(r, "cli/11.3/6",
            "a known code that is not retryable is not repeated although its `retryable` field "
            "says otherwise",
            {"AOBJ-ERR-012", "AOBJ-ERR-008"}, true, [](CaseContext& ctx) {
              FakeScript script;
              // ENTITY_TOO_LARGE, under UNAVAILABLE and marked retryable: the registry says no.
              script.faults.push_back(
                  ErrorFault(Method::kPutObject, 26, grpc::StatusCode::UNAVAILABLE, true));
              auto server = Serve(ctx, script);
              ClientRun run = RunClient(
                  ctx, *server, {"put", kBucket, "obj", WriteFile(ctx, Content(70000, 118))});
              RequireFailure(ctx, run, "PUT refused ENTITY_TOO_LARGE marked retryable",
                             ErrorCode::kEntityTooLarge);
              RequireNotRetried(ctx, *server, Method::kPutObject,
                                "ENTITY_TOO_LARGE is final whatever the field says");
            });

  AddClient(r, "cli/14.6/1",
            "a call the server's transport shed under load (RESOURCE_EXHAUSTED, no trailer) is "
            "SLOW_DOWN, not a final error",
            {"AOBJ-SEC-015"}, true, [](CaseContext& ctx) {
              FakeScript script;
              Fault f = KindFault(Method::kGetObject, FaultKind::kErrorNoTrailer);
              f.nth = 0;  // every GET: a client that retries still ends with the code
              f.grpc_code = grpc::StatusCode::RESOURCE_EXHAUSTED;
              script.faults.push_back(f);
              auto server = Serve(ctx, script);
              server->AddObject(kBucket, "obj", Content(70000, 116));
              ClientRun run = RunClient(ctx, *server, {"get", kBucket, "obj", OutPath(ctx)});
              RequireFailure(ctx, run, "GET shed by the transport", ErrorCode::kSlowDown);
            });

  // ---- 13: transport binding -------------------------------------------------------------
  AddClient(r, "cli/13.1/1", "PUT by RMA: the server reads the client's whole window",
            {"AOBJ-TRN-001", "AOBJ-TRN-005", "AOBJ-TRN-007", "AOBJ-MEM-017"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              const std::string content = Content(1 << 20, 131);
              PutOk(ctx, *server, "obj", content, "put of 1 MiB");
              auto puts = OfMethod(server->Requests(), Method::kPutObject);
              ctx.Require(puts.size() == 1, "one PutObject", "1", absl::StrCat(puts.size()));
              ctx.Require(puts[0].window_bytes >= content.size(),
                          "the body travels by RMA (descriptors cover it)",
                          absl::StrCat(">= ", content.size(), " octets of windows"),
                          absl::StrCat(puts[0].window_bytes));
              ctx.Require(puts[0].rma_whole_windows_ok,
                          "the server's RMA read of every window, whole, succeeded",
                          "read whole", puts[0].rma_error.empty() ? "partial" : puts[0].rma_error);
              auto stored = server->Object(kBucket, "obj");
              ctx.Require(stored.has_value() && stored->content == content,
                          "the octets read are the file's", "equal", stored ? "differ" : "none");
            });
  AddClient(r, "cli/13.1/2", "GET by RMA: the server writes into the client's window",
            {"AOBJ-TRN-001", "AOBJ-TRN-005", "AOBJ-TRN-007", "AOBJ-MEM-017"}, false,
            [](CaseContext& ctx) {
              auto server = Serve(ctx);
              const std::string content = Content(1 << 20, 132);
              server->AddObject(kBucket, "obj", content);
              const std::string out = OutPath(ctx);
              RequireSuccess(ctx, RunClient(ctx, *server, {"get", kBucket, "obj", out}),
                             "get of 1 MiB");
              auto gets = OfMethod(server->Requests(), Method::kGetObject);
              ctx.Require(gets.size() == 1, "one GetObject", "1", absl::StrCat(gets.size()));
              ctx.Require(gets[0].window_bytes >= content.size() && gets[0].rma_error.empty(),
                          "the server's RMA write into the windows succeeded", "written",
                          gets[0].rma_error.empty() ? absl::StrCat(gets[0].window_bytes,
                                                                   " octets of windows")
                                                    : gets[0].rma_error);
              if (gets[0].rma_whole_windows_ok) {
                ctx.Note("the windows were exactly the object's size: the write covered them whole");
              }
              auto file = ReadFile(out);
              ctx.Require(file.has_value() && *file == content, "the file holds the object",
                          "equal content", file ? "differs" : "no file");
            });
}

}  // namespace aobj::conformance
