#include "bench/aobj_runner.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "aobj/client.h"
#include "aobj/device.h"
#include "aobj/status.h"
#include "session/credentials.h"
#include "tool_util.h"

namespace aobj::bench {

std::string GetKey(uint64_t size) { return absl::StrCat("get-", size); }
std::string PutKey(uint64_t size, int process, int thread) {
  return absl::StrCat("put-", size, "-p", process, "-t", thread);
}

// ---- server ------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<AobjServer>> AobjServer::Start(const Options& o) {
  std::unique_ptr<AobjServer> s(new AobjServer());
  const std::string port_file = absl::StrCat(o.dir, "/aobj-", o.store, ".port");
  s->log_path_ = absl::StrCat(o.dir, "/aobj-server-", o.store, ".log");
  ChildProcess::Options c;
  c.argv = {o.binary,          "--store", o.store,       "--listen",      "127.0.0.1:0",
            "--port-file",     port_file, "--plaintext", "--credentials", o.credentials_file,
            "--create-bucket", o.bucket,  "--quiet"};
  if (o.store == "fs") {
    c.argv.push_back("--root");
    c.argv.push_back(absl::StrCat(o.dir, "/fs-root"));
  }
  for (const auto& a : o.extra_args) c.argv.push_back(a);
  c.log_path = s->log_path_;
  auto p = ChildProcess::Start(c);
  if (!p.ok()) return p.status();
  s->process_ = std::move(*p);
  const int64_t deadline = NowNs() + 20'000'000'000;
  while (NowNs() < deadline) {
    int port = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadSmallFile(port_file)), &port) && port > 0) {
      s->endpoint_ = absl::StrCat("127.0.0.1:", port);
      return s;
    }
    if (!s->process_->Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::InternalError(absl::StrCat("aobj-server (", o.store, ") did not start; see ",
                                          s->log_path_, ":\n", ReadSmallFile(s->log_path_)));
}

// ---- coordinator side of the workers -----------------------------------------------------------

absl::StatusOr<std::unique_ptr<AobjWorkers>> AobjWorkers::Start(const AobjVariant& v) {
  std::unique_ptr<AobjWorkers> w(new AobjWorkers(v));
  for (int i = 0; i < std::max(1, v.processes); ++i) {
    ChildProcess::Options c;
    // Several gateways of one store (HOST:PORT,HOST:PORT...): worker process i uses gateway
    // i % count, so that the processes spread over them (docs/deploy-cluster.md).
    const std::vector<std::string> gateways = absl::StrSplit(v.endpoint, ',');
    c.argv = {SelfExe(),        "--internal-worker",
              "--endpoint",     gateways[static_cast<size_t>(i) % gateways.size()],
              "--credentials",  v.credentials_file,
              "--bucket",       v.bucket,
              "--buffers",      v.buffers,
              "--threads",      absl::StrCat(v.threads),
              "--max-size",     absl::StrCat(v.max_size),
              "--proc-index",   absl::StrCat(i),
              "--checksum",     v.checksum,
              "--transports",   v.transports.empty() ? "default" : v.transports,
              "--inline",       v.allow_inline ? "1" : "0",
              "--fast-path",    v.fast_path ? "1" : "0",
              "--opaque-etags", v.opaque_etags ? "1" : "0",
              "--device-chunk", absl::StrCat(v.device_chunk),
              "--device-depth", absl::StrCat(v.device_depth)};
    c.pipe_stdio = true;
    auto p = ChildProcess::Start(c);
    if (!p.ok()) return p.status();
    w->workers_.push_back(std::move(*p));
  }
  for (auto& p : w->workers_) {
    std::string line;
    for (;;) {
      if (!p->ReadLine(&line, 60000)) {
        return absl::InternalError(absl::StrCat(v.name, ": worker exited before HELLO"));
      }
      if (line == "HELLO") break;
      if (absl::StartsWith(line, "ERROR")) {
        return absl::InternalError(absl::StrCat(v.name, ": worker: ", line.substr(6)));
      }
    }
  }
  return w;
}

AobjWorkers::~AobjWorkers() {
  for (auto& p : workers_) {
    p->WriteLine("QUIT");
    p->CloseStdin();
  }
  for (auto& p : workers_) p->Stop(15, 5000);
}

