// The AOBJ/1 client stack, embeddable (spec: the client side of every section).
//
// A Client holds one session: the gRPC control channel to the server, a UCX worker with its
// progress thread (the data channel's target side), and a lease renewer. Bulk data moves by the
// server's RMA into or out of Buffers: memory registered with UCX. The client never initiates
// RMA (AOBJ-TRN-001).
//
// Threading: all methods are thread-safe; any number of operations may run concurrently, from the
// caller's threads or as asynchronous operations on the Client's own threads (Operation,
// ClientOptions::async_threads). Data requests beyond what the server last granted (at most
// the session's max_in_flight) wait for a reply to free a credit, up to their deadline (spec
// section 10.1).
// Deadlines (spec section 3.7): every call carries one (ClientOptions::timeout_ms, CallOptions);
// past it the call fails DEADLINE_EXCEEDED.
// Errors: absl::Status with the AOBJ code attached (aobj/status.h, ErrorCodeOf()).
// Ownership: Buffers must be destroyed before the Client that made them; views from
// WithCallOptions() and completion callbacks must not outlive it either.
// Buffer reuse (spec section 7.5): a buffer named by a request may be reused once the call
// returned (or its Operation is done), whatever the result: either the server replied, which it
// does only after its last RMA on the buffer (AOBJ-MEM-010, AOBJ-DAT-155), or no reply came and
// the data channel was shut first (AOBJ-MEM-014; later data calls fail
// DATA_CHANNEL_UNAVAILABLE, connect a new Client).
#ifndef AOBJ_CLIENT_H_
#define AOBJ_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aobj/multipart.h"
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
  // Offer OPAQUE_ETAG and OPAQUE_PART_ETAG (spec AOBJ-OBJ-016, AOBJ-OBJ-254): objects this
  // client PUTs get an opaque version ETag ("<32 hex digits>-0") instead of the MD5 of their
  // content, the parts it uploads get opaque part ETags (so multipart objects get ETags that
  // are no longer derived from their content either), and the server skips its MD5 pass, which
  // bounds a large PUT at about 0.7 GB/s per core (docs/benchmarks.md). Leave it off where
  // something compares ETags with MD5 digests of local files.
  bool opaque_etags = false;
  bool require_hardware_protection = false;  // AOBJ-SES-014
  // Offer FAST_PATH (spec section 8.9): with a server that agrees, requests on one object or
  // bucket (GET, PUT, HEAD, DELETE, copy, multipart steps) travel as UCX active messages on the
  // data channel instead of gRPC calls, which removes the control channel's per-request cost.
  // Listings and session management stay on gRPC.
  bool fast_path = true;
  // Offer BATCH_GET (spec section 9.16): GetObjects reads many objects in one request. Without
  // it (or with a server that lacks it) GetObjects sends one Get per item.
  bool batch_get = true;
  // Offer BATCH_PUT (spec section 9.17): PutObjects stores many objects in one request. Without
  // it (or with a server that lacks it) PutObjects sends one Put per item.
  bool batch_put = true;
  Limits requested_limits;                   // zero fields: the server's
  DataChannelOptions data_channel;
  // Deadline of every call (spec section 3.7, AOBJ-CTL-010), counted from the moment the call
  // is sent; CallOptions can only shorten it. A data call that passes it without a reply shuts
  // the data channel (AOBJ-MEM-014).
  int64_t timeout_ms = 120000;
  // A call the server refused as busy (SLOW_DOWN or TOO_MANY_TRANSFERS: it did nothing) is sent
  // again, as a new request, up to this many times, after randomized pauses that double from
  // 20 ms up to 1 s, while the call's deadline allows (AOBJ-FLO-003, AOBJ-ERR-007). So is a
  // call that changes nothing (OpenSession, RenewSession, HeadBucket, HeadObject, the listings)
  // when the connection failed under it without an AOBJ reply (AOBJ-ERR-011). 0: the first
  // failure is returned at once.
  int busy_retries = 5;
  // RegisterBuffer only records the caller's region; every request that uses it registers
  // exactly its window (ucp_mem_map, ucp_rkey_pack) and unmaps it after the reply, so a
  // descriptor never outlives its request. Costs one map, one pack and, on the server, one
  // rkey unpack per request. Unmapping stops a server only where the NIC enforces
  // registrations (HARDWARE sessions); on EMULATED ones it does not (AOBJ-MEM-025).
  bool register_per_request = false;
  // How RegisterBuffer tells host memory from device memory, which it refuses
  // (UNSUPPORTED_MEMORY_TYPE; AOBJ-MEM-026; stage it with DeviceStager, aobj/device.h). Empty:
  // ClassifyMemory (the CUDA driver's answer). Set it for another accelerator runtime.
  std::function<MemoryKind(const void* data, size_t size)> classify_memory;
  // Threads that run asynchronous operations (PutAsync and the like), started on first use.
  // At most this many operations of one Client are in flight at once; later ones queue.
  int async_threads = 4;
  std::string client_name = "aobj-client/0.1";
  // Offered protocol versions; tests use these to exercise negotiation.
  uint32_t min_version = 1;
  uint32_t max_version = 1;
  bool grease = true;                        // offer a grease capability (AOBJ-EXT-002)
};

