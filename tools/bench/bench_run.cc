#include "bench/bench_run.h"

#include <curl/curl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "bench/aobj_runner.h"
#include "bench/http_peers.h"
#include "bench/load.h"
#include "bench/proc_util.h"
#include "bench/raw_ucx.h"
#include "bench/report.h"
#include "control/raw_call.h"
#include "session/credentials.h"
#include "tool_util.h"

namespace aobj::bench {
namespace {

int Fail(const std::string& msg) {
  std::cerr << "aobj-bench: " << msg << "\n";
  return 1;
}

bool Wants(const Flags& f, const char* peer) {
  return std::find(f.compare.begin(), f.compare.end(), peer) != f.compare.end();
}

int64_t DefaultWarmup(uint64_t size) {
  if (size <= (64u << 10)) return 50;
  if (size <= (1u << 20)) return 10;
  if (size <= (64u << 20)) return 2;
  return 1;
}

std::string Hostname() {
  char h[256] = {};
  gethostname(h, sizeof(h) - 1);
  return h;
}

std::vector<std::pair<std::string, std::string>> MachineInfo(const Flags& f) {
  std::vector<std::pair<std::string, std::string>> m;
  std::string model;
  for (absl::string_view l : absl::StrSplit(ReadSmallFile("/proc/cpuinfo"), '\n')) {
    if (absl::StartsWith(l, "model name")) {
      model = std::string(absl::StripAsciiWhitespace(l.substr(l.find(':') + 1)));
      break;
    }
  }
  utsname u{};
  uname(&u);
  m.emplace_back("date", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()));
  m.emplace_back("host", Hostname());
  m.emplace_back("cpu", model);
  m.emplace_back("cores", absl::StrCat(sysconf(_SC_NPROCESSORS_ONLN)));
  for (absl::string_view l : absl::StrSplit(ReadSmallFile("/proc/meminfo"), '\n')) {
    if (absl::StartsWith(l, "MemTotal:")) {
      m.emplace_back("memory", std::string(absl::StripAsciiWhitespace(l.substr(9))));
    }
  }
  m.emplace_back("kernel", absl::StrCat(u.sysname, " ", u.release));
  m.emplace_back("loadavg_at_start",
                 std::string(absl::StripAsciiWhitespace(ReadSmallFile("/proc/loadavg"))));
  m.emplace_back("ucx", ucp_get_version_string());
  m.emplace_back("libcurl", curl_version());
  const char* nd = std::getenv("UCX_NET_DEVICES");
  m.emplace_back("UCX_NET_DEVICES", nd ? nd : "");
  const char* tls = std::getenv("UCX_TLS");
  m.emplace_back("UCX_TLS", tls ? tls : "");
  m.emplace_back("checksum", f.checksum);
  m.emplace_back("etags", absl::StrJoin(f.etags, ","));
  return m;
}

// Snapshot of the CPU time of a process (pid > 0) or nothing.
double Cpu(pid_t pid) { return pid > 0 ? ProcCpuSeconds(pid) : -1; }

class Bench {
 public:
  explicit Bench(const Flags& f) : f_(f) {}
  int Run(const std::string& command);

 private:
  struct Store {
    std::string name;  // "memory", "fs" or "remote"
    std::unique_ptr<AobjServer> server;
    std::string endpoint;
    pid_t pid = -1;
    std::unique_ptr<Client> client;  // coordinator: prepares and deletes objects, idles
    std::unique_ptr<Buffer> buffer;
  };
  struct Variant {
    Store* store;
    std::string transport;
    std::unique_ptr<AobjWorkers> workers;
  };