absl::StatusOr<LoadResult> AobjWorkers::RunCell(Op op, uint64_t size, const LoadSpec& spec,
                                                const std::function<void()>& at_start) {
  // Split the work between the processes: counts divide, durations do not.
  const int64_t procs = static_cast<int64_t>(workers_.size());
  for (size_t i = 0; i < workers_.size(); ++i) {
    LoadSpec part = spec;
    if (spec.count > 0) {
      part.count = spec.count / procs + (static_cast<int64_t>(i) < spec.count % procs ? 1 : 0);
      part.count = std::max<int64_t>(part.count, 1);
    }
    part.min_ops = std::max<int64_t>(1, (spec.min_ops + procs - 1) / procs);
    const std::string c = absl::StrCat("CELL ", OpName(op), " ", size, " ", part.count, " ",
                                       absl::StrFormat("%.3f", part.duration_s), " ", part.min_ops,
                                       " ", part.warmup_ops);
    if (!workers_[i]->WriteLine(c)) return absl::InternalError("worker pipe closed");
  }
  absl::Status error;
  auto expect = [&](ChildProcess& p, const char* what, std::string* got) -> bool {
    for (;;) {
      if (!p.ReadLine(got)) {
        error = absl::InternalError(absl::StrCat(variant_.name, ": worker died"));
        return false;
      }
      if (absl::StartsWith(*got, what)) return true;
      if (absl::StartsWith(*got, "ERROR")) {
        error = absl::InternalError(absl::StrCat(variant_.name, ": ", got->substr(6)));
        return false;
      }
      // Anything else is library chatter on stdout; ignore it.
    }
  };
  std::string line;
  std::vector<bool> ready(workers_.size(), false);
  bool all_ready = true;
  for (size_t i = 0; i < workers_.size(); ++i) {
    ready[i] = expect(*workers_[i], "READY", &line);
    all_ready = all_ready && ready[i];
  }
  if (all_ready && at_start) at_start();
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (ready[i]) workers_[i]->WriteLine(all_ready ? "GO" : "ABORT");
  }
  LoadResult total;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (!ready[i]) continue;
    std::string result_line, lat_line;
    if (!expect(*workers_[i], "RESULT", &result_line)) continue;
    if (!expect(*workers_[i], "LAT", &lat_line)) continue;
    auto r = LoadResult::Parse(result_line, lat_line);
    if (!r.ok()) {
      error = r.status();
      continue;
    }
    total.Merge(*r);
  }
  if (!error.ok()) return error;
  return total;
}

// ---- worker process ----------------------------------------------------------------------------

namespace {

void Emit(const std::string& line) {
  std::string s = line + "\n";
  fwrite(s.data(), 1, s.size(), stdout);
  fflush(stdout);
}

void EmitError(const absl::Status& st) {
  std::string msg = tools::DescribeError(st);
  absl::StrReplaceAll({{"\n", " "}}, &msg);
  Emit(absl::StrCat("ERROR ", msg));
}

bool ReadCommand(std::string* line) { return static_cast<bool>(std::getline(std::cin, *line)); }

// --buffers device: device memory from the CUDA runtime, loaded the way DeviceStager loads it
// (aobj/device.h), so that both use one copy of the runtime.
struct CudaMemory {
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr;
  const char* (*error_string)(int) = nullptr;
};
absl::StatusOr<CudaMemory> LoadCudaMemory() {
  void* rt = nullptr;
  for (const char* n :
       {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
    if (rt == nullptr) rt = dlopen(n, RTLD_NOW | RTLD_LOCAL);
  }
  if (rt == nullptr) {
    return absl::FailedPreconditionError("--buffers device: no CUDA runtime (libcudart) loads");
  }
  CudaMemory m;
  m.malloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(rt, "cudaMalloc"));
  m.free = reinterpret_cast<int (*)(void*)>(dlsym(rt, "cudaFree"));
  m.memcpy = reinterpret_cast<int (*)(void*, const void*, size_t, int)>(dlsym(rt, "cudaMemcpy"));
  m.error_string = reinterpret_cast<const char* (*)(int)>(dlsym(rt, "cudaGetErrorString"));
  if (!m.malloc || !m.free || !m.memcpy || !m.error_string) {
    return absl::FailedPreconditionError("--buffers device: libcudart lacks cudaMalloc");
  }
  return m;
}

// One load thread's memory: a registered buffer, or device memory and its stager.
struct ThreadMemory {
  std::unique_ptr<Buffer> buffer;
  void* device = nullptr;
  std::unique_ptr<DeviceStager> stager;
};

}  // namespace

