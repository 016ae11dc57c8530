// aobj._aobj: the Python binding of the client stack (include/aobj/client.h).
//
// The Python package (python/aobj/) wraps this module; users import `aobj`, not `aobj._aobj`.
// What it adds to the C++ API:
//  * memory from Python objects: anything with the buffer protocol (bytearray, memoryview,
//    numpy arrays, array.array, mmap) and CPU torch tensors, C-contiguous, registered with the
//    data channel so that the server's RMA lands in (or reads from) the caller's own memory;
//  * registrations that outlive one call (Client.register), so that a loop of reads into the
//    same buffers registers once, and a pool of library-allocated staging buffers for the calls
//    that return bytes;
//  * every call releases the GIL while it waits on the network; get_many runs several at once;
//  * errors as aobj.Error subclasses carrying the AOBJ code, its S3 name and whether it is
//    retryable (python/aobj/errors.py builds the classes from error_registry()).
//
// Threading: a _Client may be used from many Python threads at once (the C++ Client is
// thread-safe). Ownership: a Registration keeps its Python object (and the _Client's core)
// alive until it is released, so the memory cannot be freed under a transfer.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/credentials.h"
#include "aobj/status.h"

namespace py = pybind11;

namespace aobj::python {
namespace {

constexpr size_t kMinPooledBuffer = size_t{64} << 10;  // smallest staging buffer
constexpr size_t kFirstGetBuffer = size_t{1} << 20;    // get()'s first try before a HEAD
// get_many() without buffers, where the session negotiated BATCH_GET: keys per GetObjects request
// and the region each key gets (a larger object is read alone).
constexpr size_t kBatchKeys = 256;
constexpr uint64_t kBatchSlot = uint64_t{64} << 10;
constexpr size_t kMaxPooledBytes = size_t{256} << 20;  // staging memory kept between calls
// Staging: a body or window outside every registration may go through a pooled buffer that UCX
// allocated and registered, and be copied. Below kStageBelow that costs less than registering
// caller memory for one call. On sessions whose protection is EMULATED (shared memory and TCP
// lanes, no RDMA NIC), UCX reaches caller memory only by its emulated path, 2-5x slower than a
// memcpy from its own shared memory (docs/benchmarks.md A.7), so there Staging::kAuto stages
// up to kMaxStaged too.
constexpr size_t kStageBelow = size_t{256} << 10;
constexpr size_t kMaxStaged = size_t{64} << 20;

enum class Staging { kAuto, kSmall, kNever };

Staging StagingOf(const std::string& s) {
  if (s == "auto") return Staging::kAuto;
  if (s == "small") return Staging::kSmall;
  if (s == "never") return Staging::kNever;
  throw py::value_error("staging must be 'auto', 'small' or 'never'");
}

// Raises the aobj.Error subclass of `status` (GIL held).
[[noreturn]] void Raise(const absl::Status& status) {
  const ErrorCode code = ErrorCodeOf(status);
  py::object make = py::module_::import("aobj.errors").attr("_from_status");
  py::object exc = make(static_cast<uint32_t>(code), std::string(status.message()),
                        ControlChannelFailure(status));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

template <class T>
T Check(absl::StatusOr<T> r) {
  if (!r.ok()) Raise(r.status());
  return *std::move(r);
}
void Check(const absl::Status& s) {
  if (!s.ok()) Raise(s);
}

// ---- memory of Python objects ----------------------------------------------------------------

// A contiguous region of host memory that a Python object owns, held (and kept alive) for as
// long as this lives. Create and destroy with the GIL held.
class HostMemory {
 public:
  HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  HostMemory(HostMemory&& o) noexcept { *this = std::move(o); }
  HostMemory& operator=(HostMemory&& o) noexcept {
    Reset();
    owner_ = std::move(o.owner_);
    view_ = o.view_;
    has_view_ = std::exchange(o.has_view_, false);
    data_ = o.data_;
    size_ = o.size_;
    return *this;
  }
  ~HostMemory() { Reset(); }

  // `what` names the argument in errors ("buffer", "data").
  static HostMemory Of(py::handle obj, bool writable, const char* what) {
    HostMemory m;
    m.owner_ = py::reinterpret_borrow<py::object>(obj);
    if (PyObject_CheckBuffer(obj.ptr())) {
      const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
      if (PyObject_GetBuffer(obj.ptr(), &m.view_, flags) != 0) {
        py::error_already_set why;
        throw py::type_error(absl::StrCat(
            what, " must be ", writable ? "a writable" : "a", ", C-contiguous buffer (",
            writable ? "bytearray, memoryview of one, " : "bytes, bytearray, memoryview, ",
            "numpy array or CPU torch tensor); ",
            py::str(obj.get_type().attr("__name__")).cast<std::string>(), ": ", why.what()));
      }
      m.has_view_ = true;
      m.data_ = static_cast<uint8_t*>(m.view_.buf);
      m.size_ = static_cast<size_t>(m.view_.len);
      return m;
    }
    // torch.Tensor has no buffer protocol; its storage is reached through data_ptr().
    if (py::hasattr(obj, "data_ptr") && py::hasattr(obj, "element_size") &&
        py::hasattr(obj, "is_contiguous")) {
      const std::string device = py::str(obj.attr("device").attr("type")).cast<std::string>();
      if (device != "cpu") {
        throw py::type_error(absl::StrCat(
            what, " is a tensor on device '", device,
            "': aobj moves bytes into and out of host memory; use a CPU tensor (pinned memory "
            "is fine) and copy it to the device"));
      }
      if (!obj.attr("is_contiguous")().cast<bool>()) {
        throw py::type_error(absl::StrCat(what,
                                          " is a tensor that is not contiguous; pass "
                                          "tensor.contiguous()"));
      }
      m.data_ = reinterpret_cast<uint8_t*>(obj.attr("data_ptr")().cast<uintptr_t>());
      m.size_ = obj.attr("numel")().cast<size_t>() * obj.attr("element_size")().cast<size_t>();
      return m;
    }
    throw py::type_error(absl::StrCat(
        what,
        " must support the buffer protocol (bytes, bytearray, memoryview, numpy array) or "
        "be a CPU torch tensor; got ",
        py::str(obj.get_type().attr("__name__")).cast<std::string>()));
  }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Reset() {
    if (has_view_) PyBuffer_Release(&view_);
    has_view_ = false;
    owner_ = py::object();
  }
  py::object owner_;
  Py_buffer view_{};
  bool has_view_ = false;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// ---- the client core ---------------------------------------------------------------------------

// One explicit registration (Client.register): the Python object's memory and its Buffer.
struct RegisteredRegion {
  HostMemory memory;
  std::unique_ptr<Buffer> buffer;
};

// Threads kept for the batches of one client (get_many), so that a batch does not start threads
// of its own (15 thread starts were about a tenth of a 64-key batch of 4 KiB objects). Grows
// to the widest batch asked for, up to kMaxThreads; the threads end with the client.
class WorkerPool {
 public:
  static constexpr size_t kMaxThreads = 64;
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Runs fn(i) for i in [0, n) on up to `width` threads, the caller's one of them (GIL released
  // by the caller). Returns when every fn(i) returned. Helpers that start late find no work and
  // never touch fn's captures.
  template <class Fn>
  void ParallelFor(size_t n, size_t width, Fn fn) {
    width = std::max<size_t>(1, std::min({width, n, kMaxThreads + 1}));
    struct Batch {
      std::atomic<size_t> next{0};
      std::atomic<size_t> active{0};
      size_t n = 0;
      std::function<void(size_t)> fn;
      std::mutex mu;
      std::condition_variable done;
      void Run() {
        active.fetch_add(1);
        for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
        if (active.fetch_sub(1) == 1) {
          std::lock_guard<std::mutex> lock(mu);
          done.notify_all();
        }
      }
    };
    auto batch = std::make_shared<Batch>();
    batch->n = n;
    batch->fn = fn;
    if (width > 1) {
      std::lock_guard<std::mutex> lock(mu_);
      while (threads_.size() < width - 1) threads_.emplace_back([this] { Loop(); });
      for (size_t t = 1; t < width; ++t) queue_.push_back([batch] { batch->Run(); });
    }
    wake_.notify_all();
    batch->Run();
    std::unique_lock<std::mutex> lock(batch->mu);
    batch->done.wait(lock, [&] { return batch->active.load() == 0; });
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
};

// The C++ Client and what hangs off it. Held by shared_ptr: Registrations keep it alive, so
// every Buffer is destroyed before the Client that made it.
class Core {
 public:
  Core(std::unique_ptr<Client> client, Staging staging)
      : client_(std::move(client)),
        staging_(staging),
        emulated_(client_->session().protection != MemoryProtection::kHardware) {}
  ~Core() {
    // Buffers first (they belong to the Client).
    std::lock_guard<std::mutex> lock(mu_);
    regions_.clear();
    pool_.clear();
  }
  Client& client() { return *client_; }
  WorkerPool& workers() { return workers_; }

  // Whether n octets outside every registration go through a staging buffer (above).
  bool ShouldStage(size_t n) const {
    switch (staging_) {
      case Staging::kNever:
        return false;
      case Staging::kSmall:
        return n < kStageBelow;
      case Staging::kAuto:
        return n < kStageBelow || (emulated_ && n <= kMaxStaged);
    }
    return false;
  }

  // Explicit registrations, found by address.
  void AddRegion(const std::shared_ptr<RegisteredRegion>& region) {
    std::lock_guard<std::mutex> lock(mu_);
    regions_[reinterpret_cast<uintptr_t>(region->memory.data())] = region;
  }
  void RemoveRegion(const RegisteredRegion* region) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(region->memory.data()));
    if (it != regions_.end() && it->second.get() == region) regions_.erase(it);
  }
  // The registration that holds [data, data + size), if any.
  std::shared_ptr<RegisteredRegion> FindRegion(const uint8_t* data, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    const uintptr_t p = reinterpret_cast<uintptr_t>(data);
    auto it = regions_.upper_bound(p);
    if (it == regions_.begin()) return nullptr;
    --it;
    const RegisteredRegion& r = *it->second;
    if (p + size <= it->first + r.memory.size()) return it->second;
    return nullptr;
  }
  size_t region_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return regions_.size();
  }

  // A library-allocated buffer of at least n octets from the pool (GIL released is fine).
  absl::StatusOr<std::unique_ptr<Buffer>> TakeScratch(size_t n) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto best = pool_.end();
      for (auto it = pool_.begin(); it != pool_.end(); ++it) {
        if ((*it)->size() >= n && (best == pool_.end() || (*it)->size() < (*best)->size())) {
          best = it;
        }
      }
      if (best != pool_.end()) {
        std::unique_ptr<Buffer> b = std::move(*best);
        pool_.erase(best);
        pooled_bytes_ -= b->size();
        return b;
      }
    }
    size_t want = kMinPooledBuffer;
    while (want < n && want < (size_t{1} << 40)) want <<= 1;
    return client_->AllocateBuffer(std::max(want, n));
  }
  void GiveScratch(std::unique_ptr<Buffer> b) {
    if (!b) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (pooled_bytes_ + b->size() > kMaxPooledBytes) return;  // freed here
    pooled_bytes_ += b->size();
    pool_.push_back(std::move(b));
  }
  size_t pooled_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return pooled_bytes_;
  }
  // Keys get_many read by GetObjects (BATCH_GET, spec 9.16) rather than one GET each.
  void CountBatched(size_t keys) { batched_keys_.fetch_add(keys, std::memory_order_relaxed); }
  uint64_t batched_keys() const { return batched_keys_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<Client> client_;
  const Staging staging_;
  const bool emulated_;
  std::mutex mu_;
  std::map<uintptr_t, std::shared_ptr<RegisteredRegion>> regions_;
  std::vector<std::unique_ptr<Buffer>> pool_;
  size_t pooled_bytes_ = 0;
  std::atomic<uint64_t> batched_keys_{0};
  WorkerPool workers_;  // last: its threads end before anything else goes
};