  absl::Status StartStores();
  absl::Status PutGetObject(Store& s, uint64_t size);
  void DeleteObjects(Store& s, uint64_t size, int max_processes, int threads);
  absl::Status StartVariants(std::vector<Variant>* out, int threads, uint64_t max_size, bool small,
                             bool allow_inline, bool fast_path = true);
  LoadSpec Spec(uint64_t size, int threads, bool small) const;
  void RunAobjCell(Variant& v, const std::string& section, Op op, uint64_t size, bool small,
                   const std::string& suffix);
  void RunUcxCell(RawUcx& u, const std::string& name, const std::string& transport,
                  const std::string& section, Op op, uint64_t size, bool small,
                  RawUcx::RkeyMode mode = RawUcx::RkeyMode::kOnce);
  void RunCurlCellFor(const std::string& system, const std::string& section, Op op, uint64_t size,
                      int threads, bool small);
  void RunSweep();
  void RunSmall();
  void RunBatch();
  void RunGrpcFloorCell(int inflight);
  // Fills `c` from a load's result (or its error) and the CPU the process `pid` used since
  // `server0` (< 0: unknown), and records it. Call right after the load.
  void RecordLoad(Cell c, absl::StatusOr<LoadResult>& r, pid_t pid, double server0);
  void Log(const std::string& line) {
    std::fprintf(stderr, "[aobj-bench %6.1fs] %s\n", static_cast<double>(NowNs() - t0_) / 1e9,
                 line.c_str());
  }
  void Record(Cell c) {
    if (!c.error.empty()) {
      Log(absl::StrCat(c.system, " ", OpName(c.op), " ", SizeLabel(c.size), ": FAILED ", c.error));
    } else {
      Log(absl::StrFormat("%-22s %s %5s x%-2d %8.3f GB/s %9.0f ops/s p50 %9.1f us", c.system,
                          OpName(c.op), SizeLabel(c.size), c.in_flight(), c.gbps, c.ops_per_s,
                          c.latency_us.p50));
    }
    report_.cells.push_back(std::move(c));
  }

