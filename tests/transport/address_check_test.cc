#include "transport/address_check.h"

#include <dirent.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "transport/shm_guard.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define AOBJ_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOBJ_HAS_LSAN 1
#endif
#endif

namespace aobj {
namespace {

// Sets UCX_* variables for the contexts created while it lives (UCX reads them in
// ucp_config_read), and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) {
    for (auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved_) {
      if (v) {
        setenv(k.c_str(), v->c_str(), 1);
      } else {
        unsetenv(k.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

struct Variant {
  std::string name;
  std::string transports;  // UCX_TLS; empty = UCX's default
  std::vector<std::pair<std::string, std::string>> env;
};

// The configurations this machine can run (shared/FACTS.md): shm + tcp on lo, each alone, and
// the two address versions and the debug-info flag of UCX 1.13.
// The TCP ports this process listens on (its UCX workers' interfaces), from /proc/net/tcp{,6}
// and this process's socket inodes.
std::vector<uint16_t> OwnListeningPorts() {
  std::vector<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[256] = {0};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
      if (n > 9 && std::string(target, 8) == "socket:[") {
        inodes.emplace_back(target + 8, static_cast<size_t>(n - 9));
      }
    }
    closedir(d);
  }
  std::vector<uint16_t> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A") continue;  // LISTEN
      if (std::find(inodes.begin(), inodes.end(), inode) == inodes.end()) continue;
      ports.push_back(
          static_cast<uint16_t>(std::stoul(local.substr(local.find(':') + 1), nullptr, 16)));
    }
  }
  return ports;
}

std::vector<Variant> Variants() {
  return {
      {"default", "", {}},
      {"tcp", "tcp", {}},
      {"shm", "sm", {}},
      {"sysv", "sysv", {}},
      {"posix", "posix", {}},
      {"cma-tcp", "cma,tcp", {}},
      {"self", "self", {}},  // reachable only from its own context
      {"tcp-self", "tcp,self", {}},
      {"v2", "", {{"UCX_ADDRESS_VERSION", "v2"}}},
      {"debug-info", "", {{"UCX_ADDRESS_DEBUG_INFO", "y"}}},
      {"v2-debug-info", "", {{"UCX_ADDRESS_VERSION", "v2"}, {"UCX_ADDRESS_DEBUG_INFO", "y"}}},
  };
}

struct Real {
  std::string name;
  std::string address;
};

// Real addresses from every variant (one context + worker each; the workers are kept so that
// the addresses stay connectable while a test runs).
class AddressCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const Variant& v : Variants()) {
      ScopedEnv env(v.env);
      DataChannelOptions o;
      o.transports = v.transports;
      auto ctx = UcxContext::Create(o);
      ASSERT_TRUE(ctx.ok()) << v.name << ": " << ctx.status();
      auto w = UcxWorker::Create(**ctx, "address-check-" + v.name);
      ASSERT_TRUE(w.ok()) << v.name << ": " << w.status();
      real_.push_back({v.name, (*w)->address()});
      workers_.push_back(std::move(*w));
      contexts_.push_back(std::move(*ctx));
    }
  }
  void TearDown() override {
    workers_.clear();
    contexts_.clear();
  }
  // The default server worker's address: what CheckWorkerAddress compares with.
  const std::string& local() const { return real_[0].address; }
  UcxWorker& server() { return *workers_[0]; }

  std::vector<std::unique_ptr<UcxContext>> contexts_;
  std::vector<std::unique_ptr<UcxWorker>> workers_;
  std::vector<Real> real_;
};

// A length or count field of an address and where its data starts, found by an independent walk
// of the layout in address_check.h (v1 and v2 without extended bytes: what UCX packs here).
struct Field {
  size_t offset;   // the byte holding the length
  uint8_t mask;    // its length bits
  std::string what;
};