bool HasBatchGet(Core& c) {
  const std::vector<uint32_t>& caps = c.client().session().capabilities;
  return std::find(caps.begin(), caps.end(), 8u) != caps.end();  // BATCH_GET, spec 12.3
}

bool HasBatchPut(Core& c) {
  const std::vector<uint32_t>& caps = c.client().session().capabilities;
  return std::find(caps.begin(), caps.end(), 9u) != caps.end();  // BATCH_PUT, spec 12.3
}

// A staging buffer that goes back to the pool.
class Scratch {
 public:
  Scratch(Core* core, std::unique_ptr<Buffer> b) : core_(core), buffer_(std::move(b)) {}
  Scratch(Scratch&&) = default;
  ~Scratch() {
    if (buffer_) core_->GiveScratch(std::move(buffer_));
  }
  Buffer& operator*() const { return *buffer_; }
  Buffer* operator->() const { return buffer_.get(); }
  Buffer* get() const { return buffer_.get(); }

 private:
  Core* core_;
  std::unique_ptr<Buffer> buffer_;
};

// The window of `memory` as the data channel sees it: inside an explicit registration, or
// registered now for this call only (`own` keeps that Buffer). GIL held.
absl::StatusOr<BufferSlice> WindowOf(Core& core, const HostMemory& memory,
                                     std::shared_ptr<RegisteredRegion>* region,
                                     std::unique_ptr<Buffer>* own) {
  *region = core.FindRegion(memory.data(), memory.size());
  if (*region) {
    return BufferSlice{(*region)->buffer.get(),
                       static_cast<uint64_t>(memory.data() - (*region)->memory.data()),
                       memory.size()};
  }
  // Registering zero octets is refused by UCX; a window of one octet of a one-octet dummy
  // stands in for an empty buffer and is never written (the object is empty or the GET fails).
  if (memory.size() == 0) return absl::InvalidArgumentError("empty");
  absl::StatusOr<std::unique_ptr<Buffer>> b =
      core.client().RegisterBuffer(memory.data(), memory.size());
  if (!b.ok()) return b.status();
  *own = std::move(*b);
  return BufferSlice{own->get(), 0, memory.size()};
}