  Flags f_;
  int64_t t0_ = NowNs();
  std::string dir_;
  std::string credentials_file_;
  uint64_t max_size_ = 0;
  Report report_;
  std::vector<std::unique_ptr<Store>> stores_;
  std::vector<Variant> sweep_variants_;
  std::vector<std::pair<std::string, std::unique_ptr<RawUcx>>> ucx_;  // (transport, runner)
  std::unique_ptr<NginxServer> nginx_;
  std::unique_ptr<MotoServer> moto_;
  std::string s3_label_ = "moto";  // the rows' name of moto_ (--s3-name with --s3-endpoint)
  std::string wrk_;
  BufferPool pool_;  // curl buffers and raw-UCX local buffers (never used at once)
};

absl::Status Bench::StartStores() {
  if (!f_.endpoint.empty()) {
    auto s = std::make_unique<Store>();
    s->name = "remote";
    s->endpoint = f_.endpoint;
    s->pid = f_.server_pid;
    stores_.push_back(std::move(s));
  } else {
    for (const std::string& name : f_.stores) {
      AobjServer::Options o;
      o.binary = f_.server_binary;
      o.extra_args = f_.server_args;
      o.store = name;
      o.dir = dir_;
      o.credentials_file = credentials_file_;
      o.bucket = f_.bucket;
      auto server = AobjServer::Start(o);
      if (!server.ok()) return server.status();
      auto s = std::make_unique<Store>();
      s->name = name;
      s->endpoint = (*server)->endpoint();
      s->pid = (*server)->pid();
      s->server = std::move(*server);
      Log(absl::StrCat("aobj-server --store ", name, " pid ", s->pid, " at ", s->endpoint));
      stores_.push_back(std::move(s));
    }
  }
  auto creds = LoadCredentialsFile(credentials_file_, false);
  if (!creds.ok() || creds->empty()) return absl::InvalidArgumentError("no credentials");
  for (auto& s : stores_) {
    ClientOptions o;
    o.endpoint = s->endpoint.substr(0, s->endpoint.find(','));  // the first gateway
    o.access_key_id = creds->begin()->first;
    o.secret = creds->begin()->second;
    o.client_name = "aobj-bench-coordinator/0.1";
    auto c = Client::Connect(o);
    if (!c.ok()) return c.status();
    s->client = std::move(*c);
    absl::Status b = s->client->CreateBucket(f_.bucket);
    if (!b.ok() && ErrorCodeOf(b) != ErrorCode::kBucketAlreadyExists) return b;
  }
  return absl::OkStatus();
}

absl::Status Bench::PutGetObject(Store& s, uint64_t size) {
  if (s.buffer == nullptr || s.buffer->size() < size) {
    s.buffer.reset();
    auto b = s.client->AllocateBuffer(max_size_);
    if (!b.ok()) return b.status();
    s.buffer = std::move(*b);
    for (size_t off = 0; off < s.buffer->size(); off += 4096) {
      s.buffer->data()[off] = static_cast<uint8_t>(off >> 12);
    }
  }
  auto r = s.client->Put(f_.bucket, GetKey(size), *s.buffer, size);
  return r.ok() ? absl::OkStatus() : r.status();
}

void Bench::DeleteObjects(Store& s, uint64_t size, int max_processes, int threads) {
  s.client->Delete(f_.bucket, GetKey(size)).IgnoreError();
  for (int p = 0; p < max_processes; ++p) {
    for (int t = 0; t < threads; ++t) s.client->Delete(f_.bucket, PutKey(size, p, t)).IgnoreError();
  }
}

absl::Status Bench::StartVariants(std::vector<Variant>* out, int threads, uint64_t max_size,
                                  bool small, bool allow_inline, bool fast_path) {
  const std::vector<std::string> buffers = small ? std::vector<std::string>{"library"} : f_.buffers;
  const std::vector<int> processes = small ? std::vector<int>{1} : f_.processes;
  const std::vector<std::string> transports =
      small ? std::vector<std::string>{"default"} : f_.transports;
  for (auto& s : stores_) {
    for (const std::string& b : buffers) {
      for (int p : processes) {
        for (const std::string& t : transports) {
          for (const std::string& e : f_.etags) {
            AobjVariant v;
            v.name = absl::StrCat("aobj-", s->name, b == "library" ? "" : "-" + b,
                                  p > 1 ? absl::StrCat("-", p, "p") : "",
                                  t == "default" ? "" : "-" + t, e == "opaque" ? "-opaque" : "",
                                  allow_inline ? "" : "-rma", fast_path ? "" : "-grpc");
            v.opaque_etags = e == "opaque";
            v.device_chunk = f_.device_chunk;
            v.device_depth = f_.device_depth;
            v.endpoint = s->endpoint;
            v.credentials_file = credentials_file_;
            v.bucket = f_.bucket;
            v.buffers = b;
            v.processes = p;
            v.threads = threads;
            v.transports = t == "default" ? "" : t;
            v.allow_inline = allow_inline;
            v.fast_path = fast_path;
            v.checksum = f_.checksum;
            v.max_size = max_size;
            auto w = AobjWorkers::Start(v);
            if (!w.ok()) return w.status();
            out->push_back(Variant{s.get(), t, std::move(*w)});
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

LoadSpec Bench::Spec(uint64_t size, int threads, bool small) const {
  LoadSpec s;
  s.threads = threads;
  s.count = small ? 0 : f_.count;
  s.duration_s = small ? f_.small_duration : f_.duration;
  s.min_ops = f_.min_ops >= 0 ? f_.min_ops : (size >= (256u << 20) ? 2 : 3);
  s.warmup_ops = f_.warmup >= 0 ? f_.warmup : DefaultWarmup(size);
  return s;
}

void Bench::RunAobjCell(Variant& v, const std::string& section, Op op, uint64_t size, bool small,
                        const std::string& suffix) {
  const AobjVariant& av = v.workers->variant();
  Cell c;
  c.section = section;
  c.system = av.name + suffix;
  c.transport = v.transport;
  c.op = op;
  c.size = size;
  c.threads = av.threads;
  c.processes = av.processes;
  const pid_t pid = v.store->pid;
  double server0 = -1;
  auto r = v.workers->RunCell(op, size, Spec(size, av.threads, small), [&] { server0 = Cpu(pid); });
  RecordLoad(std::move(c), r, pid, server0);
}

void Bench::RecordLoad(Cell c, absl::StatusOr<LoadResult>& r, pid_t pid, double server0) {
  const double server1 = Cpu(pid);
  if (!r.ok()) {
    c.error = tools::DescribeError(r.status());
  } else {
    c.Fill(*r, r->cpu_s, server0 >= 0 && server1 >= 0 ? server1 - server0 : -1);
  }
  Record(std::move(c));
}

void Bench::RunUcxCell(RawUcx& u, const std::string& name, const std::string& transport,
                       const std::string& section, Op op, uint64_t size, bool small,
                       RawUcx::RkeyMode mode) {
  Cell c;
  c.section = section;
  c.system = name;
  c.transport = transport;
  c.op = op;
  c.size = size;
  c.threads = small ? 1 : f_.threads;
  double target0 = -1;
  auto r = u.RunCell(
      op, size, Spec(size, c.threads, small), [&] { target0 = Cpu(u.target_pid()); }, mode);
  const double target1 = Cpu(u.target_pid());
  if (!r.ok()) {
    c.error = std::string(r.status().message());
  } else {
    // The initiator (this process) plays the server; the passive target plays the client.
    c.Fill(*r, target0 >= 0 ? target1 - target0 : -1, r->cpu_s);
  }
  Record(std::move(c));
}

void Bench::RunCurlCellFor(const std::string& system, const std::string& section, Op op,
                           uint64_t size, int threads, bool small) {
  Cell c;
  c.section = section;
  c.system = system;
  c.op = op;
  c.size = size;
  c.threads = threads;
  CurlTarget target;
  pid_t pid = -1;
  if (system == "nginx") {
    pid = nginx_->pid();
    target.url = [&, op, size](int t) {
      return op == Op::kGet ? nginx_->GetUrl(size) : nginx_->PutUrl(PutKey(size, 0, t));
    };
  } else {
    pid = moto_->pid();
    target.sigv4 = true;
    target.url = [&, op, size](int t) {
      return moto_->Url(op == Op::kGet ? GetKey(size) : PutKey(size, 0, t));
    };
  }
  double server0 = -1;
  auto r = RunCurlCell(target, op, size, Spec(size, threads, small), &pool_,
                       [&] { server0 = Cpu(pid); });
  const double server1 = Cpu(pid);
  if (!r.ok()) {
    c.error = std::string(r.status().message());
  } else {
    c.Fill(*r, r->cpu_s, server0 >= 0 ? server1 - server0 : -1);
  }
  Record(std::move(c));
}

void Bench::RunSweep() {
  int max_procs = 1;
  for (int p : f_.processes) max_procs = std::max(max_procs, p);
  for (uint64_t size : f_.sizes) {
    // Objects the GET cells read: one per store, one file for nginx, one moto object.
    const bool get = std::find(f_.ops.begin(), f_.ops.end(), Op::kGet) != f_.ops.end();
    std::set<Store*> ready;
    if (get) {
      for (auto& s : stores_) {
        absl::Status st = PutGetObject(*s, size);
        if (!st.ok())
          Log(absl::StrCat("cannot store the GET object: ", tools::DescribeError(st)));
        else
          ready.insert(s.get());
      }
      if (nginx_ != nullptr) {
        uint8_t* data = pool_.Get(0, size);
        if (absl::Status st = nginx_->MakeObject(size, data); !st.ok())
          Log(std::string(st.message()));
      }
      if (moto_ != nullptr && size <= f_.moto_max) {
        uint8_t* data = pool_.Get(0, size);
        if (absl::Status st = moto_->PutObject(GetKey(size), data, size); !st.ok()) {
          Log(absl::StrCat("moto: ", st.message()));
        }
      }
    }
    for (Op op : f_.ops) {
      for (Variant& v : sweep_variants_) {
        if (op == Op::kGet && ready.count(v.store) == 0) continue;
        RunAobjCell(v, "sweep", op, size, false, "");
      }
      for (auto& [variant, u] : ucx_) {
        // variant: "<transport>" or "<transport>/caller" (target memory registered, not
        // allocated by UCX).
        const bool caller = absl::EndsWith(variant, "/caller");
        const std::string transport = variant.substr(0, variant.find('/'));
        const std::string name = absl::StrCat(transport == "default" ? "ucx" : "ucx-" + transport,
                                              caller ? "-caller" : "");
        RunUcxCell(*u, name, transport, "sweep", op, size, false);
        if (f_.ucx_rkey_per_op && !caller) {
          RunUcxCell(*u, name + "-unpack", transport, "sweep", op, size, false,
                     RawUcx::RkeyMode::kPerOp);
          RunUcxCell(*u, name + "-unpack-populate", transport, "sweep", op, size, false,
                     RawUcx::RkeyMode::kPerOpPopulate);
        }
        if (f_.ucx_verified && !caller) {
          RunUcxCell(*u, name + "-verified", transport, "sweep", op, size, false,
                     RawUcx::RkeyMode::kVerified);
        }
      }
      if (nginx_ != nullptr && (op == Op::kGet || nginx_->put_supported())) {
        RunCurlCellFor("nginx", "sweep", op, size, f_.threads, false);
      }
      if (moto_ != nullptr && size <= f_.moto_max) {
        RunCurlCellFor(s3_label_, "sweep", op, size, f_.threads, false);
      }
    }
    for (auto& s : stores_) DeleteObjects(*s, size, max_procs, f_.threads);
    if (nginx_ != nullptr) nginx_->RemoveObject(size);
  }
}

// The floor under every aobj request: one gRPC unary round trip to the server's control port,
// naming a method the service does not have, so that gRPC answers UNIMPLEMENTED itself (no
// signature check, no request thread, no store). One channel shared by `inflight` threads, as
// one aobj Client shares its channel.
void Bench::RunGrpcFloorCell(int inflight) {
  if (stores_.empty()) return;
  constexpr uint64_t kSize = 4096;
  Cell c;
  c.section = "small";
  c.system = "grpc-floor";
  c.op = Op::kGet;
  c.size = kSize;
  c.threads = inflight;
  c.note = "gRPC unary call answered UNIMPLEMENTED by gRPC itself; no body moves";
  RawChannel channel(stores_.front()->endpoint);
  const pid_t pid = stores_.front()->pid;
  double server0 = -1;
  auto r = RunLoad(
      Spec(kSize, inflight, /*small=*/true), kSize,
      [&](int) -> absl::StatusOr<OpFn> {
        return OpFn([&channel]() -> absl::Status {
          RawReply reply = channel.Call("/aobj.v1.ObjectService/BenchFloor", "", {},
                                        absl::Seconds(10));
          if (reply.grpc_status.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
            return absl::InternalError(absl::StrCat("expected UNIMPLEMENTED, got ",
                                                    reply.grpc_status.error_message()));
          }
          return absl::OkStatus();
        });
      },
      [&] {
        server0 = Cpu(pid);
        return absl::OkStatus();
      });
  RecordLoad(std::move(c), r, pid, server0);
}

void Bench::RunSmall() {
  constexpr uint64_t kSize = 4096;
  const int inflights[] = {1, f_.small_inflight};
  bool get = std::find(f_.ops.begin(), f_.ops.end(), Op::kGet) != f_.ops.end();
  for (auto& s : stores_) {
    if (get) {
      if (absl::Status st = PutGetObject(*s, kSize); !st.ok()) {
        Log(absl::StrCat("cannot store the GET object: ", tools::DescribeError(st)));
      }
    }
  }
  if (nginx_ != nullptr) nginx_->MakeObject(kSize, pool_.Get(0, kSize)).IgnoreError();
  if (moto_ != nullptr) moto_->PutObject(GetKey(kSize), pool_.Get(0, kSize), kSize).IgnoreError();
  for (int inflight : inflights) {
    // aobj: the default (inline bodies up to the negotiated threshold, requests on the fast
    // path), forced RMA, and every request by gRPC (FAST_PATH not offered: the control
    // channel's floor).
    std::vector<Variant> variants;
    for (bool inline_ok : {true, false}) {
      absl::Status st = StartVariants(&variants, inflight, kSize, /*small=*/true, inline_ok);
      if (!st.ok()) Log(absl::StrCat("small-request workers: ", tools::DescribeError(st)));
    }
    if (absl::Status st = StartVariants(&variants, inflight, kSize, /*small=*/true,
                                        /*allow_inline=*/true, /*fast_path=*/false);
        !st.ok()) {
      Log(absl::StrCat("small-request workers: ", tools::DescribeError(st)));
    }
    RunGrpcFloorCell(inflight);
    for (Op op : f_.ops) {
      for (Variant& v : variants) RunAobjCell(v, "small", op, kSize, true, "");
      if (inflight == 1) {
        for (auto& [variant, u] : ucx_) {
          if (variant == "default") RunUcxCell(*u, "ucx", variant, "small", op, kSize, true);
        }
      }
      if (nginx_ != nullptr && (op == Op::kGet || nginx_->put_supported())) {
        RunCurlCellFor("nginx", "small", op, kSize, inflight, true);
      }
      if (nginx_ != nullptr && op == Op::kGet && !wrk_.empty()) {
        Cell c;
        c.section = "small";
        c.system = "nginx-wrk";
        c.op = op;
        c.size = kSize;
        c.threads = inflight;
        const double s0 = Cpu(nginx_->pid());
        auto w = RunWrk(wrk_, nginx_->GetUrl(kSize), inflight, std::max(1.0, f_.small_duration));
        const double s1 = Cpu(nginx_->pid());
        if (!w.ok()) {
          c.error = std::string(w.status().message());
        } else {
          c.ops_per_s = w->requests_per_s;
          c.seconds = std::max(1.0, f_.small_duration);
          c.ops = static_cast<uint64_t>(w->requests_per_s * c.seconds);
          c.bytes = c.ops * kSize;
          c.gbps = w->requests_per_s * kSize / 1e9;
          c.latency_us.p50 = w->p50_us;
          c.latency_us.p90 = w->p90_us;
          c.latency_us.p99 = w->p99_us;
          c.latency_us.p999 = -1;
          if (c.bytes > 0) c.server_cpu_s_per_gb = (s1 - s0) / (static_cast<double>(c.bytes) / 1e9);
          c.note = "wrk -t1; ops estimated from req/s";
        }
        Record(std::move(c));
      }
      if (moto_ != nullptr) RunCurlCellFor(s3_label_, "small", op, kSize, inflight, true);
    }
  }
  for (auto& s : stores_) DeleteObjects(*s, kSize, 1, f_.small_inflight);
}

// Batched reads and writes (spec 9.16, 9.17; issue 19's target: 256 x 4 KiB reads at least 10x
// the objects per second of single requests): the same 256 objects of 4 KiB read one GetObject at
// a time, then 256 to a GetObjects request; and written one PutObject at a time, then 256 to a
// PutObjects request (for the ops of --ops); one request in flight, by the coordinator's own
// client (FAST_PATH offered, as by default). Ops and ops/s count objects; the latency is one
// request's.
void Bench::RunBatch() {
  constexpr uint64_t kSize = 4096;
  constexpr int kObjects = 256;
  for (auto& store : stores_) {
    Store& s = *store;
    auto buf = s.client->AllocateBuffer(kSize * kObjects);
    if (!buf.ok()) {
      Log(absl::StrCat("batch: ", tools::DescribeError(buf.status())));
      continue;
    }
    std::vector<BatchGetItem> items;
    absl::Status put;
    for (int i = 0; i < kObjects && put.ok(); ++i) {
      const BufferSlice slice{buf->get(), i * kSize, kSize};
      std::memset((*buf)->data() + i * kSize, i, kSize);
      items.push_back({absl::StrCat("batch-", i), std::nullopt, slice});
      put = s.client->Put(f_.bucket, items.back().key, {slice}, PutOptions{}).status();
    }
    std::vector<BatchPutItem> puts;
    for (const BatchGetItem& it : items) puts.push_back({it.key, it.destination, ""});
    for (Op op : f_.ops) {
      for (bool batched : {false, true}) {
        const bool get = op == Op::kGet;
        Cell c;
        c.section = "batch";
        c.system = absl::StrCat("aobj-", s.name, batched ? "-batch256" : "-single");
        c.op = op;
        c.size = kSize;
        c.threads = 1;
        c.note = batched ? (get ? "256 objects per GetObjects request; ops are objects"
                                : "256 objects per PutObjects request; ops are objects")
                         : (get ? "one GetObject per object" : "one PutObject per object");
        int next = 0;
        double server0 = -1;
        absl::StatusOr<LoadResult> r = put.ok() ? MakeError(ErrorCode::kInternal, "not run") : put;
        auto all_ok = [](const auto& got) -> absl::Status {
          if (!got.ok()) return got.status();
          for (const auto& one : *got) {
            if (!one.ok()) return one.status();
          }
          return absl::OkStatus();
        };
        if (put.ok()) {
          r = RunLoad(
              Spec(kSize, 1, /*small=*/true), batched ? kSize * kObjects : kSize,
              [&](int) -> absl::StatusOr<OpFn> {
                return OpFn([&]() -> absl::Status {
                  if (!batched) {
                    const BatchGetItem& it = items[next++ % kObjects];
                    if (get) {
                      return s.client->Get(f_.bucket, it.key, {it.destination}, GetOptions{})
                          .status();
                    }
                    return s.client->Put(f_.bucket, it.key, {it.destination}, PutOptions{})
                        .status();
                  }
                  if (get) return all_ok(s.client->GetObjects(f_.bucket, items));
                  return all_ok(s.client->PutObjects(f_.bucket, puts));
                });
              },
              [&] {
                server0 = Cpu(s.pid);
                return absl::OkStatus();
              });
        }
        const double server1 = Cpu(s.pid);
        if (!r.ok()) {
          c.error = tools::DescribeError(r.status());
        } else {
          c.Fill(*r, r->cpu_s, server0 >= 0 && server1 >= 0 ? server1 - server0 : -1);
          if (batched) {
            c.ops *= kObjects;
            c.ops_per_s *= kObjects;
          }
        }
        Record(std::move(c));
      }
    }
    for (const BatchGetItem& it : items) s.client->Delete(f_.bucket, it.key).IgnoreError();
  }
}

int Bench::Run(const std::string& command) {
  report_.command = command;
  report_.machine = MachineInfo(f_);
  for (uint64_t s : f_.sizes) max_size_ = std::max(max_size_, s);
  pool_.Reserve(static_cast<size_t>(std::max(f_.threads, f_.small_inflight)));
  auto dir = MakeTempDir("aobj-bench-");
  if (!dir.ok()) return Fail(std::string(dir.status().message()));
  dir_ = *dir;

  // A private credentials file for the spawned servers and all clients.
  if (f_.endpoint.empty()) {
    std::random_device rd;
    credentials_file_ = dir_ + "/credentials";
    absl::Status st = WriteFile(
        credentials_file_, absl::StrCat("AKBENCH bench-", rd(), "-", rd(), "-", rd(), "\n"), 0600);
    if (!st.ok()) return Fail(std::string(st.message()));
  } else {
    credentials_file_ = f_.credentials;
  }
  int rc = 0;
  if (absl::Status st = StartStores(); !st.ok()) {
    std::cerr << "aobj-bench: " << tools::DescribeError(st) << "\n";
    RemoveTree(dir_);
    return 1;
  }

  // Peers. moto takes seconds to start: it starts while the idle window runs.
  std::optional<absl::StatusOr<std::unique_ptr<MotoServer>>> moto;
  std::thread moto_starter;
  if (Wants(f_, "moto") && !f_.s3_endpoint.empty()) {
    // A running S3 server (radosgw) in moto's place, under its own name.
    int port = 0;
    const size_t colon = f_.s3_endpoint.rfind(':');
    if (colon == std::string::npos || !absl::SimpleAtoi(f_.s3_endpoint.substr(colon + 1), &port)) {
      report_.notes.push_back("--s3-endpoint takes HOST:PORT: no S3 comparison");
    } else {
      moto = MotoServer::Attach(port, f_.bucket);
      s3_label_ = f_.s3_name;
    }
  } else if (Wants(f_, "moto")) {
    std::string bin = FindProgram(f_.moto);
    if (bin.empty() && f_.moto == "moto_server")
      bin = FindProgram("/root/.pyenv/shims/moto_server");
    if (bin.empty()) {
      report_.notes.push_back("moto_server not found: no moto comparison");
    } else {
      const std::string moto_dir = dir_ + "/moto";
      mkdir(moto_dir.c_str(), 0755);
      moto_starter =
          std::thread([&, bin, moto_dir] { moto = MotoServer::Start(bin, moto_dir, f_.bucket); });
    }
  }
  if (Wants(f_, "nginx")) {
    std::string bin = FindProgram(f_.nginx);
    if (bin.empty()) {
      report_.notes.push_back("nginx not found: no nginx comparison (apt-get install nginx-light)");
    } else {
      const std::string nginx_dir = dir_ + "/nginx";
      mkdir(nginx_dir.c_str(), 0755);
      auto n = NginxServer::Start(bin, nginx_dir);
      if (!n.ok()) {
        report_.notes.push_back(absl::StrCat("nginx failed to start: ", n.status().message()));
      } else {
        nginx_ = std::move(*n);
        report_.machine.emplace_back("nginx", nginx_->version());
        report_.notes.push_back(
            nginx_->put_supported()
                ? "nginx PUT: dav_methods PUT (body spooled to a temp file, then renamed; no fsync)"
                : "nginx built without the dav module: PUT is not comparable with nginx");
      }
    }
    wrk_ = FindProgram(f_.wrk);
  }

  // Idle: each server with one open, idle session (the coordinator's) for idle_seconds.
  if (f_.idle_seconds > 0) {
    std::vector<double> before;
    for (auto& s : stores_) before.push_back(Cpu(s->pid));
    const double self0 = SelfCpuSeconds();
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<int64_t>(f_.idle_seconds * 1000)));
    const double self1 = SelfCpuSeconds();
    for (size_t i = 0; i < stores_.size(); ++i) {
      IdleFigures idle;
      idle.system = "aobj-" + stores_[i]->name;
      idle.seconds = f_.idle_seconds;
      idle.server_cpu_s = before[i] >= 0 ? Cpu(stores_[i]->pid) - before[i] : -1;
      idle.client_cpu_s = self1 - self0;
      report_.idle.push_back(idle);
      Log(absl::StrFormat("idle %s: server %.3f CPU-s over %.1f s", idle.system, idle.server_cpu_s,
                          idle.seconds));
    }
  }
  if (moto_starter.joinable()) moto_starter.join();
  if (moto.has_value()) {
    if (moto->ok()) {
      moto_ = std::move(**moto);
      report_.notes.push_back(absl::StrCat(
          s3_label_, ": sizes above ", SizeLabel(f_.moto_max),
          " skipped; requests send x-amz-content-sha256: "
          "UNSIGNED-PAYLOAD",
          f_.s3_endpoint.empty() ? "" : absl::StrCat("; the server at ", f_.s3_endpoint)));
    } else {
      report_.notes.push_back(
          absl::StrCat(s3_label_, " failed to start: ", moto->status().message()));
    }
  }
  std::map<std::string, MemoryFigures> memory;
  for (auto& s : stores_) {
    MemoryFigures m;
    m.system = "aobj-" + s->name;
    if (s->pid > 0) {
      m.before_kib = ProcStatusKib(s->pid, "VmRSS");
      m.before_anon_kib = ProcStatusKib(s->pid, "RssAnon");
    }
    memory[s->name] = m;
  }
  // Peak memory of each server, split into its own and attached client segments.
  std::atomic<bool> sampling{true};
  std::map<pid_t, std::pair<int64_t, int64_t>> peaks;  // pid -> (anon, shmem); sampler only
  std::thread sampler([&] {
    while (sampling.load()) {
      for (auto& s : stores_) {
        if (s->pid <= 0) continue;
        auto& [anon, shmem] = peaks[s->pid];
        anon = std::max(anon, ProcStatusKib(s->pid, "RssAnon"));
        shmem = std::max(shmem, ProcStatusKib(s->pid, "RssShmem"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  // Raw UCX, one runner per transport variant.
  if (Wants(f_, "ucx")) {
    for (const std::string& t : f_.transports) {
      auto u = RawUcx::Start(t == "default" ? "" : t, f_.threads, max_size_, &pool_);
      if (!u.ok()) {
        report_.notes.push_back(absl::StrCat("raw UCX (", t, "): ", u.status().message()));
        continue;
      }
      report_.notes.push_back(absl::StrCat("raw UCX lanes (", t, "): ", (*u)->lanes()));
      ucx_.emplace_back(t, std::move(*u));
      // With caller-owned aobj buffers, also the transport's limit on caller memory.
      if (std::find(f_.buffers.begin(), f_.buffers.end(), "caller") != f_.buffers.end()) {
        auto c = RawUcx::Start(t == "default" ? "" : t, f_.threads, max_size_, &pool_,
                               /*caller_memory=*/true);
        if (!c.ok()) {
          report_.notes.push_back(absl::StrCat("raw UCX caller (", t, "): ", c.status().message()));
        } else {
          ucx_.emplace_back(t + "/caller", std::move(*c));
        }
      }
    }
  }
  if (absl::Status st =
          StartVariants(&sweep_variants_, f_.threads, max_size_, false, !f_.no_inline);
      !st.ok()) {
    std::cerr << "aobj-bench: " << tools::DescribeError(st) << "\n";
    rc = 1;
  } else {
    RunSweep();
    sweep_variants_.clear();  // workers exit; their sessions close
    if (f_.small_duration > 0) RunSmall();
    if (f_.small_duration > 0 &&
        std::find(f_.ops.begin(), f_.ops.end(), Op::kGet) != f_.ops.end()) {
      RunBatch();
    }
  }
  sampling.store(false);
  sampler.join();
  for (auto& s : stores_) {
    s->buffer.reset();
    s->client.reset();  // closes the coordinator's session
    MemoryFigures& m = memory[s->name];
    if (s->pid > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // session teardown
      m.peak_kib = ProcStatusKib(s->pid, "VmHWM");
      m.peak_anon_kib = peaks[s->pid].first;
      m.peak_shmem_kib = peaks[s->pid].second;
      m.after_kib = ProcStatusKib(s->pid, "VmRSS");
      m.after_anon_kib = ProcStatusKib(s->pid, "RssAnon");
    }
    report_.memory.push_back(m);
  }
  report_.notes.push_back(absl::StrCat("end-to-end checksum ", f_.checksum,
                                       " on every aobj transfer (computed by the client, checked "
                                       "by both sides; the library has no off switch)"));

  ucx_.clear();
  nginx_.reset();
  moto_.reset();
  stores_.clear();
  std::cout << FormatTable(report_);
  if (!f_.json.empty()) {
    if (absl::Status st = WriteFile(f_.json, FormatJson(report_)); !st.ok()) {
      std::cerr << "aobj-bench: " << st.message() << "\n";
      rc = 1;
    }
  }
  if (!f_.svg.empty()) {
    if (absl::Status st = WriteFile(f_.svg, FormatSvg(report_)); !st.ok()) {
      std::cerr << "aobj-bench: " << st.message() << "\n";
      rc = 1;
    }
  }
  RemoveTree(dir_);
  for (const Cell& c : report_.cells) {
    if (!c.error.empty()) rc = rc == 0 ? 3 : rc;
  }
  return rc;
}

}  // namespace

int RunBench(const Flags& flags, const std::string& command) {
  Bench bench(flags);
  return bench.Run(command);
}

}  // namespace aobj::bench