// The walk of `a`; nullopt when the layout runs past its end or ends before it does.
std::optional<std::vector<Field>> Walk(const std::string& a) {
  std::vector<Field> out;
  if (a.empty()) return std::nullopt;
  // Every read is bounded: a byte past the end means the layout runs on past it.
  bool past_end = false;
  auto b = [&](size_t i) {
    if (i >= a.size()) {
      past_end = true;
      return uint8_t{0x80};  // a LAST flag: the walk stops
    }
    return static_cast<uint8_t>(a[i]);
  };
  const uint8_t version = b(0) & 0x0F;
  const uint8_t flags = version == 0 ? b(0) >> 4 : b(1);
  size_t off = version == 0 ? 1 : 2;
  if (version == 0 || (flags & 2)) off += 8;
  if (flags & 4) off += 8;
  if (flags & 1) {
    out.push_back({off, 0xFF, "worker name length"});
    off += 1 + b(off);
  }
  if (b(off) == 0xFF) {
    if (past_end || off + 1 != a.size()) return std::nullopt;
    return out;
  }
  const size_t attr = version == 0 ? 16 : 8;
  for (bool last_dev = false; !last_dev;) {
    const bool empty = b(off) & 0x80;
    ++off;
    out.push_back({off, 0x1F, "device address length"});
    const uint8_t dl = b(off++);
    last_dev = dl & 0x80;
    if (dl & 0x40) ++off;
    if (dl & 0x20) ++off;
    off += dl & 0x1F;
    for (bool last_tl = empty; !last_tl;) {
      off += 2 + attr;
      out.push_back({off, 0x3F, "interface address length"});
      const uint8_t il = b(off++);
      last_tl = il & 0x80;
      off += il & 0x3F;
    }
  }
  if (past_end || off != a.size()) return std::nullopt;
  return out;
}

std::vector<Field> LengthFields(const std::string& a) {
  std::optional<std::vector<Field>> fields = Walk(a);
  EXPECT_TRUE(fields.has_value()) << "the test's own walk of a real address";
  return fields.value_or(std::vector<Field>{});
}

TEST_F(AddressCheckTest, AcceptsEveryRealAddress) {
  for (const Real& r : real_) {
    auto layout = ParseWorkerAddress(r.address);
    ASSERT_TRUE(layout.ok()) << r.name << ": " << layout.status();
    EXPECT_FALSE(layout->entries.empty()) << r.name;
    std::string desc;
    for (const auto& e : layout->entries) {
      absl::StrAppend(&desc, " [csum 0x", absl::Hex(e.tl_name_csum), " md ", e.md_index, " dev ",
                      e.device, "/", e.dev_addr_len, " iface ", e.iface_addr_len, "]");
    }
    std::printf("%-14s %4zu bytes v%d flags 0x%x devices %zu:%s\n", r.name.c_str(),
                r.address.size(), layout->version + 1, layout->flags, layout->devices,
                desc.c_str());
    // Against itself and against the default server worker (the OpenSession situation).
    EXPECT_TRUE(CheckWorkerAddress(r.address, r.address).ok()) << r.name;
    EXPECT_TRUE(CheckWorkerAddress(r.address, local()).ok()) << r.name;
    LengthFields(r.address);
  }
}

// Through a server-shaped worker (network lanes in mode PEER plus the System V lane in mode
// NONE, AOBJ-TRN-003, AOBJ-TRN-010): every real address connects, except a posix-only one, which
// neither lane can reach (PEER excludes shared memory, the NONE lane is System V only).
TEST_F(AddressCheckTest, RealAddressesStillConnect) {
  auto shm = UcxContext::CreateSharedMemoryLane(DataChannelOptions{});
  ASSERT_TRUE(shm.ok()) << shm.status();
  ASSERT_NE(*shm, nullptr);
  auto worker = UcxWorker::Create(*contexts_[0], "address-check-server", shm->get());
  ASSERT_TRUE(worker.ok()) << worker.status();
  for (const Real& r : real_) {
    if (r.name == "self") continue;
    auto ep = (*worker)->Connect(r.address);
    if (r.name == "posix") {
      EXPECT_EQ(ErrorCodeOf(ep.status()), ErrorCode::kDataChannelUnavailable) << ep.status();
      continue;
    }
    ASSERT_TRUE(ep.ok()) << r.name << ": " << ep.status();
    (*worker)->Disconnect(*ep);
  }
}