// ---- Python-visible values ---------------------------------------------------------------------

py::dict InfoDict(const ObjectInfo& i) {
  py::dict d;
  d["size"] = i.size;
  d["etag"] = i.etag;
  d["last_modified_ms"] = i.last_modified_ms;
  d["content_type"] = i.content_type;
  d["crc32c"] = i.crc32c;
  d["metadata"] = i.user_metadata;
  return d;
}

py::dict TransferDict(const TransferResult& t, bool staged = false) {
  py::dict d;
  d["staged"] = staged;
  d["info"] = InfoDict(t.info);
  d["nbytes"] = t.bytes_transferred;
  d["path"] = TransferPathName(t.path);
  if (t.range) {
    d["range"] = py::make_tuple(t.range->first, t.range->last, t.range->complete_length);
  } else {
    d["range"] = py::none();
  }
  return d;
}

absl::StatusOr<ByteRange> RangeOf(const py::object& range) {
  if (range.is_none()) return absl::InvalidArgumentError("none");
  if (py::isinstance<py::str>(range)) return ByteRange::Parse(range.cast<std::string>());
  if (py::isinstance<py::tuple>(range)) {
    py::tuple t = range.cast<py::tuple>();
    if (t.size() == 2) {
      if (t[1].is_none()) return ByteRange::From(t[0].cast<uint64_t>());
      return ByteRange::FirstLast(t[0].cast<uint64_t>(), t[1].cast<uint64_t>());
    }
  }
  throw py::type_error(
      "range must be 'bytes=FIRST-LAST', 'bytes=FIRST-', 'bytes=-SUFFIX' or (first, last) with "
      "last inclusive, or (first, None)");
}

Preconditions ConditionsOf(const std::optional<std::string>& if_match,
                           const std::optional<std::string>& if_none_match) {
  Preconditions c;
  if (if_match) c.if_match = *if_match;
  if (if_none_match) c.if_none_match = *if_none_match;
  return c;
}

// ---- the _Client class -------------------------------------------------------------------------

class PyClient;

class PyRegistration {
 public:
  PyRegistration(std::shared_ptr<Core> core, std::shared_ptr<RegisteredRegion> region)
      : core_(std::move(core)), region_(std::move(region)) {}
  ~PyRegistration() { Release(); }
  void Release() {
    if (!region_) return;
    core_->RemoveRegion(region_.get());
    region_.reset();  // the Buffer goes when the last transfer using it lets go
  }
  bool active() const { return region_ != nullptr; }
  size_t size() const { return region_ ? region_->memory.size() : 0; }
  uintptr_t address() const {
    return region_ ? reinterpret_cast<uintptr_t>(region_->memory.data()) : 0;
  }

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<RegisteredRegion> region_;
};

class PyClient {
 public:
  PyClient(std::string endpoint, std::optional<std::string> profile,
           std::optional<std::string> access_key_id, std::optional<std::string> secret_access_key,
           std::optional<std::string> credentials_file, std::string checksum, double timeout,
           bool opaque_etags, bool allow_inline, bool fast_path, int busy_retries,
           int max_in_flight, std::optional<std::string> tls_ca,
           std::optional<std::string> tls_cert, std::optional<std::string> tls_key,
           std::optional<std::string> tls_server_name, std::string net_devices,
           std::string client_name, std::string staging) {
    const Staging staging_mode = StagingOf(staging);
    ClientOptions o;
    ClientEnvironment env = ClientEnvironment::FromProcess();
    if (profile) {
      env.profile = *profile;
      env.profile_source = "profile=";
    }
    if (credentials_file) {
      env.access_key_id.clear();
      env.secret.clear();
      env.credentials_file = *credentials_file;
    }
    if (access_key_id.has_value() != secret_access_key.has_value()) {
      throw py::value_error("give both access_key_id and secret_access_key, or neither");
    }
    if (access_key_id) {
      o.access_key_id = *access_key_id;
      o.secret = *secret_access_key;
    }
    std::string profile_endpoint;
    if (!access_key_id || endpoint.empty()) {
      absl::StatusOr<ClientProfile> p = ResolveClientProfile(env);
      if (!p.ok()) {
        if (access_key_id) {
          // Only the endpoint was wanted from the profile; none is fine.
        } else {
          Raise(p.status());
        }
      } else {
        py::module_ warnings = py::module_::import("warnings");
        for (const std::string& w : p->warnings) warnings.attr("warn")(w);
        if (!access_key_id) {
          o.access_key_id = p->credential.access_key_id;
          o.secret = p->credential.secret;
        }
        profile_endpoint = p->endpoint;
      }
    }
    if (endpoint.empty()) {
      const char* env_endpoint = std::getenv("AOBJ_ENDPOINT");
      if (env_endpoint != nullptr && *env_endpoint != '\0') {
        endpoint = env_endpoint;
      } else if (!profile_endpoint.empty()) {
        endpoint = profile_endpoint;
      } else {
        endpoint = "127.0.0.1:7878";
      }
    }
    if (endpoint.find("://") != std::string::npos) {
      throw py::value_error(absl::StrCat("endpoint takes HOST:PORT (no scheme): '", endpoint, "'"));
    }
    o.endpoint = endpoint;
    if (checksum == "crc32c") {
      o.checksum = ChecksumAlgorithm::kCrc32c;
    } else if (checksum == "crc64nvme") {
      o.checksum = ChecksumAlgorithm::kCrc64Nvme;
    } else {
      throw py::value_error("checksum must be 'crc32c' or 'crc64nvme'");
    }
    if (!(timeout > 0) || timeout > 86400) {
      throw py::value_error("timeout is in seconds, above 0 and at most 86400");
    }
    o.timeout_ms = std::max<int64_t>(1, static_cast<int64_t>(timeout * 1000));
    o.opaque_etags = opaque_etags;
    o.allow_inline = allow_inline;
    o.fast_path = fast_path;
    if (busy_retries < 0) throw py::value_error("busy_retries must be 0 or more");
    o.busy_retries = busy_retries;
    if (max_in_flight < 0) throw py::value_error("max_in_flight must be 0 or more");
    o.requested_limits.max_in_flight = static_cast<uint32_t>(max_in_flight);
    if (tls_ca) o.tls.ca_file = *tls_ca;
    if (tls_cert) o.tls.cert_file = *tls_cert;
    if (tls_key) o.tls.key_file = *tls_key;
    if (tls_server_name) o.tls.server_name_override = *tls_server_name;
    o.tls.enabled = tls_ca.has_value() || tls_cert.has_value();
    o.data_channel.net_devices = net_devices;
    o.client_name = client_name;
    o.async_threads = 1;  // this binding runs its own threads (get_many)
    absl::StatusOr<std::unique_ptr<Client>> c;
    {
      py::gil_scoped_release nogil;
      c = Client::Connect(o);
    }
    core_ = std::make_shared<Core>(Check(std::move(c)), staging_mode);
    endpoint_ = endpoint;
    access_key_id_ = o.access_key_id;
  }

