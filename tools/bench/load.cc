#include "bench/load.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/proc_util.h"

namespace aobj::bench {

void LoadResult::Merge(const LoadResult& other) {
  if (ops == 0 && latency_us.empty()) {
    start_ns = other.start_ns;
    end_ns = other.end_ns;
  } else {
    start_ns = std::min(start_ns, other.start_ns);
    end_ns = std::max(end_ns, other.end_ns);
  }
  latency_us.insert(latency_us.end(), other.latency_us.begin(), other.latency_us.end());
  ops += other.ops;
  bytes += other.bytes;
  cpu_s += other.cpu_s;
}

std::string LoadResult::Serialize() const {
  std::string out = absl::StrCat("RESULT ", ops, " ", bytes, " ", start_ns, " ", end_ns, " ",
                                 absl::StrFormat("%.6f", cpu_s), "\nLAT");
  for (double v : latency_us) absl::StrAppend(&out, " ", absl::StrFormat("%.3f", v));
  return out;
}

absl::StatusOr<LoadResult> LoadResult::Parse(const std::string& result_line,
                                             const std::string& lat_line) {
  std::vector<std::string> f = absl::StrSplit(result_line, ' ', absl::SkipEmpty());
  LoadResult r;
  if (f.size() != 6 || f[0] != "RESULT" || !absl::SimpleAtoi(f[1], &r.ops) ||
      !absl::SimpleAtoi(f[2], &r.bytes) || !absl::SimpleAtoi(f[3], &r.start_ns) ||
      !absl::SimpleAtoi(f[4], &r.end_ns) || !absl::SimpleAtod(f[5], &r.cpu_s)) {
    return absl::InternalError(absl::StrCat("malformed worker result: ", result_line));
  }
  std::vector<std::string> l = absl::StrSplit(lat_line, ' ', absl::SkipEmpty());
  if (l.empty() || l[0] != "LAT") return absl::InternalError("malformed worker latencies");
  r.latency_us.reserve(l.size() - 1);
  for (size_t i = 1; i < l.size(); ++i) {
    double v = 0;
    if (!absl::SimpleAtod(l[i], &v)) return absl::InternalError("malformed worker latency");
    r.latency_us.push_back(v);
  }
  return r;
}

absl::StatusOr<LoadResult> RunLoad(const LoadSpec& spec, uint64_t bytes_per_op,
                                   const ThreadSetup& setup,
                                   const std::function<absl::Status()>& at_start) {
  const int n = std::max(1, spec.threads);
  absl::Mutex mu;
  absl::CondVar cv;
  int ready = 0;    // guarded by mu
  bool go = false;  // guarded by mu
  std::atomic<bool> abort{false};
  absl::Status first_error;  // guarded by mu
  std::atomic<int64_t> claimed{0};
  std::atomic<int64_t> done{0};
  int64_t deadline_ns = 0;  // written before `go`, read after
  std::vector<std::vector<double>> lat(static_cast<size_t>(n));
  std::vector<int64_t> end_ns(static_cast<size_t>(n), 0);

  auto fail = [&](absl::Status s) {
    absl::MutexLock l(&mu);
    if (first_error.ok()) first_error = std::move(s);
    abort.store(true);
  };
  auto body = [&](int index) {
    absl::StatusOr<OpFn> op = setup(index);
    absl::Status st = op.status();
    for (int64_t i = 0; st.ok() && i < spec.warmup_ops; ++i) st = (*op)();
    if (!st.ok()) fail(st);
    {
      absl::MutexLock l(&mu);
      ++ready;
      cv.SignalAll();
      while (!go) cv.Wait(&mu);
    }
    if (abort.load()) return;
    std::vector<double>& mine = lat[static_cast<size_t>(index)];
    mine.reserve(1024);
    for (;;) {
      if (spec.count > 0) {
        if (claimed.fetch_add(1) >= spec.count) break;
      } else if (NowNs() >= deadline_ns && done.load() >= spec.min_ops) {
        break;
      }
      const int64_t t0 = NowNs();
      st = (*op)();
      const int64_t t1 = NowNs();
      if (!st.ok()) {
        fail(st);
        break;
      }
      mine.push_back(static_cast<double>(t1 - t0) / 1e3);
      done.fetch_add(1);
      if (abort.load()) break;
    }
    end_ns[static_cast<size_t>(index)] = NowNs();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  {
    absl::MutexLock l(&mu);
    while (ready < n) cv.Wait(&mu);
  }
  LoadResult result;
  if (!abort.load() && at_start) {
    absl::Status s = at_start();
    if (!s.ok()) fail(s);
  }
  {
    absl::MutexLock l(&mu);
    result.cpu_s = SelfCpuSeconds();
    result.start_ns = NowNs();
    deadline_ns = result.start_ns + static_cast<int64_t>(spec.duration_s * 1e9);
    go = true;
    cv.SignalAll();
  }
  for (auto& t : threads) t.join();
  result.cpu_s = SelfCpuSeconds() - result.cpu_s;
  result.end_ns = result.start_ns;
  for (int64_t e : end_ns) result.end_ns = std::max(result.end_ns, e);
  {
    absl::MutexLock l(&mu);
    if (!first_error.ok()) return first_error;
  }
  for (auto& v : lat) {
    result.latency_us.insert(result.latency_us.end(), v.begin(), v.end());
  }
  result.ops = result.latency_us.size();
  result.bytes = result.ops * bytes_per_op;
  return result;
}

Percentiles ComputePercentiles(std::vector<double>& v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
  };
  p.p50 = rank(0.5);
  p.p90 = rank(0.9);
  p.p99 = rank(0.99);
  p.p999 = rank(0.999);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  p.min = v.front();
  p.max = v.back();
  return p;
}

BufferPool::~BufferPool() {
  for (Slot& s : slots_) {
    if (s.data != nullptr) munmap(s.data, s.size);
  }
}

void BufferPool::Reserve(size_t slots) {
  if (slots_.size() < slots) slots_.resize(slots);
}

uint8_t* BufferPool::Get(size_t slot, size_t size) {
  Slot& s = slots_.at(slot);
  if (s.size >= size && s.data != nullptr) return s.data;
  if (s.data != nullptr) munmap(s.data, s.size);
  const size_t page = 4096;
  const size_t bytes = (std::max<size_t>(size, 1) + page - 1) / page * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) {
    s = Slot{};
    return nullptr;
  }
  s.data = static_cast<uint8_t*>(p);
  s.size = bytes;
  // Touch every page and give the body a non-trivial pattern.
  for (size_t off = 0; off < bytes; off += page) s.data[off] = static_cast<uint8_t>(off >> 12);
  return s.data;
}

absl::StatusOr<uint64_t> ParseSize(const std::string& text) {
  std::string t = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  uint64_t mult = 1;
  for (const char* suffix : {"IB", "B"}) {
    if (absl::EndsWith(t, suffix) && t.size() > strlen(suffix)) {
      t.resize(t.size() - strlen(suffix));
      break;
    }
  }
  if (!t.empty()) {
    switch (t.back()) {
      case 'K':
        mult = 1ull << 10;
        break;
      case 'M':
        mult = 1ull << 20;
        break;
      case 'G':
        mult = 1ull << 30;
        break;
      default:
        break;
    }
    if (mult != 1) t.pop_back();
  }
  uint64_t v = 0;
  if (t.empty() || !absl::SimpleAtoi(t, &v) || v == 0) {
    return absl::InvalidArgumentError(absl::StrCat("not a size: '", text, "'"));
  }
  return v * mult;
}

std::string SizeLabel(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return absl::StrCat(b >> 30, "G");
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return absl::StrCat(b >> 20, "M");
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return absl::StrCat(b >> 10, "K");
  return absl::StrCat(b);
}

}  // namespace aobj::bench