// AOBJ-SES-024: an address whose System V FIFO is some other segment (too small, missing, the
// server's own, or any other segment of this user) never reaches ucp_ep_create on the
// shared-memory lane; the real address still connects. The foreign segment lives in this
// process, which plays "another process" (a server-shaped worker here is the one attaching).
TEST_F(AddressCheckTest, FifoSegmentsNamedByAnAddressAreChecked) {
  auto shm = UcxContext::CreateSharedMemoryLane(DataChannelOptions{});
  ASSERT_TRUE(shm.ok() && *shm != nullptr);
  auto worker = UcxWorker::Create(*contexts_[0], "fifo-check-server", shm->get());
  ASSERT_TRUE(worker.ok()) << worker.status();
  // The sysv entry of a real client address: the one whose transport the server's
  // System V-only worker also runs.
  auto server_shm = ParseWorkerAddress((*worker)->shm_address());
  ASSERT_TRUE(server_shm.ok());
  ASSERT_FALSE(server_shm->entries.empty());
  const uint16_t sysv = server_shm->entries[0].tl_name_csum;
  const std::string& real = real_[0].address;  // the default variant: sysv among others
  auto parsed = ParseWorkerAddress(real);
  ASSERT_TRUE(parsed.ok());
  size_t at = 0;
  for (const WorkerAddressEntry& e : parsed->entries) {
    if (e.tl_name_csum == sysv) at = e.iface_addr_offset;
  }
  ASSERT_NE(at, 0u) << "the client's address has no System V entry";
  auto with_fifo = [&](uint64_t id) {
    std::string a = real;
    for (int i = 0; i < 8; ++i) a[at + i] = static_cast<char>(id >> (8 * i));
    return a;
  };
  uint64_t own_fifo = 0;
  for (int i = 0; i < 8; ++i) {
    own_fifo |= uint64_t{static_cast<uint8_t>(
                    (*worker)->shm_address()[server_shm->entries[0].iface_addr_offset + i])}
                << (8 * i);
  }
  const int small = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  ASSERT_GE(small, 0);
  struct shmid_ds own {};
  ASSERT_EQ(shmctl(static_cast<int>(own_fifo), IPC_STAT, &own), 0);
  const int same_size = shmget(IPC_PRIVATE, own.shm_segsz, IPC_CREAT | 0600);
  ASSERT_GE(same_size, 0);
  const struct {
    uint64_t id;
    const char* what;
  } cases[] = {
      {static_cast<uint64_t>(small), "a 4 KiB segment"},
      {0x7ffffff0, "a segment that does not exist"},
      {uint64_t{1} << 40, "an id beyond any segment id"},
      {own_fifo, "the server's own FIFO"},
  };
  for (const auto& c : cases) {
    auto ep = (*worker)->Connect(with_fifo(c.id));
    EXPECT_EQ(ErrorCodeOf(ep.status()), ErrorCode::kInvalidArgument)
        << c.what << ": " << ep.status();
  }
  // A segment of the FIFO's size of another process of this user passes the check: it cannot
  // tell whose FIFO it is; the endpoint challenge through it does (spec 5.6.1), and the check
  // reports the FIFO's creator, which every mapped window's segment must share (AOBJ-MEM-028).
  pid_t creator = 0;
  EXPECT_TRUE(CheckPeerFifoSegments(with_fifo(static_cast<uint64_t>(same_size)),
                                    (*worker)->shm_address(), &creator)
                  .ok());
  EXPECT_EQ(creator, getpid());
  creator = 0;
  EXPECT_TRUE(CheckPeerFifoSegments(real, (*worker)->shm_address(), &creator).ok());
  EXPECT_EQ(creator, getpid()) << "the client worker of this test process made its FIFO";
  auto ep = (*worker)->Connect(real);
  EXPECT_TRUE(ep.ok()) << ep.status();
  if (ep.ok()) (*worker)->Disconnect(*ep);
  shmctl(small, IPC_RMID, nullptr);
  shmctl(same_size, IPC_RMID, nullptr);
}