  ~PyClient() {
    if (core_) {
      py::gil_scoped_release nogil;
      (void)core_->client().Close();
    }
  }

  // The core, shared for the duration of one call: close() from another thread drops this
  // object's reference, and the Client and its Buffers go when the last call using them ends.
  std::shared_ptr<Core> core() {
    if (!core_) throw py::value_error("the client is closed");
    return core_;
  }

  void Close() {
    if (!core_) return;
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = core_->client().Close();
    }
    // Registrations still alive keep the core (and its Buffers) until they are released.
    core_.reset();
    // A session the server no longer knows, or a server that cannot be reached, is closed as
    // far as this client goes (the server ends it when its lease lapses, AOBJ-SES-009).
    const ErrorCode code = ErrorCodeOf(s);
    if (code != ErrorCode::kOk && code != ErrorCode::kNoSuchSession &&
        code != ErrorCode::kSessionExpired && ControlChannelFailure(s).empty()) {
      Raise(s);
    }
  }
  bool closed() const { return core_ == nullptr; }

  py::dict Session() {
    std::shared_ptr<Core> keep = core();
    const SessionInfo& s = keep->client().session();
    py::dict d;
    d["session_id"] = s.session_id;
    d["version"] = s.version;
    d["capabilities"] = s.capabilities;
    py::dict limits;
    limits["max_transfer_bytes"] = s.limits.max_transfer_bytes;
    limits["max_in_flight"] = s.limits.max_in_flight;
    limits["inline_threshold"] = s.limits.inline_threshold;
    limits["max_descriptors"] = s.limits.max_descriptors;
    limits["max_rkey_bytes"] = s.limits.max_rkey_bytes;
    limits["min_part_size"] = s.limits.min_part_size;
    limits["max_part_size"] = s.limits.max_part_size;
    limits["max_object_size"] = s.limits.max_object_size;
    limits["max_key_bytes"] = s.limits.max_key_bytes;
    limits["max_list_page"] = s.limits.max_list_page;
    limits["durable_commits"] = s.limits.durable_commits;
    d["limits"] = limits;
    d["protection"] = s.protection == MemoryProtection::kHardware   ? "hardware"
                      : s.protection == MemoryProtection::kEmulated ? "emulated"
                                                                    : "unspecified";
    d["lease_ms"] = s.lease_ms;
    d["server_name"] = s.server_name;
    d["fast_path"] = !s.fast_path_address.empty();  // spec 8.9: requests as active messages
    d["endpoint"] = endpoint_;
    d["access_key_id"] = access_key_id_;
    return d;
  }

  std::unique_ptr<PyRegistration> Register(py::object obj) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    auto region = std::make_shared<RegisteredRegion>();
    region->memory = HostMemory::Of(obj, /*writable=*/false, "buffer");
    if (region->memory.size() == 0) throw py::value_error("cannot register an empty buffer");
    absl::StatusOr<std::unique_ptr<Buffer>> b;
    {
      py::gil_scoped_release nogil;
      b = c.client().RegisterBuffer(region->memory.data(), region->memory.size());
    }
    region->buffer = Check(std::move(b));
    c.AddRegion(region);
    return std::make_unique<PyRegistration>(keep, std::move(region));
  }

  // GET into caller memory; returns the transfer dict.
  py::dict GetInto(const std::string& bucket, const std::string& key, py::object buffer,
                   py::object range, std::optional<std::string> if_match,
                   std::optional<std::string> if_none_match, double timeout) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    HostMemory memory = HostMemory::Of(buffer, /*writable=*/true, "buffer");
    GetOptions options = GetOptionsOf(range, if_match, if_none_match, timeout);
    std::shared_ptr<RegisteredRegion> region;
    std::unique_ptr<Buffer> own;
    absl::StatusOr<TransferResult> r;
    bool staged = false;
    if (memory.size() == 0) {
      // Nothing to register: only an empty object (or range) fits; a HEAD-sized answer tells.
      py::gil_scoped_release nogil;
      r = GetIntoEmpty(c, bucket, key, options);
    } else if (c.ShouldStage(memory.size()) && !c.FindRegion(memory.data(), memory.size())) {
      py::gil_scoped_release nogil;
      r = GetStaged(c, bucket, key, options, memory.data(), memory.size());
      staged = true;
    } else {
      absl::StatusOr<BufferSlice> window = WindowOf(c, memory, &region, &own);
      if (!window.ok()) Raise(window.status());
      py::gil_scoped_release nogil;
      r = c.client().Get(bucket, key, std::vector<BufferSlice>{*window}, options);
      own.reset();
    }
    return TransferDict(Check(std::move(r)), staged);
  }

  // GET returning bytes: into a pooled staging buffer, or, when the object is larger, straight
  // into a new bytes object registered for the call.
  py::tuple Get(const std::string& bucket, const std::string& key, py::object range,
                std::optional<std::string> if_match, std::optional<std::string> if_none_match,
                double timeout) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    GetOptions options = GetOptionsOf(range, if_match, if_none_match, timeout);
    absl::StatusOr<TransferResult> r;
    py::object result;
    {
      std::optional<Scratch> scratch;
      {
        py::gil_scoped_release nogil;
        r = GetSmall(c, bucket, key, options, &scratch);
      }
      if (r.ok()) {
        result = py::bytes(reinterpret_cast<const char*>((*scratch)->data()), r->bytes_transferred);
        py::gil_scoped_release nogil;
        scratch.reset();
      }
    }
    if (!r.ok() && ErrorCodeOf(r.status()) == ErrorCode::kDescriptorTooSmall) {
      // Larger than the first try: learn its size, then read exactly that version, staged
      // (ShouldStage) or straight into a new bytes object registered for this call.
      absl::StatusOr<ObjectInfo> head;
      Preconditions conditions = options.conditions;
      {
        py::gil_scoped_release nogil;
        head = c.client().Head(bucket, key, conditions);
      }
      ObjectInfo info = Check(std::move(head));
      uint64_t length = info.size;
      if (options.range) {
        const ByteRange& br = *options.range;
        if (br.kind == ByteRange::Kind::kFirstLast) {
          length = std::min(br.last, info.size - 1) - br.first + 1;
        } else if (br.kind == ByteRange::Kind::kFrom) {
          length = info.size - std::min(br.first, info.size);
        } else {
          length = std::min(br.suffix_length, info.size);
        }
      }
      PyObject* raw = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(length));
      if (raw == nullptr) throw py::error_already_set();
      py::object bytes = py::reinterpret_steal<py::object>(raw);
      if (options.conditions.if_match.empty()) options.conditions.if_match = info.etag;
      uint8_t* data = reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(raw));
      if (length > 0 && c.ShouldStage(length)) {
        py::gil_scoped_release nogil;
        r = GetStaged(c, bucket, key, options, data, length);
        if (r.ok() && r->bytes_transferred != length) {
          r = MakeError(ErrorCode::kIncompleteTransfer, "the object changed size");
        }
      } else {
        py::gil_scoped_release nogil;
        absl::StatusOr<std::unique_ptr<Buffer>> b = c.client().RegisterBuffer(data, length);
        if (!b.ok()) {
          r = b.status();
        } else {
          r = c.client().Get(bucket, key, std::vector<BufferSlice>{{b->get(), 0, length}}, options);
          if (r.ok() && r->bytes_transferred != length) {
            r = MakeError(ErrorCode::kIncompleteTransfer, "the object changed size");
          }
        }
      }
      Check(r.status());
      result = std::move(bytes);
    }
    TransferResult t = Check(std::move(r));
    return py::make_tuple(result, TransferDict(t));
  }

  py::dict Put(const std::string& bucket, const std::string& key, py::object data,
               std::optional<std::string> content_type,
               std::optional<std::map<std::string, std::string>> metadata,
               std::optional<std::string> if_match, std::optional<std::string> if_none_match,
               uint64_t multipart_threshold, uint64_t part_size, bool copy_small, double timeout) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    HostMemory memory = HostMemory::Of(data, /*writable=*/false, "data");
    PutOptions options;
    if (content_type) options.content_type = *content_type;
    if (metadata) options.user_metadata = *metadata;
    options.conditions = ConditionsOf(if_match, if_none_match);
    options.call.timeout = TimeoutOf(timeout);
    const uint64_t size = memory.size();
    std::shared_ptr<RegisteredRegion> region;
    std::unique_ptr<Buffer> own;
    if (multipart_threshold > 0 && size >= multipart_threshold) {
      if (part_size == 0) throw py::value_error("part_size must be above 0");
      absl::StatusOr<BufferSlice> window = WindowOf(c, memory, &region, &own);
      if (!window.ok()) Raise(window.status());
      if (window->offset != 0) {
        // UploadMultipart reads from the buffer's start; register this window alone.
        region.reset();
        absl::StatusOr<std::unique_ptr<Buffer>> b;
        {
          py::gil_scoped_release nogil;
          b = c.client().RegisterBuffer(memory.data(), size);
        }
        own = Check(std::move(b));
      }
      const Buffer& buf = own ? *own : *region->buffer;
      absl::StatusOr<ObjectInfo> info;
      {
        py::gil_scoped_release nogil;
        info = c.client().UploadMultipart(bucket, key, buf, size, part_size, options);
        own.reset();
      }
      TransferResult t;
      t.info = Check(std::move(info));
      t.bytes_transferred = size;
      t.path = TransferPath::kRma;
      return TransferDict(t);
    }
    absl::StatusOr<TransferResult> r;
    bool staged = false;
    region = c.FindRegion(memory.data(), size);
    if (size == 0) {
      py::gil_scoped_release nogil;
      r = c.client().Put(bucket, key, std::vector<BufferSlice>{}, options);
    } else if (!region && copy_small && c.ShouldStage(size)) {
      // Copying a small body into a pooled registered buffer costs less than registering it.
      py::gil_scoped_release nogil;
      absl::StatusOr<std::unique_ptr<Buffer>> b = c.TakeScratch(size);
      if (!b.ok()) {
        r = b.status();
      } else {
        Scratch scratch(&c, std::move(*b));
        std::memcpy((*scratch).data(), memory.data(), size);
        r = c.client().Put(bucket, key, std::vector<BufferSlice>{{scratch.get(), 0, size}},
                           options);
      }
      staged = true;
    } else {
      absl::StatusOr<BufferSlice> window = WindowOf(c, memory, &region, &own);
      if (!window.ok()) Raise(window.status());
      py::gil_scoped_release nogil;
      r = c.client().Put(bucket, key, std::vector<BufferSlice>{*window}, options);
      own.reset();
    }
    return TransferDict(Check(std::move(r)), staged);
  }

  py::dict Head(const std::string& bucket, const std::string& key,
                std::optional<std::string> if_match, std::optional<std::string> if_none_match) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    Preconditions conditions = ConditionsOf(if_match, if_none_match);
    absl::StatusOr<ObjectInfo> r;
    {
      py::gil_scoped_release nogil;
      r = c.client().Head(bucket, key, conditions);
    }
    return InfoDict(Check(std::move(r)));
  }

  void Delete(const std::string& bucket, const std::string& key) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = c.client().Delete(bucket, key);
    }
    Check(s);
  }

  py::tuple DeleteObjects(const std::string& bucket, const std::vector<std::string>& keys,
                          bool quiet) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    absl::StatusOr<DeleteObjectsResult> r;
    {
      py::gil_scoped_release nogil;
      r = c.client().DeleteObjects(bucket, keys, quiet);
    }
    DeleteObjectsResult d = Check(std::move(r));
    py::list errors;
    py::object make = py::module_::import("aobj.errors").attr("_from_status");
    for (const auto& [key, status] : d.errors) {
      errors.append(
          py::make_tuple(key, make(static_cast<uint32_t>(ErrorCodeOf(status)),
                                   std::string(status.message()), ControlChannelFailure(status))));
    }
    return py::make_tuple(d.deleted, errors);
  }

  py::dict Copy(const std::string& source_bucket, const std::string& source_key,
                const std::string& bucket, const std::string& key,
                std::optional<std::string> content_type,
                std::optional<std::map<std::string, std::string>> metadata,
                std::optional<std::string> source_if_match, std::optional<std::string> if_match,
                std::optional<std::string> if_none_match) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    CopyOptions options;
    options.replace_metadata = content_type.has_value() || metadata.has_value();
    if (content_type) options.content_type = *content_type;
    if (metadata) options.user_metadata = *metadata;
    if (source_if_match) options.source_conditions.if_match = *source_if_match;
    options.conditions = ConditionsOf(if_match, if_none_match);
    absl::StatusOr<ObjectInfo> r;
    {
      py::gil_scoped_release nogil;
      r = c.client().Copy(source_bucket, source_key, bucket, key, options);
    }
    return InfoDict(Check(std::move(r)));
  }

  py::dict ListObjects(const std::string& bucket, const std::string& prefix,
                       const std::string& delimiter, const std::string& start_after,
                       const py::bytes& continuation_token, uint32_t max_keys) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    ListObjectsOptions options;
    options.prefix = prefix;
    options.delimiter = delimiter;
    options.start_after = start_after;
    options.continuation_token = continuation_token;
    options.max_keys = max_keys;
    absl::StatusOr<ObjectListing> r;
    {
      py::gil_scoped_release nogil;
      r = c.client().ListObjects(bucket, options);
    }
    ObjectListing page = Check(std::move(r));
    py::list objects;
    for (const ObjectSummary& o : page.objects) {
      py::dict d;
      d["key"] = o.key;
      d["size"] = o.size;
      d["etag"] = o.etag;
      d["last_modified_ms"] = o.last_modified_ms;
      objects.append(d);
    }
    py::dict d;
    d["objects"] = objects;
    d["common_prefixes"] = page.common_prefixes;
    d["is_truncated"] = page.is_truncated;
    d["next_continuation_token"] = py::bytes(page.next_continuation_token);  // opaque octets
    return d;
  }

  py::list ListBuckets() {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    absl::StatusOr<std::vector<BucketSummary>> r;
    {
      py::gil_scoped_release nogil;
      r = c.client().ListBuckets();
    }
    py::list out;
    for (const BucketSummary& b : Check(std::move(r))) {
      out.append(py::make_tuple(b.name, b.creation_time_ms));
    }
    return out;
  }

  void BucketCall(const std::string& what, const std::string& bucket) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      if (what == "create") {
        s = c.client().CreateBucket(bucket);
      } else if (what == "delete") {
        s = c.client().DeleteBucket(bucket);
      } else {
        s = c.client().HeadBucket(bucket);
      }
    }
    Check(s);
  }

  // Many GETs at once, up to `width` in flight: into the given buffers (zero copy), or, when
  // buffers is None, returned as bytes. Each entry of the result is a (data-or-None, transfer
  // dict) pair or the exception of that key.
  py::list GetMany(const std::string& bucket, const std::vector<std::string>& keys,
                   py::object buffers, size_t width, double timeout) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    const size_t n = keys.size();
    GetOptions options;
    options.call.timeout = TimeoutOf(timeout);
    std::vector<HostMemory> memories;
    std::vector<std::shared_ptr<RegisteredRegion>> regions(n);
    std::vector<absl::StatusOr<TransferResult>> results(n, absl::UnknownError("not run"));
    std::vector<char> staged(n, 0);
    py::list out;
    if (!buffers.is_none()) {
      py::sequence seq = buffers.cast<py::sequence>();
      if (seq.size() != n) throw py::value_error("give one buffer per key");
      for (size_t i = 0; i < n; ++i) {
        memories.push_back(HostMemory::Of(seq[i], /*writable=*/true, "buffers[i]"));
        regions[i] = c.FindRegion(memories[i].data(), memories[i].size());
      }
      {
        py::gil_scoped_release nogil;
        // Keys whose buffers lie in registered regions go by GetObjects where the session
        // negotiated BATCH_GET (spec 9.16): the client cuts them into requests of up to 1000
        // items and max_descriptors buffers. A call that fails as a whole (overlapping
        // buffers, say) leaves its keys to the single GETs below; an item's own failure
        // (NO_SUCH_KEY, DESCRIPTOR_TOO_SMALL for an object larger than its buffer) is its own.
        std::vector<char> batched(n, 0);
        if (HasBatchGet(c) && n > 1) {
          std::vector<BatchGetItem> items;
          std::vector<size_t> index;
          for (size_t i = 0; i < n; ++i) {
            if (!regions[i] || memories[i].size() == 0) continue;
            const uint64_t offset =
                static_cast<uint64_t>(memories[i].data() - regions[i]->memory.data());
            items.push_back(
                {keys[i], std::nullopt, {regions[i]->buffer.get(), offset, memories[i].size()}});
            index.push_back(i);
          }
          if (items.size() > 1) {
            absl::StatusOr<BatchGetResults> got =
                c.client().GetObjects(bucket, items, options.call);
            if (got.ok()) {
              for (size_t k = 0; k < index.size(); ++k) {
                results[index[k]] = std::move((*got)[k]);
                batched[index[k]] = 1;
              }
              c.CountBatched(index.size());
            }
          }
        }
        c.workers().ParallelFor(n, width, [&](size_t i) {
          if (batched[i]) return;
          const HostMemory& m = memories[i];
          if (m.size() == 0) {
            results[i] = GetIntoEmpty(c, bucket, keys[i], options);
            return;
          }
          if (!regions[i] && c.ShouldStage(m.size())) {
            results[i] = GetStaged(c, bucket, keys[i], options, m.data(), m.size());
            staged[i] = 1;
            return;
          }
          std::unique_ptr<Buffer> own;
          BufferSlice window;
          if (regions[i]) {
            window = {regions[i]->buffer.get(),
                      static_cast<uint64_t>(m.data() - regions[i]->memory.data()), m.size()};
          } else {
            absl::StatusOr<std::unique_ptr<Buffer>> b =
                c.client().RegisterBuffer(m.data(), m.size());
            if (!b.ok()) {
              results[i] = b.status();
              return;
            }
            own = std::move(*b);
            window = {own.get(), 0, m.size()};
          }
          results[i] = c.client().Get(bucket, keys[i], std::vector<BufferSlice>{window}, options);
        });
      }
      for (size_t i = 0; i < n; ++i) out.append(Entry(results[i], py::none(), staged[i] != 0));
      return out;
    }
    std::vector<std::optional<Scratch>> scratches(n);
    // Where key i's octets are: scratches[i], or (batched) scratches[first of its chunk] at
    // at[i].
    std::vector<size_t> owner(n), at(n, 0);
    for (size_t i = 0; i < n; ++i) owner[i] = i;
    {
      py::gil_scoped_release nogil;
      if (HasBatchGet(c) && n > 1) {
        // GetObjects (spec 9.16): kBatchKeys keys to a request, each into a kBatchSlot region of
        // one pooled buffer; a larger object fails DESCRIPTOR_TOO_SMALL and is read alone below.
        const size_t chunks = (n + kBatchKeys - 1) / kBatchKeys;
        c.workers().ParallelFor(chunks, width, [&](size_t k) {
          const size_t from = k * kBatchKeys;
          const size_t to = std::min(n, from + kBatchKeys);
          absl::StatusOr<std::unique_ptr<Buffer>> b = c.TakeScratch((to - from) * kBatchSlot);
          if (!b.ok()) {
            for (size_t i = from; i < to; ++i) results[i] = b.status();
            return;
          }
          scratches[from].emplace(&c, std::move(*b));
          std::vector<BatchGetItem> items;
          for (size_t i = from; i < to; ++i) {
            owner[i] = from;
            at[i] = (i - from) * kBatchSlot;
            items.push_back({keys[i], std::nullopt, {scratches[from]->get(), at[i], kBatchSlot}});
          }
          absl::StatusOr<BatchGetResults> got = c.client().GetObjects(bucket, items, options.call);
          for (size_t i = from; i < to; ++i) {
            results[i] = got.ok() ? std::move((*got)[i - from]) : got.status();
          }
          if (got.ok()) c.CountBatched(to - from);
        });
      } else {
        c.workers().ParallelFor(n, width, [&](size_t i) {
          results[i] = GetSmall(c, bucket, keys[i], options, &scratches[i]);
        });
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (results[i].ok()) {
        out.append(Entry(results[i], py::bytes(reinterpret_cast<const char*>(
                                                   (*scratches[owner[i]])->data() + at[i]),
                                               results[i]->bytes_transferred)));
      } else if (ErrorCodeOf(results[i].status()) == ErrorCode::kDescriptorTooSmall) {
        // A large one among them: read it alone.
        try {
          py::tuple t = Get(bucket, keys[i], py::none(), std::nullopt, std::nullopt, timeout);
          out.append(py::make_tuple(t[0], t[1]));
        } catch (py::error_already_set& e) {
          out.append(e.value());
        }
      } else {
        out.append(Entry(results[i], py::none()));
      }
    }
    py::gil_scoped_release nogil;
    scratches.clear();
    return out;
  }

  // Many objects stored at once. Where the session negotiated BATCH_PUT (spec 9.17), runs of up
  // to kBatchKeys objects of at most kBatchSlot octets are copied into one pooled buffer each
  // and sent as one PutObjects request, up to `width` requests in flight; a larger object, or
  // every object without BATCH_PUT, goes as put() sends it. Each entry of the result is the
  // object's info dict or the exception of that key.
  py::list PutMany(const std::string& bucket, const std::vector<std::string>& keys,
                   py::sequence datas, std::optional<std::string> content_type, size_t width,
                   double timeout) {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    const size_t n = keys.size();
    if (datas.size() != n) throw py::value_error("give one data object per key");
    std::vector<HostMemory> memories;
    for (size_t i = 0; i < n; ++i) {
      memories.push_back(HostMemory::Of(datas[i], /*writable=*/false, "data"));
    }
    std::vector<absl::StatusOr<ObjectInfo>> results(n, absl::UnknownError("not run"));
    std::vector<char> alone(n, 1);
    std::vector<std::vector<size_t>> groups;
    if (HasBatchPut(c)) {
      for (size_t i = 0; i < n; ++i) {
        if (memories[i].size() > kBatchSlot) continue;
        if (groups.empty() || groups.back().size() == kBatchKeys) groups.emplace_back();
        groups.back().push_back(i);
        alone[i] = 0;
      }
    }
    {
      py::gil_scoped_release nogil;
      c.workers().ParallelFor(groups.size(), width, [&](size_t k) {
        const std::vector<size_t>& group = groups[k];
        uint64_t total = 0;
        for (size_t i : group) total += memories[i].size();
        absl::StatusOr<std::unique_ptr<Buffer>> b =
            c.TakeScratch(static_cast<size_t>(std::max<uint64_t>(total, 1)));
        if (!b.ok()) {
          for (size_t i : group) results[i] = b.status();
          return;
        }
        Scratch scratch(&c, std::move(*b));
        std::vector<BatchPutItem> items;
        uint64_t at = 0;
        for (size_t i : group) {
          const HostMemory& m = memories[i];
          if (m.size() > 0) std::memcpy(scratch->data() + at, m.data(), m.size());
          items.push_back({keys[i], {scratch.get(), at, m.size()}, content_type.value_or("")});
          at += m.size();
        }
        CallOptions call;
        call.timeout = TimeoutOf(timeout);
        absl::StatusOr<BatchPutResults> got = c.client().PutObjects(bucket, items, call);
        for (size_t j = 0; j < group.size(); ++j) {
          results[group[j]] = got.ok() ? std::move((*got)[j]) : got.status();
        }
      });
    }
    py::list out;
    py::object make = py::module_::import("aobj.errors").attr("_from_status");
    for (size_t i = 0; i < n; ++i) {
      if (alone[i]) {
        try {
          // put()'s defaults (DEFAULT_MULTIPART_THRESHOLD, DEFAULT_PART_SIZE).
          py::dict t = Put(bucket, keys[i], datas[i], content_type, std::nullopt, std::nullopt,
                           std::nullopt, uint64_t{64} << 20, uint64_t{16} << 20,
                           /*copy_small=*/true, timeout);
          out.append(t["info"]);
        } catch (py::error_already_set& e) {
          out.append(e.value());
        }
      } else if (results[i].ok()) {
        out.append(InfoDict(*results[i]));
      } else {
        out.append(make(static_cast<uint32_t>(ErrorCodeOf(results[i].status())),
                        std::string(results[i].status().message()),
                        ControlChannelFailure(results[i].status())));
      }
    }
    return out;
  }

  py::dict Stats() {
    std::shared_ptr<Core> keep = core();  // alive through the call, even if closed
    Core& c = *keep;
    py::dict d;
    d["registrations"] = c.region_count();
    d["pooled_bytes"] = c.pooled_bytes();
    d["batched_keys"] = c.batched_keys();
    return d;
  }

 private:
  static absl::Duration TimeoutOf(double seconds) {
    if (seconds <= 0) return absl::ZeroDuration();
    return absl::Milliseconds(std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000)));
  }

  static GetOptions GetOptionsOf(const py::object& range,
                                 const std::optional<std::string>& if_match,
                                 const std::optional<std::string>& if_none_match, double timeout) {
    GetOptions options;
    if (!range.is_none()) {
      absl::StatusOr<ByteRange> r = RangeOf(range);
      if (!r.ok()) Raise(r.status());
      options.range = *r;
    }
    options.conditions = ConditionsOf(if_match, if_none_match);
    options.call.timeout = TimeoutOf(timeout);
    return options;
  }

  static py::object Entry(const absl::StatusOr<TransferResult>& r, py::object data,
                          bool staged = true) {
    if (!r.ok()) {
      py::object make = py::module_::import("aobj.errors").attr("_from_status");
      return make(static_cast<uint32_t>(ErrorCodeOf(r.status())), std::string(r.status().message()),
                  ControlChannelFailure(r.status()));
    }
    return py::make_tuple(data, TransferDict(*r, staged));
  }

  // A GET into a pooled buffer of kFirstGetBuffer octets (GIL released).
  static absl::StatusOr<TransferResult> GetSmall(Core& c, const std::string& bucket,
                                                 const std::string& key, const GetOptions& options,
                                                 std::optional<Scratch>* scratch) {
    absl::StatusOr<std::unique_ptr<Buffer>> b = c.TakeScratch(kFirstGetBuffer);
    if (!b.ok()) return b.status();
    scratch->emplace(&c, std::move(*b));
    const uint64_t size = (**scratch)->size();
    return c.client().Get(bucket, key, std::vector<BufferSlice>{{(*scratch)->get(), 0, size}},
                          options);
  }

  // A GET into a staging buffer of exactly n octets, copied to dst (GIL released).
  static absl::StatusOr<TransferResult> GetStaged(Core& c, const std::string& bucket,
                                                  const std::string& key, const GetOptions& options,
                                                  uint8_t* dst, size_t n) {
    absl::StatusOr<std::unique_ptr<Buffer>> b = c.TakeScratch(n);
    if (!b.ok()) return b.status();
    Scratch scratch(&c, std::move(*b));
    absl::StatusOr<TransferResult> r =
        c.client().Get(bucket, key, std::vector<BufferSlice>{{scratch.get(), 0, n}}, options);
    if (r.ok()) std::memcpy(dst, scratch->data(), r->bytes_transferred);
    return r;
  }

  // A GET into an empty buffer: fine for an empty object, DESCRIPTOR_TOO_SMALL otherwise.
  static absl::StatusOr<TransferResult> GetIntoEmpty(Core& c, const std::string& bucket,
                                                     const std::string& key,
                                                     const GetOptions& options) {
    absl::StatusOr<ObjectInfo> head = c.client().Head(bucket, key, options.conditions);
    if (!head.ok()) return head.status();
    if (head->size != 0 && !options.range) {
      return MakeError(ErrorCode::kDescriptorTooSmall,
                       absl::StrCat("the buffer holds 0 octets; the object has ", head->size));
    }
    absl::StatusOr<std::unique_ptr<Buffer>> b = c.TakeScratch(1);
    if (!b.ok()) return b.status();
    Scratch scratch(&c, std::move(*b));
    GetOptions o = options;
    if (o.conditions.if_match.empty()) o.conditions.if_match = head->etag;
    absl::StatusOr<TransferResult> r =
        c.client().Get(bucket, key, std::vector<BufferSlice>{{scratch.get(), 0, 1}}, o);
    if (r.ok() && r->bytes_transferred != 0) {
      return MakeError(
          ErrorCode::kDescriptorTooSmall,
          absl::StrCat("the buffer holds 0 octets; the range has ", r->bytes_transferred));
    }
    return r;
  }

  std::shared_ptr<Core> core_;
  std::string endpoint_;
  std::string access_key_id_;
};

}  // namespace
}  // namespace aobj::python