// The deadline of one operation (spec section 3.7), on top of ClientOptions::timeout_ms: the
// earliest of the three applies. A call that passes its deadline fails with DEADLINE_EXCEEDED
// (aobj/status.h), whether the client's gRPC deadline fired (no reply: for a data request the
// data channel is then shut, AOBJ-MEM-014) or the server stopped the request and said so
// (AOBJ-DAT-155). The server learns the deadline from the gRPC call and issues no more RMA for
// the request once it has passed (AOBJ-DAT-016).
struct CallOptions {
  absl::Duration timeout = absl::ZeroDuration();  // zero or less: none; from the call's start
  absl::Time deadline = absl::InfiniteFuture();   // absolute
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
  // Other gateways of the same buckets that the server listed (host:port; spec 5.11): a hint,
  // to be reached with the same credentials and TLS checks as the server itself.
  std::vector<std::string> gateways;
  // With FAST_PATH (spec 8.9): the server worker this client sends its fast requests to (a packed
  // UCX address); empty when every request goes by gRPC.
  std::string fast_path_address;
};

// Memory registered with the data channel. Move-only; the Client must outlive it. Only a Buffer
// that a Client issued (its AllocateBuffer or RegisterBuffer) may be passed to that Client: a
// buffer of another Client, or a class the caller derives from Buffer, is refused with
// INVALID_ARGUMENT before anything is sent.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // True when UCX allocated it (the fast path on hosts without an RDMA NIC).
  virtual bool allocated_by_library() const = 0;
};

// The octets a ranged GET moved (S3's Content-Range), offsets inclusive.
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t complete_length = 0;  // the object's size
};

struct TransferResult {
  ObjectInfo info;
  uint64_t bytes_transferred = 0;
  TransferPath path = TransferPath::kUnspecified;
  // Set exactly for a ranged GET (AOBJ-DAT-103).
  std::optional<ContentRange> range = std::nullopt;
};