TEST_F(AddressCheckTest, RejectsEveryTruncation) {
  for (const Real& r : real_) {
    for (size_t n = 0; n < r.address.size(); ++n) {
      const std::string cut = r.address.substr(0, n);
      EXPECT_FALSE(ParseWorkerAddress(cut).ok()) << r.name << " cut to " << n;
      EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(cut, local())), ErrorCode::kInvalidArgument)
          << r.name << " cut to " << n;
    }
  }
}

TEST_F(AddressCheckTest, RejectsTrailingBytes) {
  for (const Real& r : real_) {
    EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(r.address + std::string(1, '\0'), local())),
              ErrorCode::kInvalidArgument)
        << r.name;
  }
}

// The conformance suite's case: 200 random octets aborted UCX 1.13.1 in ucp_address_unpack.
TEST_F(AddressCheckTest, RejectsRandomBytes) {
  size_t accepted = 0;
  for (uint32_t seed = 0; seed < 20000; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = seed < 10000 ? 200 : 1 + rng() % 400;
    std::string blob(n, '\0');
    for (char& c : blob) c = static_cast<char>(rng());
    absl::Status s = CheckWorkerAddress(blob, local());
    if (s.ok()) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(ErrorCodeOf(s), ErrorCode::kInvalidArgument) << seed << ": " << s;
  }
  EXPECT_EQ(accepted, 0u);
}

TEST_F(AddressCheckTest, RejectsUnknownVersions) {
  for (const Real& r : real_) {
    for (int v = 2; v < 16; ++v) {
      std::string bad = r.address;
      bad[0] = static_cast<char>((bad[0] & 0xF0) | v);
      absl::Status s = CheckWorkerAddress(bad, local());
      EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kInvalidArgument) << r.name << " version " << v;
      EXPECT_NE(s.message().find("version"), std::string::npos) << s;
    }
  }
}

// Every length field set to every value that points past the end of the blob is refused; any
// other value may or may not parse, but never reads outside (the fuzzer checks that with ASan).
TEST_F(AddressCheckTest, RejectsLengthsPointingOutside) {
  for (const Real& r : real_) {
    const auto fields = LengthFields(r.address);
    ASSERT_FALSE(fields.empty()) << r.name;
    for (const Field& f : fields) {
      size_t outside = 0;
      for (int v = 0; v < 256; ++v) {
        std::string bad = r.address;
        bad[f.offset] = static_cast<char>(v);
        const size_t declared = static_cast<uint8_t>(v) & f.mask;
        if (f.offset + 1 + declared > bad.size()) {
          ++outside;
          EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(bad, local())), ErrorCode::kInvalidArgument)
              << r.name << " " << f.what << " at " << f.offset << " = " << v;
        } else {
          (void)ParseWorkerAddress(bad);
        }
      }
      if (f.mask == 0xFF) {
        EXPECT_GT(outside, 0u) << r.name << " " << f.what;
      }
    }
  }
}

// A LAST flag cleared: the walk runs on into the records after it, and past the end of the
// address unless those bytes happen to read as further records that end exactly where it does
// (a port, a PID or a segment id can: CI once drew such an address). Such an address is unpacked
// by UCX just as it is walked here, within its bounds, and its unknown transports are ignored; the
// test's own walk must then agree that it is complete. The last record's flag always runs past.
TEST_F(AddressCheckTest, RejectsMissingLastFlags) {
  for (const Real& r : real_) {
    size_t refused = 0;
    for (const Field& f : LengthFields(r.address)) {
      if (f.mask == 0xFF || !(static_cast<uint8_t>(r.address[f.offset]) & 0x80)) continue;
      std::string bad = r.address;
      bad[f.offset] = static_cast<char>(bad[f.offset] & 0x7F);
      const absl::Status s = CheckWorkerAddress(bad, local());
      if (s.ok()) {
        EXPECT_TRUE(Walk(bad).has_value())
            << r.name << " " << f.what << " at " << f.offset
            << ": accepted, but the test's own walk runs past the end";
        continue;
      }
      EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kInvalidArgument)
          << r.name << " " << f.what << " at " << f.offset << ": " << s;
      ++refused;
    }
    EXPECT_GT(refused, 0u) << r.name << ": the last record's LAST flag cleared was accepted";
  }
}