PYBIND11_MODULE(_aobj, m) {
  using namespace aobj::python;
  namespace a = aobj;
  m.doc() = "The AOBJ/1 client stack (C++), bound for Python. Import `aobj`, not this module.";

  m.def(
      "error_registry",
      [] {
        py::list out;
        for (uint32_t v = 0; v < 128; ++v) {
          const a::ErrorInfo info = a::GetErrorInfo(static_cast<a::ErrorCode>(v));
          if (info.code != static_cast<a::ErrorCode>(v) || (v != 1 && info.name == "INTERNAL")) {
            continue;
          }
          out.append(
              py::make_tuple(v, std::string(info.name), std::string(info.s3_code), info.retryable));
        }
        return out;
      },
      "The error registry (spec Table 3): (code, NAME, S3Code, retryable) rows.");

  py::class_<PyRegistration>(m, "Registration",
                             "Memory registered with a Client's data channel (Client.register).")
      .def("release", &PyRegistration::Release,
           "Unregisters the memory; transfers already running keep it until they end.")
      .def_property_readonly("active", &PyRegistration::active)
      .def_property_readonly("nbytes", &PyRegistration::size)
      .def_property_readonly("address", &PyRegistration::address)
      .def(
          "__enter__", [](PyRegistration& r) -> PyRegistration& { return r; },
          py::return_value_policy::reference)
      .def("__exit__", [](PyRegistration& r, py::args) { r.Release(); });

  py::class_<PyClient>(m, "_Client", py::dynamic_attr())
      .def(py::init<std::string, std::optional<std::string>, std::optional<std::string>,
                    std::optional<std::string>, std::optional<std::string>, std::string, double,
                    bool, bool, bool, int, int, std::optional<std::string>,
                    std::optional<std::string>, std::optional<std::string>,
                    std::optional<std::string>, std::string, std::string, std::string>(),
           py::arg("endpoint"), py::arg("profile"), py::arg("access_key_id"),
           py::arg("secret_access_key"), py::arg("credentials_file"), py::arg("checksum"),
           py::arg("timeout"), py::arg("opaque_etags"), py::arg("allow_inline"),
           py::arg("fast_path"), py::arg("busy_retries"), py::arg("max_in_flight"),
           py::arg("tls_ca"), py::arg("tls_cert"), py::arg("tls_key"), py::arg("tls_server_name"),
           py::arg("net_devices"), py::arg("client_name"), py::arg("staging"))
      .def("_close", &PyClient::Close)
      .def_property_readonly("_closed", &PyClient::closed)
      .def("_session", &PyClient::Session)
      .def("_register", &PyClient::Register)
      .def("_get_into", &PyClient::GetInto)
      .def("_get", &PyClient::Get)
      .def("_put", &PyClient::Put)
      .def("_head", &PyClient::Head)
      .def("_delete", &PyClient::Delete)
      .def("_delete_objects", &PyClient::DeleteObjects)
      .def("_copy", &PyClient::Copy)
      .def("_list_objects", &PyClient::ListObjects)
      .def("_list_buckets", &PyClient::ListBuckets)
      .def("_bucket_call", &PyClient::BucketCall)
      .def("_get_many", &PyClient::GetMany)
      .def("_put_many", &PyClient::PutMany)
      .def("_stats", &PyClient::Stats);
}
