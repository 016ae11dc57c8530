// The AOBJ/1 client stack, embeddable (spec: the client side of every section).
//
// A Client holds one session: the gRPC control channel to the server, a UCX worker with its
// progress thread (the data channel's target side), and a lease renewer. Bulk data moves by the
// server's RMA into or out of Buffers: memory registered with UCX. The client never initiates
// RMA (AOBJ-TRN-001).
//
// Threading: all methods are thread-safe; operations may run concurrently up to the session's
// max_in_flight (beyond it the server answers TOO_MANY_TRANSFERS).
// Errors: absl::Status with the AOBJ code attached (aobj/status.h, ErrorCodeOf()).
// Ownership: Buffers must be destroyed before the Client that made them.
#ifndef AOBJ_CLIENT_H_
#define AOBJ_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/store.h"
#include "aobj/types.h"

namespace aobj {

struct ClientOptions {
  std::string endpoint = "127.0.0.1:7878";  // the server's control channel
  TlsOptions tls;                            // plaintext unless tls.enabled
  std::string access_key_id;
  std::string secret;                        // used to derive the signing key; never sent
  ChecksumAlgorithm checksum = ChecksumAlgorithm::kCrc32c;
  bool allow_inline = true;                  // small bodies inside control messages
  bool require_hardware_protection = false;  // AOBJ-SES-014
  Limits requested_limits;                   // zero fields: the server's
  DataChannelOptions data_channel;
  int64_t timeout_ms = 120000;               // per operation
  std::string client_name = "aobj-client/0.1";
  // Offered protocol versions; tests use these to exercise negotiation.
  uint32_t min_version = 1;
  uint32_t max_version = 1;
  bool grease = true;                        // offer a grease capability (AOBJ-EXT-002)
};

// What the server granted at OpenSession.
struct SessionInfo {
  std::string session_id;  // hex
  uint32_t version = 0;
  std::vector<uint32_t> capabilities;
  Limits limits;
  MemoryProtection protection = MemoryProtection::kUnspecified;
  int64_t lease_ms = 0;
  std::string server_name;
};

// Memory registered with the data channel. Move-only; the Client must outlive it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // True when UCX allocated it (the fast path on hosts without an RDMA NIC).
  virtual bool allocated_by_library() const = 0;
};

struct TransferResult {
  ObjectInfo info;
  uint64_t bytes_transferred = 0;
  TransferPath path = TransferPath::kUnspecified;
};

struct PutOptions {
  std::string content_type;
};

class Client {
 public:
  // Opens a session (AOBJ-SES-001). Errors: UNSUPPORTED_VERSION, auth errors,
  // DATA_CHANNEL_UNAVAILABLE, ACCESS_DENIED, INTERNAL when the server is unreachable.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  virtual ~Client() = default;

  virtual const SessionInfo& session() const = 0;

  // A buffer of `size` bytes allocated and registered by UCX (the fast path).
  virtual absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) = 0;
  // Registers caller memory; the caller keeps it alive longer than the Buffer.
  virtual absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) = 0;

  // Stores buffer.data()[0, size) under bucket/key. The buffer must not change until return.
  // Verifies the server's byte count and checksum (AOBJ-DAT-004).
  virtual absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             const PutOptions& options = {}) = 0;
  // Reads bucket/key into buffer (from offset 0); DESCRIPTOR_TOO_SMALL when it does not fit
  // (info.size tells the size needed). Verifies byte count and checksum (AOBJ-DAT-004).
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             Buffer& buffer) = 0;
  virtual absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) = 0;
  virtual absl::Status Delete(const std::string& bucket, const std::string& key) = 0;
  virtual absl::Status CreateBucket(const std::string& bucket) = 0;
  virtual absl::Status DeleteBucket(const std::string& bucket) = 0;
  virtual absl::Status HeadBucket(const std::string& bucket) = 0;
  // Renews the lease now (the client also renews in the background at a third of the lease).
  virtual absl::Status Renew() = 0;
  // Closes the session; later calls fail with NO_SUCH_SESSION. Idempotent.
  virtual absl::Status Close() = 0;
};

}  // namespace aobj

#endif  // AOBJ_CLIENT_H_