// A real address whose interface length field is cut by one, with the freed byte dropped: still
// structurally complete, but UCT would read the address past its end (it takes no length).
TEST_F(AddressCheckTest, RejectsShorterAddressForATransportWeRun) {
  const std::string& a = local();
  for (const Field& f : LengthFields(a)) {
    const uint8_t len = static_cast<uint8_t>(a[f.offset]) & f.mask;
    if (f.mask == 0xFF || len == 0) continue;
    std::string bad = a;
    bad[f.offset] = static_cast<char>(static_cast<uint8_t>(bad[f.offset]) - 1);
    bad.erase(f.offset + 1, 1);
    ASSERT_TRUE(ParseWorkerAddress(bad).ok()) << f.what;
    EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(bad, a)), ErrorCode::kInvalidArgument) << f.what;
  }
}

TEST_F(AddressCheckTest, RejectsEndpointAddresses) {
  // The last interface of the last device gets one endpoint address (length 0, lane 0|LAST).
  const std::string& a = local();
  const Field f = LengthFields(a).back();
  ASSERT_EQ(f.mask, 0x3F);
  ASSERT_EQ(static_cast<uint8_t>(a[f.offset]) & 0x3F, a.size() - f.offset - 1);
  std::string with_ep = a;
  with_ep[f.offset] = static_cast<char>(with_ep[f.offset] | 0x40);
  with_ep += std::string("\x00\x80", 2);
  auto layout = ParseWorkerAddress(with_ep);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->entries.back().ep_addrs, 1u);
  EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(with_ep, a)), ErrorCode::kInvalidArgument);
}

TEST_F(AddressCheckTest, AcceptsAnAddressWithNoTransports) {
  // v1 header, uuid, UCP_NULL_RESOURCE: UCX unpacks it; ucp_ep_create then finds no lane.
  const std::string none = std::string(1, '\0') + std::string(8, '\x11') + "\xff";
  EXPECT_TRUE(ParseWorkerAddress(none).ok());
  auto ep = server().Connect(none);
  EXPECT_EQ(ErrorCodeOf(ep.status()), ErrorCode::kDataChannelUnavailable) << ep.status();
}

// Fuzz regression (fuzz/corpus/worker_address/crash-am-seg-size-0-*): a v2 active-message
// interface with a segment size of 0 aborted UCX 1.13.1 in ucp_ep_create (ucp_ep.c:2634).
TEST_F(AddressCheckTest, RejectsTinyActiveMessageSegments) {
  for (const Real& r : real_) {
    auto layout = ParseWorkerAddress(r.address);
    ASSERT_TRUE(layout.ok());
    if (layout->version != 1) continue;
    for (const WorkerAddressEntry& e : layout->entries) {
      const size_t attrs = e.iface_addr_offset - 1 - 8;  // before the iface length byte
      const uint16_t flags = static_cast<uint8_t>(r.address[attrs + 6]) |
                             static_cast<uint8_t>(r.address[attrs + 7]) << 8;
      std::string bad = r.address;
      bad[attrs + 4] = bad[attrs + 5] = '\0';
      EXPECT_EQ(CheckWorkerAddress(bad, local()).ok(), (flags & 0x6) == 0)
          << r.name << " transport 0x" << std::hex << e.tl_name_csum;
    }
  }
}

TEST_F(AddressCheckTest, RejectsSizesOutsideTheSpec) {
  EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress("", local())), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(std::string(8193, '\0'), local())),
            ErrorCode::kInvalidArgument);
}

TEST_F(AddressCheckTest, UnparsableLocalAddressIsUnavailable) {
  EXPECT_EQ(ErrorCodeOf(CheckWorkerAddress(local(), "\x07")), ErrorCode::kDataChannelUnavailable);
}

