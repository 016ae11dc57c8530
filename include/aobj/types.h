// Plain value types shared by the client and server APIs (spec "Registries").
//
// Threading: plain values, no shared state; copy freely. Enum values equal their aobj.v1 wire
// counterparts, and values the library does not know may arrive from a peer: treat them as
// the spec says for each field (AOBJ-DAT-031, AOBJ-EXT-004), never as undefined behaviour.
#ifndef AOBJ_TYPES_H_
#define AOBJ_TYPES_H_

#include <cstdint>
#include <string>

namespace aobj {

// End-to-end checksum algorithms (AOBJ-DAT-021). Values equal aobj.v1.ChecksumAlgorithm.
enum class ChecksumAlgorithm : uint32_t {
  kNone = 0,
  kCrc32c = 1,
  kCrc64Nvme = 2,
};

// Which path moved an operation's bytes (AOBJ-DAT-030). Values equal aobj.v1.TransferPath.
enum class TransferPath : uint32_t {
  kUnspecified = 0,
  kNone = 1,    // zero bytes moved
  kInline = 2,  // inside the control message
  kRma = 3,     // one-sided RMA on the UCX data channel
};
const char* TransferPathName(TransferPath path);

// Whether the data channel enforces memory registration in hardware (AOBJ-SES-013).
enum class MemoryProtection : uint32_t {
  kUnspecified = 0,
  kHardware = 1,
  kEmulated = 2,
};

// Session limits (spec section 5.4). In requests, zero means "the server's default"; the
// effective value of each is the smaller of the client's and the server's (AOBJ-SES-006).
struct Limits {
  uint64_t max_transfer_bytes = 0;
  uint32_t max_in_flight = 0;
  uint64_t inline_threshold = 0;
  uint32_t max_descriptors = 0;
  uint32_t max_rkey_bytes = 0;
  // Announced by the server, never requested; 0: not announced. Every multipart part but the
  // last must hold at least min_part_size octets (AOBJ-OBJ-235); keys hold at most
  // max_key_bytes octets, a listing page at most max_list_page entries (AOBJ-OBJ-255); a part at
  // most max_part_size octets, a multipart object at most max_object_size (AOBJ-OBJ-256).
  uint64_t min_part_size = 0;
  uint32_t max_key_bytes = 0;
  uint32_t max_list_page = 0;
  uint64_t max_part_size = 0;
  uint64_t max_object_size = 0;
  // Announced: every change a successful reply reports survives power loss on the server's host
  // (AOBJ-OBJ-263); false promises only that it is visible.
  bool durable_commits = false;
};

// What memory a pointer points at (aobj/device.h, ClassifyMemory).
enum class MemoryKind {
  kHost,         // ordinary or page-locked host memory (or no CUDA driver in the process)
  kCudaDevice,   // cudaMalloc and the like: not addressable by the CPU
  kCudaManaged,  // cudaMallocManaged: migrates between host and device on access
};

// UCX data-channel settings. The environment (UCX_NET_DEVICES, UCX_TLS) overrides them.
struct DataChannelOptions {
  std::string net_devices = "lo";  // loopback only unless told otherwise
  std::string transports;          // UCX_TLS; empty = UCX's default
  // Server: a peer on a network lane that stops answering is found dead within about this
  // interval (UCX keepalive on endpoints in error mode PEER; UCX_KEEPALIVE_INTERVAL overrides).
  // 0 = UCX's default (20 s).
  int64_t keepalive_ms = 5000;
};

// TLS on the control channel (spec section "Transport security"). Files are PEM.
struct TlsOptions {
  bool enabled = false;
  // Server: its certificate chain and private key. Client: its own, for mutual TLS.
  std::string cert_file;
  std::string key_file;
  // Server: the CA that signs client certificates; setting it requires and verifies a client
  // certificate on every connection (mutual TLS). Client: the CA that signs the server's
  // certificate (empty: the system roots).
  std::string ca_file;
  // Client: the name the server certificate must carry, when it differs from the endpoint host.
  std::string server_name_override;
};

}  // namespace aobj

#endif  // AOBJ_TYPES_H_