// `length` octets of a registered Buffer from `offset`: one window of a scatter-gather GET or
// PUT. Windows fill in order (spec section 7.3); the Buffer must outlive the call.
struct BufferSlice {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Conditions on the object an operation acts on (spec section 9.10; S3's If-* headers). Empty
// strings and absent times impose nothing. An entity tag may be given with or without quotes.
struct Preconditions {
  std::string if_match;       // one ETag, or "*"
  std::string if_none_match;  // one ETag, or "*"; a PUT takes "*" only (create-only)
  std::optional<int64_t> if_modified_since_ms;    // GET and HEAD only
  std::optional<int64_t> if_unmodified_since_ms;  // GET and HEAD only
};

// One byte range of a GET (RFC 9110 section 14.1.2; spec section 9.9).
struct ByteRange {
  enum class Kind { kFirstLast, kFrom, kSuffix };
  Kind kind = Kind::kFrom;
  uint64_t first = 0;          // kFirstLast, kFrom
  uint64_t last = 0;           // kFirstLast, inclusive
  uint64_t suffix_length = 0;  // kSuffix

  static ByteRange FirstLast(uint64_t first, uint64_t last) {
    return {Kind::kFirstLast, first, last, 0};
  }
  static ByteRange From(uint64_t first) { return {Kind::kFrom, first, 0, 0}; }
  static ByteRange Suffix(uint64_t length) { return {Kind::kSuffix, 0, 0, length}; }
  // Parses S3's header form: "bytes=first-last", "bytes=first-" or "bytes=-length".
  // INVALID_ARGUMENT for anything else, including several ranges and first > last.
  static absl::StatusOr<ByteRange> Parse(std::string_view text);
  std::string ToString() const;  // "bytes=0-99"
};

struct PutOptions {
  std::string content_type;
  // S3 user metadata (x-amz-meta-*): names are stored lower-case; at most 2 KiB of names and
  // values (METADATA_TOO_LARGE beyond; spec section 9.8).
  std::map<std::string, std::string> user_metadata;
  // if_none_match "*" (create-only: PRECONDITION_FAILED when the key exists, atomic against
  // concurrent PUTs) or if_match (PRECONDITION_FAILED when the ETag differs, NO_SUCH_KEY when
  // the key is absent).
  Preconditions conditions;
  CallOptions call;  // this operation's deadline
};

struct GetOptions {
  std::optional<ByteRange> range;  // absent: the whole object
  // PRECONDITION_FAILED (If-Match, If-Unmodified-Since) or NOT_MODIFIED (If-None-Match,
  // If-Modified-Since), evaluated on the version the GET would move. NOT_MODIFIED means that the
  // copy the caller holds is current, not that the server failed (AOBJ-ERR-101).
  Preconditions conditions;
  CallOptions call;  // this operation's deadline
};

// One ListObjectsV2 request (spec section 9.12).
struct ListObjectsOptions {
  std::string prefix;
  std::string delimiter;           // e.g. "/": keys are grouped into common prefixes
  std::string start_after;
  std::string continuation_token;  // from the previous page; wins over start_after
  uint32_t max_keys = 0;           // 0: the server's default (1000); at most 1000
};

// One page of a listing, or (ListAllObjects) all of them.
struct ObjectListing {
  std::vector<ObjectSummary> objects;       // in byte order of their keys
  std::vector<std::string> common_prefixes;  // in byte order
  bool is_truncated = false;
  std::string next_continuation_token;  // opaque; pass back unchanged
};

struct DeleteObjectsResult {
  std::vector<std::string> deleted;                            // empty when quiet
  std::vector<std::pair<std::string, absl::Status>> errors;  // per key
};

// One item of a batched read (GetObjects, spec section 9.16): an object, or a range of it, and
// the region of a registered Buffer its octets go to, from the region's start. Regions of one
// call must not overlap.
struct BatchGetItem {
  std::string key;
  std::optional<ByteRange> range;  // absent: the whole object
  BufferSlice destination;
};

// One result per item, in the items' order: the transfer (verified: byte count and checksum), or
// the item's own error (NO_SUCH_KEY, INVALID_RANGE, DESCRIPTOR_TOO_SMALL, BAD_DIGEST, ...).
using BatchGetResults = std::vector<absl::StatusOr<TransferResult>>;

// One item of a batched write (PutObjects, spec section 9.17): a key, and the region of a
// registered Buffer that holds the object's content. Regions may overlap; keys of one call must
// differ.
struct BatchPutItem {
  std::string key;
  BufferSlice source;
  std::string content_type;  // at most 256 octets
};

// One result per item, in the items' order: the new object (its ETag, size, checksum; the server
// received exactly the item's octets: AOBJ-OBJ-252), or the item's own error (BAD_DIGEST,
// STORAGE_ERROR, ...: nothing was stored under that key).
using BatchPutResults = std::vector<absl::StatusOr<ObjectInfo>>;

// CopyObject (spec section 9.14).
struct CopyOptions {
  // false (S3's COPY): the copy keeps the source's content type and user metadata. true (S3's
  // REPLACE): it takes content_type and user_metadata below.
  bool replace_metadata = false;
  std::string content_type;
  std::map<std::string, std::string> user_metadata;
  Preconditions source_conditions;  // on the source (x-amz-copy-source-if-*): 412 on failure
  Preconditions conditions;         // on the destination, as for Put
};

// One asynchronous operation of a Client (PutAsync, GetAsync, HeadAsync, DeleteAsync,
// ListObjectsAsync, UploadPartAsync, UploadMultipartAsync).
//
// The operation runs on one of the Client's async threads; several run at once
// (ClientOptions::async_threads). Its result is set exactly once, then done() turns true, Wait()
// returns, and then the completion callback (if any) runs on the async thread. The callback must
// not block on other operations of the same Client for long: it holds one async thread.
//
// The buffer guarantee (spec section 7.5): once the operation is done, whatever its result, the
// server no longer touches its windows. A reply, success or error, is sent only after every RMA
// operation of the request completed (AOBJ-MEM-010, AOBJ-DAT-155); an operation that ends
// without a reply shuts the data channel first (AOBJ-MEM-014). Cancel() waits for one of the
// two, so when Cancel() returns the caller may reuse or free the buffers.
//
// Threading: every method is thread-safe. Ownership: the Client must outlive the operation's
// completion (destroying the Client cancels queued operations and waits for running ones); the
// handle itself may outlive the Client.
template <class T>
class Operation {
 public:
  using Callback = std::function<void(const absl::StatusOr<T>&)>;
  virtual ~Operation() = default;

  // Cancels the operation and returns when it is done. Not yet started: it completes with
  // CANCELLED and nothing is sent. Running: the client names the request's nonce in an
  // `aobj-cancel` entry on a RenewSession call (AOBJ-DAT-156); the server stops issuing RMA for
  // it between steps (AOBJ-DAT-016) and, after every RMA operation it issued has completed, ends
  // it with CANCELLED (AOBJ-DAT-155); that reply is the acknowledgment this waits for. If no
  // reply comes before the operation's deadline, the data channel is shut (AOBJ-MEM-014) and
  // every later data operation of this Client fails DATA_CHANNEL_UNAVAILABLE. An operation that
  // finished before the server saw the cancellation keeps its own result. Idempotent.
  virtual void Cancel() = 0;
  virtual bool done() const = 0;
  // Blocks until done; the reference stays valid as long as the handle.
  virtual const absl::StatusOr<T>& Wait() = 0;
  // Waits at most `timeout`; true when done.
  virtual bool WaitFor(absl::Duration timeout) = 0;
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
  // Registers caller memory; the caller keeps it alive longer than the Buffer. Host memory only:
  // UNSUPPORTED_MEMORY_TYPE for CUDA device or managed memory (ClientOptions::classify_memory),
  // which DeviceStager (aobj/device.h) moves through host memory instead.
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

  // ---- S3 object semantics (spec sections 9.8 to 9.14) ----
  // Stores the concatenation of `source` (in order) under bucket/key; one descriptor per slice
  // (several need MULTI_DESCRIPTOR), inline when small. Empty slices are skipped.
  virtual absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                             const std::vector<BufferSlice>& source,
                                             const PutOptions& options) = 0;
  // Reads bucket/key, or options.range of it, into buffer from offset 0.
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             Buffer& buffer, const GetOptions& options) = 0;
  // Reads bucket/key (or a range) into the windows of `destination` in order (scatter-gather):
  // octets past the body keep their contents. DESCRIPTOR_TOO_SMALL when they do not hold it.
  // Verifies byte count, range and checksum (AOBJ-DAT-004, AOBJ-DAT-105).
  virtual absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                             const std::vector<BufferSlice>& destination,
                                             const GetOptions& options) = 0;
  virtual absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                          const Preconditions& conditions) = 0;
  // Every bucket, in byte order of their names (pages through the server's listing).
  virtual absl::StatusOr<std::vector<BucketSummary>> ListBuckets() = 0;
  // One page of ListObjectsV2.
  virtual absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                                    const ListObjectsOptions& options) = 0;
  // Pages through ListObjectsV2 from `options` until the listing ends or `max_entries`
  // objects and common prefixes were collected (then is_truncated and next_continuation_token
  // tell where to go on).
  absl::StatusOr<ObjectListing> ListAllObjects(const std::string& bucket,
                                               ListObjectsOptions options,
                                               size_t max_entries = SIZE_MAX);
  // Batch delete (S3 DeleteObjects). More than 1000 keys go as several requests. A missing key
  // counts as deleted; per-key failures are in errors; the call fails only when a whole request
  // does (e.g. NO_SUCH_BUCKET).
  virtual absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                            const std::vector<std::string>& keys,
                                                            bool quiet) = 0;
  // Batched reads (spec section 9.16): many objects or ranges of one bucket, each into its own
  // region, in as few GetObjects requests as the session's limits allow (up to 1000 items and
  // max_descriptors distinct buffers a request; one flush each). One item's failure is only its
  // own. The call fails as a whole when a request does (NO_SUCH_BUCKET; INVALID_ARGUMENT for
  // overlapping regions or a slice outside its buffer, before anything is sent; a data-channel
  // failure, after which the regions' contents are unspecified). Without BATCH_GET (an older
  // server) the items go as single Gets, with the same results.
  virtual absl::StatusOr<BatchGetResults> GetObjects(const std::string& bucket,
                                                     const std::vector<BatchGetItem>& items,
                                                     const CallOptions& call = {}) = 0;
  // Batched writes (spec section 9.17): many objects of one bucket, each from its own region, in
  // as few PutObjects requests as the session's limits allow (up to 1000 items and
  // max_descriptors distinct buffers a request; one flush of reads each). Each item is stored as
  // a Put of its own (atomic per object, as S3's PUT), with the session's ETag kind
  // (OPAQUE_ETAG) and no user metadata; one item's failure is only its own. The call fails as a
  // whole when a request does: NO_SUCH_BUCKET, ACCESS_DENIED; INVALID_ARGUMENT for two items of
  // one key or a slice outside its buffer, before anything is sent; a data-channel failure,
  // after which the items of that request and the later ones are in an unknown state (stored
  // or not, as after a Put whose reply was lost). Without BATCH_PUT the items go as single Puts.
  virtual absl::StatusOr<BatchPutResults> PutObjects(const std::string& bucket,
                                                     const std::vector<BatchPutItem>& items,
                                                     const CallOptions& call = {}) = 0;
  // Server-side copy; no data moves through the client. Returns the new object's info.
  virtual absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket,
                                          const std::string& source_key,
                                          const std::string& bucket, const std::string& key,
                                          const CopyOptions& options) = 0;

  // Multipart upload (spec section 9.15), with S3's names and rules. The object appears only at
  // CompleteMultipartUpload. Errors: NO_SUCH_UPLOAD, INVALID_PART, INVALID_PART_ORDER,
  // ENTITY_TOO_SMALL, TOO_MANY_PARTS, TOO_MANY_UPLOADS, plus those of Put.
  virtual absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                           const std::string& key,
                                                           const PutOptions& options = {}) = 0;
  // Uploads buffer.data()[offset, offset + size) as part `part_number` (1..10000); the server
  // reads exactly that window (inline when small). The window must not change until return.
  // Verifies the server's byte count and checksum (AOBJ-DAT-154).
  virtual absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket,
                                                      const std::string& key,
                                                      const std::string& upload_id,
                                                      uint32_t part_number, const Buffer& buffer,
                                                      uint64_t offset, uint64_t size) = 0;
  // Assembles the listed parts (ascending part numbers) into the object. `conditions` as for
  // Put: if_none_match "*" (create-only) or if_match, checked atomically at the commit; when
  // they fail the upload stays in progress. `full_crc32c`, when given, is the CRC32C of the whole
  // content (the parts' UploadPartResult::crc32c combined): the server checks it before the
  // commit and answers BAD_DIGEST, leaving the upload in progress, when it differs.
  virtual absl::StatusOr<ObjectInfo> CompleteMultipartUpload(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      const std::vector<CompletedPart>& parts, const Preconditions& conditions = {},
      std::optional<uint32_t> full_crc32c = std::nullopt) = 0;
  virtual absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                            const std::string& upload_id) = 0;
  // One page of the upload's parts above `part_number_marker` (max_parts 0: 1000).
  virtual absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id,
                                              uint32_t part_number_marker = 0,
                                              uint32_t max_parts = 0) = 0;
  // One page of the bucket's uploads in progress.
  virtual absl::StatusOr<UploadsPage> ListMultipartUploads(
      const std::string& bucket, const ListUploadsOptions& options = {}) = 0;
  // Stores buffer.data()[0, size) under bucket/key as a multipart upload of `part_size`-byte
  // parts (the last one shorter): Create (with put's content type and user metadata), the parts
  // (several in flight, up to options.parallelism), Complete (with put's conditions). On any
  // failure it aborts the upload and returns the first error. INVALID_ARGUMENT when part_size
  // is 0 or the object needs more than 10000 parts.
  virtual absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket,
                                                     const std::string& key, const Buffer& buffer,
                                                     uint64_t size, uint64_t part_size,
                                                     const PutOptions& put = {},
                                                     const MultipartUploadOptions& options = {}) = 0;

  // ---- Deadlines and asynchronous operations (spec sections 3.7 and 7.5) ----
  // A view of this Client whose every blocking call (and every asynchronous operation started
  // through it, counted from its start) carries `call`'s deadline as well. The view borrows this
  // Client, which must outlive it; it shares the session, buffers and async threads. Its Close()
  // closes the session.
  virtual std::unique_ptr<Client> WithCallOptions(const CallOptions& call) = 0;

  // Asynchronous Put (first overload above): the buffer must stay unchanged and alive until the
  // operation is done. `done` (may be empty) runs on an async thread after completion.
  virtual std::shared_ptr<Operation<TransferResult>> PutAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      const PutOptions& options = {}, Operation<TransferResult>::Callback done = nullptr) = 0;
  // Asynchronous Get, whole or ranged (options.range), into buffer from offset 0: the buffer
  // must stay alive, and must not be read, until the operation is done.
  virtual std::shared_ptr<Operation<TransferResult>> GetAsync(
      const std::string& bucket, const std::string& key, Buffer& buffer,
      const GetOptions& options = {}, Operation<TransferResult>::Callback done = nullptr) = 0;
  virtual std::shared_ptr<Operation<ObjectInfo>> HeadAsync(
      const std::string& bucket, const std::string& key, const Preconditions& conditions = {},
      const CallOptions& call = {}, Operation<ObjectInfo>::Callback done = nullptr) = 0;
  virtual std::shared_ptr<Operation<std::monostate>> DeleteAsync(
      const std::string& bucket, const std::string& key, const CallOptions& call = {},
      Operation<std::monostate>::Callback done = nullptr) = 0;
  // One page of ListObjectsV2, asynchronously.
  virtual std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call = {},
      Operation<ObjectListing>::Callback done = nullptr) = 0;
  // UploadPart, asynchronously: the window must stay unchanged and alive until it is done.
  // Several parts of one upload may be in flight (up to the session's max_in_flight).
  virtual std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
      const CallOptions& call = {}, Operation<UploadPartResult>::Callback done = nullptr) = 0;
  // UploadMultipart (the whole upload: create, parts, complete; aborted on failure),
  // asynchronously; the buffer must stay unchanged and alive until it is done. Cancel(): no
  // part is sent afterwards, the parts in flight finish or are stopped, the upload is aborted,
  // and Cancel() returns once no part can touch the buffer any more.
  virtual std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      uint64_t part_size, const PutOptions& put = {}, const MultipartUploadOptions& options = {},
      Operation<ObjectInfo>::Callback done = nullptr) = 0;

  // Renews the lease now (the client also renews in the background at a third of the lease).
  virtual absl::Status Renew() = 0;
  // Closes the session; later calls fail with NO_SUCH_SESSION. Idempotent. Once the server has
  // answered SESSION_EXPIRED or NO_SUCH_SESSION, later calls fail with that code without being
  // sent and Close() sends nothing (AOBJ-SES-022).
  virtual absl::Status Close() = 0;
};

}  // namespace aobj

#endif  // AOBJ_CLIENT_H_