// Accepted single-octet changes of a real address reach ucp_ep_create for real: none may abort
// the process (the next thing after structure is what UCX does with odd values).
TEST_F(AddressCheckTest, AcceptedMutationsDoNotAbortUcx) {
#ifdef AOBJ_HAS_LSAN
  // UCX 1.13.1 loses about 260 octets (libuct/libucs allocations, on its own threads' stacks)
  // for some of these addresses when the endpoint fails to connect (found by the CI sanitizer
  // stage; docs/security.md). This test is about aborts and runs in the normal stage; under
  // LeakSanitizer those UCX leaks would fail it.
  GTEST_SKIP() << "UCX leaks on failed connects; this test runs in the non-sanitizer stage";
#endif
  size_t tried = 0;
  // The octets that hold a TCP port of this process's workers are left alone: a changed port
  // can name any service listening on the host (another test's server, say), and UCX 1.13.1
  // aborts on the first octets of a service that is not UCX (tcp_ep.c:1404 on an HTTP/2 server
  // preface). That abort is a finding of its own (issue 15 note, stop 28), not what this test
  // measures, and it made the test fail when CI ran it beside a server.
  std::vector<std::pair<char, char>> ports;
  for (uint16_t p : OwnListeningPorts()) {
    ports.emplace_back(static_cast<char>(p >> 8), static_cast<char>(p & 0xff));
  }
  auto in_port = [&](const std::string& a, size_t i) {
    for (const auto& [hi, lo] : ports) {
      if (i + 1 < a.size() && a[i] == hi && a[i + 1] == lo) return true;
      if (i > 0 && a[i - 1] == hi && a[i] == lo) return true;
      if (i + 2 < a.size() && a[i + 1] == hi && a[i + 2] == lo) return true;  // 2-octet changes
    }
    return false;
  };
  for (const Real& r : real_) {
    if (r.name == "self" || r.name == "tcp-self") continue;  // self is the default's first
    const std::string& a = r.address;
    for (size_t i = 0; i < a.size(); ++i) {
      if (in_port(a, i)) continue;
      // Each bit flipped, all bits flipped, and the octet (with the next) set to 0x00 or 0xFF.
      for (int x : {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF, -1, -2, -3, -4}) {
        std::string m = a;
        if (x > 0) {
          m[i] = static_cast<char>(m[i] ^ x);
        } else {
          const char v = (x == -1 || x == -3) ? '\0' : '\xff';
          m[i] = v;
          if (x <= -3 && i + 1 < m.size()) m[i + 1] = v;
          if (m == a) continue;
        }
        if (!CheckWorkerAddress(m, local()).ok()) continue;
        ++tried;
        if (std::getenv("AOBJ_TRACE_MUTATIONS")) {
          std::fprintf(stderr, "%s: octet %zu ^ 0x%x\n", r.name.c_str(), i, x);
        }
        auto ep = server().Connect(m);
        if (ep.ok()) server().Disconnect(*ep);
      }
    }
  }
  std::printf("%zu accepted mutations connected or failed cleanly (%zu TCP ports left alone)\n",
              tried, ports.size());
  EXPECT_FALSE(ports.empty()) << "the workers' TCP listening ports were not found";
}

// Writes real addresses as fuzz seeds: AOBJ_WORKER_ADDRESS_SEEDS=fuzz/corpus/worker_address.
TEST_F(AddressCheckTest, WritesSeedsWhenAsked) {
  const char* dir = std::getenv("AOBJ_WORKER_ADDRESS_SEEDS");
  if (dir == nullptr) GTEST_SKIP() << "AOBJ_WORKER_ADDRESS_SEEDS not set";
  mkdir(dir, 0755);
  for (const Real& r : real_) {
    std::ofstream(absl::StrCat(dir, "/real-", r.name), std::ios::binary) << r.address;
  }
  std::ofstream(absl::StrCat(dir, "/real-default-truncated"), std::ios::binary)
      << local().substr(0, local().size() / 2);
}

}  // namespace
}  // namespace aobj