int WorkerMain(int argc, char** argv) {
  tools::ParsedArgs args;
  absl::Status st = tools::ParseArgs(argc, argv, 2,
                                     {"endpoint", "credentials", "bucket", "buffers", "threads",
                                      "max-size", "proc-index", "checksum", "transports", "inline",
                                      "fast-path", "opaque-etags", "device-chunk", "device-depth"},
                                     {}, &args);
  if (!st.ok()) {
    EmitError(st);
    return 2;
  }
  auto creds = LoadCredentialsFile(args.Get("credentials"), /*require_private=*/false);
  if (!creds.ok() || creds->empty()) {
    EmitError(creds.ok() ? absl::InvalidArgumentError("empty credentials file") : creds.status());
    return 2;
  }
  ClientOptions options;
  options.endpoint = args.Get("endpoint");
  options.access_key_id = creds->begin()->first;
  options.secret = creds->begin()->second;
  options.client_name = "aobj-bench/0.1";
  options.allow_inline = args.Get("inline", "1") == "1";
  options.fast_path = args.Get("fast-path", "1") == "1";
  options.opaque_etags = args.Get("opaque-etags", "0") == "1";
  options.checksum = args.Get("checksum", "crc32c") == "crc64nvme" ? ChecksumAlgorithm::kCrc64Nvme
                                                                   : ChecksumAlgorithm::kCrc32c;
  const std::string transports = args.Get("transports", "default");
  if (transports != "default") options.data_channel.transports = transports;
  const std::string bucket = args.Get("bucket", "bench");
  const std::string buffers_kind = args.Get("buffers", "library");
  int64_t threads = 1, max_size = 0, proc = 0, device_chunk = 0, device_depth = 0;
  if (!(st = args.GetInt("threads", 1, &threads)).ok() ||
      !(st = args.GetInt("device-chunk", 16 << 20, &device_chunk)).ok() ||
      !(st = args.GetInt("device-depth", 4, &device_depth)).ok() ||
      !(st = args.GetInt("max-size", 4096, &max_size)).ok() ||
      !(st = args.GetInt("proc-index", 0, &proc)).ok()) {
    EmitError(st);
    return 2;
  }
  CudaMemory cuda;
  if (buffers_kind == "device") {
    auto m = LoadCudaMemory();
    if (!m.ok()) {
      EmitError(m.status());
      return 1;
    }
    cuda = *m;
  }
  auto client = Client::Connect(options);
  if (!client.ok()) {
    EmitError(client.status());
    return 1;
  }
  Client& c = **client;
  // One buffer per load thread, created on first use and reused by every cell.
  BufferPool pool;
  pool.Reserve(static_cast<size_t>(threads));
  std::vector<ThreadMemory> memory(static_cast<size_t>(threads));
  absl::Mutex memory_mu;
  auto memory_for = [&](int t) -> absl::StatusOr<ThreadMemory*> {
    absl::MutexLock l(&memory_mu);  // UCX registration is serialised anyway
    ThreadMemory& m = memory[static_cast<size_t>(t)];
    if (m.buffer != nullptr || m.stager != nullptr) return &m;
    // PUT bodies get a non-constant pattern.
    auto pattern = [](uint8_t* d, size_t size) {
      for (size_t off = 0; off < size; off += 4096) d[off] = static_cast<uint8_t>(off >> 12);
    };
    if (buffers_kind == "device") {
      const size_t size = static_cast<size_t>(max_size);
      if (int e = cuda.malloc(&m.device, size); e != 0) {
        m.device = nullptr;
        return absl::ResourceExhaustedError(
            absl::StrCat("cudaMalloc of ", size, " bytes failed: ", cuda.error_string(e)));
      }
      std::vector<uint8_t> host(size, 0);
      pattern(host.data(), size);
      if (int e = cuda.memcpy(m.device, host.data(), size, 1 /* host to device */); e != 0) {
        return absl::InternalError(
            absl::StrCat("cudaMemcpy to the device buffer failed: ", cuda.error_string(e)));
      }
      DeviceStagingOptions staging;
      staging.chunk_bytes = static_cast<size_t>(device_chunk);
      staging.depth = static_cast<int>(device_depth);
      auto s = DeviceStager::Create(c, staging);
      if (!s.ok()) return s.status();
      m.stager = std::move(*s);
      return &m;
    }
    absl::StatusOr<std::unique_ptr<Buffer>> made;
    if (buffers_kind == "caller") {
      uint8_t* mem = pool.Get(static_cast<size_t>(t), static_cast<size_t>(max_size));
      if (mem == nullptr) return absl::ResourceExhaustedError("cannot allocate a buffer");
      made = c.RegisterBuffer(mem, static_cast<size_t>(max_size));
    } else {
      made = c.AllocateBuffer(static_cast<size_t>(max_size));
      // The library already pre-faulted the pages.
      if (made.ok()) pattern((*made)->data(), (*made)->size());
    }
    if (!made.ok()) return made.status();
    m.buffer = std::move(*made);
    return &m;
  };

  Emit("HELLO");
  std::string line;
  while (ReadCommand(&line)) {
    if (line == "QUIT") break;
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    LoadSpec spec;
    spec.threads = static_cast<int>(threads);
    uint64_t size = 0;
    if (f.size() != 7 || f[0] != "CELL" || !absl::SimpleAtoi(f[2], &size) ||
        !absl::SimpleAtoi(f[3], &spec.count) || !absl::SimpleAtod(f[4], &spec.duration_s) ||
        !absl::SimpleAtoi(f[5], &spec.min_ops) || !absl::SimpleAtoi(f[6], &spec.warmup_ops) ||
        size > static_cast<uint64_t>(max_size)) {
      EmitError(absl::InvalidArgumentError(absl::StrCat("bad command: ", line)));
      continue;
    }
    const bool get = f[1] == "GET";
    ThreadSetup setup = [&](int t) -> absl::StatusOr<OpFn> {
      auto mem = memory_for(t);
      if (!mem.ok()) return mem.status();
      Buffer* b = (*mem)->buffer.get();
      DeviceStager* stager = (*mem)->stager.get();
      void* device = (*mem)->device;
      const size_t capacity = static_cast<size_t>(max_size);
      if (get) {
        const std::string key = GetKey(size);
        return OpFn([&c, b, stager, device, capacity, key, size, &bucket]() -> absl::Status {
          auto r = stager != nullptr ? stager->Get(bucket, key, device, capacity)
                                     : c.Get(bucket, key, *b);
          if (!r.ok()) return r.status();
          if (r->bytes_transferred != size) {
            return absl::InternalError(
                absl::StrCat("GET moved ", r->bytes_transferred, " bytes, expected ", size));
          }
          return absl::OkStatus();
        });
      }
      const std::string key = PutKey(size, static_cast<int>(proc), t);
      return OpFn([&c, b, stager, device, key, size, &bucket]() -> absl::Status {
        if (stager != nullptr) return stager->Put(bucket, key, device, size).status();
        return c.Put(bucket, key, *b, size).status();
      });
    };
    // The coordinator answers READY with GO, or ABORT when another worker failed.
    auto at_start = [&]() -> absl::Status {
      Emit("READY");
      std::string go;
      if (!ReadCommand(&go) || go != "GO") return absl::AbortedError("aborted by the coordinator");
      return absl::OkStatus();
    };
    auto result = RunLoad(spec, size, setup, at_start);
    if (!result.ok()) {
      EmitError(result.status());
      continue;
    }
    Emit(result->Serialize());
  }
  for (auto& m : memory) {
    m.stager.reset();
    m.buffer.reset();
    if (m.device != nullptr) cuda.free(m.device);
  }
  c.Close().IgnoreError();
  return 0;
}

}  // namespace aobj::bench
