// The input language of the `stateful` fuzz target (stateful_fuzzer.cc): a setup record, then a
// sequence of steps, each one action against one server RequestHandler and its parameters.
//
// One definition, two directions: VisitSetup() and VisitStep() name every field with its range
// in input order. The fuzzer runs them with a reader over FuzzedDataProvider (the fields are
// consumed as integers from the end of the input); make_seeds.cc runs them with ScriptWriter,
// which emits the bytes that the reader decodes back into the same values. So hand-written
// scenarios stay valid when a field is added: both sides change together.
#ifndef AOBJ_FUZZ_STATEFUL_SCRIPT_H_
#define AOBJ_FUZZ_STATEFUL_SCRIPT_H_

#include <algorithm>
#include <cstdint>
#include <string>

namespace aobj_fuzz {

// Actions. Append only: seeds in corpus/stateful/ name actions by number.
enum Op : uint32_t {
  kOpOpen = 0,      // OpenSession (with data-channel faults on Connect / GetProtection)
  kOpClose,         // CloseSession
  kOpRenew,         // RenewSession
  kOpPut,           // PutObject, RMA or inline
  kOpGet,           // GetObject, RMA or inline, whole or a range
  kOpHead,          // HeadObject
  kOpDelete,        // DeleteObject
  kOpDeleteMany,    // DeleteObjects
  kOpList,          // ListObjectsV2, every page
  kOpCopy,          // CopyObject
  kOpMpCreate,      // CreateMultipartUpload
  kOpMpPart,        // UploadPart, RMA or inline
  kOpMpComplete,    // CompleteMultipartUpload
  kOpMpAbort,       // AbortMultipartUpload
  kOpMpListParts,   // ListParts
  kOpAdvance,       // the fake clock moves forward
  kOpExpire,        // the clock moves past the lease, then the server's expiry sweep runs
  kOpSweep,         // the expiry sweep runs
  kOpLoseEndpoint,  // the data channel reports a session's endpoint lost from now on
  kOpForeign,       // a request on a session, signed by the other principal
  kOpGetMany,       // GetObjects (batched reads) of some keys
  kOpPutMany,       // PutObjects (batched writes) of some keys
  kOpCount,
};

// What the fake data channel does during the next RMA request (kOpPut, kOpGet, kOpMpPart).
enum Fault : uint32_t {
  kFaultNone = 0,
  kFaultFailAt,       // operation number `fault_at` fails (the ones before it moved their bytes);
                      // the endpoint is failed from then on (spec 13.7, AOBJ-DAT-158)
  kFaultLoseAt,       // the endpoint is lost at operation `fault_at`
  kFaultCorruptAt,    // operation `fault_at` moves one wrong byte and reports success
  kFaultHookAt,       // before operation `fault_at`, a nested action runs (`hook`)
  kFaultFailBatches,  // the next `fault_at` + 1 batches fail before moving anything
  kFaultCount,
};

// Nested actions run by kFaultHookAt in the middle of a transfer, as a concurrent request would.
enum Hook : uint32_t {
  kHookClose = 0,       // CloseSession of the transferring session
  kHookExpire,          // the clock passes the lease and the expiry sweep runs
  kHookPutSameKey,      // an inline PutObject of the same key (another body)
  kHookDeleteSameKey,   // DeleteObject of the same key
  kHookAbortUpload,     // AbortMultipartUpload of the upload being written (UploadPart)
  kHookRenew,           // RenewSession
  kHookRecreateBucket,  // DeleteBucket and CreateBucket of the bucket (when it holds nothing)
  kHookCount,
};

inline constexpr uint32_t kSessions = 4;  // session slots
inline constexpr uint32_t kKeys = 5;      // k0 k1 k2 d/k3 d/k4
inline constexpr uint32_t kUploads = 4;   // upload slots
inline constexpr uint32_t kParts = 4;     // part numbers 1..4 (0 and 5 are invalid probes)

struct Setup {
  uint32_t hide_fast_paths = 0;  // 1: the store offers neither DirectBuffer nor ContiguousView
  uint32_t staging = 0;          // staging buffer: 512 << staging
  uint32_t rma_piece = 0;        // max RMA piece: 0: 64 MiB, else 256 << rma_piece
};

struct Step {
  uint32_t op = 0;
  uint32_t session = 0;
  uint32_t key = 0;
  uint32_t key2 = 0;
  uint32_t len_class = 0;  // 0: empty, 1: 1..64, 2: 65..4096, 3: 4097..40000
  uint32_t len = 0;
  uint32_t seed = 0;  // body content
  uint32_t inline_path = 0;
  uint32_t windows = 1;    // descriptors
  uint32_t slack = 0;      // 0: exact, 1: spare room, 2: one byte short
  uint32_t address = 0;    // where the windows lie (see stateful_fuzzer.cc)
  uint32_t algorithm = 0;  // 0: unspecified, 1: CRC32C, 2: CRC64NVME
  uint32_t bad_checksum = 0;
  uint32_t precondition = 0;  // 0: none, 1: If-None-Match *, 2: If-Match current, 3: If-Match other
  uint32_t fault = 0;
  uint32_t fault_at = 0;
  uint32_t hook = 0;
  uint32_t range = 0;  // 0: none, 1: first-last, 2: from, 3: suffix
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t part = 1;
  uint32_t upload = 0;
  uint32_t parts_mask = 0;
  uint32_t list_twist = 0;        // Complete: 0 as is, 1 swapped, 2 wrong ETag, 3 wrong key
  uint32_t access_key = 0;        // Open: 0 or 1
  // Open: bit 0 inline, bit 1 multi-descriptor, bit 2 CRC64NVME, bit 3 opaque ETag, bit 4 leaves
  // BATCH_GET and BATCH_PUT out, bit 5 opaque part ETag
  uint32_t caps = 0;
  uint32_t inline_threshold = 0;  // Open: 0 default, 1: 64, 2: 4096
  uint32_t max_in_flight = 0;     // Open: 0 default, else this many
  uint32_t require_hardware = 0;
  uint32_t channel = 0;    // Open: 0 fine, 1 Connect fails, 2 GetProtection fails, 3 hardware
  // Open: ConfirmEndpoint after it with 0 the right proof, 1 none (the endpoint stays
  // unconfirmed), 2 a wrong proof, 3 a proof of the wrong length (AOBJ-SES-026/027).
  uint32_t confirm = 0;
  uint32_t millis = 0;     // Advance
  uint32_t prefix = 0;     // List: 0 "", 1 "d/", 2 "k"
  uint32_t delimiter = 0;  // List: "/" when 1
  uint32_t page = 0;       // List: max_keys (0: default)
};

template <class IO>
void VisitSetup(IO& io, Setup& s) {
  io(s.hide_fast_paths, 0, 1);
  io(s.staging, 0, 3);
  io(s.rma_piece, 0, 4);
}

// The fields of one step, in input order; only those its action uses.
template <class IO>
void VisitStep(IO& io, Step& s) {
  io(s.op, 0, kOpCount - 1);
  auto body = [&] {
    io(s.len_class, 0, 3);
    io(s.len, 0, 40000);
    io(s.seed, 0, 255);
    io(s.inline_path, 0, 1);
    io(s.windows, 1, 4);
    io(s.slack, 0, 2);
    io(s.address, 0, 3);
    io(s.algorithm, 0, 2);
    io(s.bad_checksum, 0, 7);  // 1 in 8 carries a wrong checksum
  };
  auto fault = [&] {
    io(s.fault, 0, kFaultCount - 1);
    io(s.fault_at, 0, 7);
    io(s.hook, 0, kHookCount - 1);
  };
  switch (s.op) {
    case kOpOpen:
      io(s.session, 0, kSessions - 1);
      io(s.access_key, 0, 1);
      io(s.caps, 0, 63);
      io(s.inline_threshold, 0, 2);
      io(s.max_in_flight, 0, 3);
      io(s.require_hardware, 0, 1);
      io(s.channel, 0, 3);
      io(s.confirm, 0, 3);
      break;
    case kOpClose:
    case kOpRenew:
    case kOpLoseEndpoint:
      io(s.session, 0, kSessions - 1);
      break;
    case kOpPut:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      body();
      io(s.precondition, 0, 3);
      fault();
      break;
    case kOpGet:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      io(s.inline_path, 0, 1);
      io(s.windows, 1, 4);
      io(s.slack, 0, 2);
      io(s.address, 0, 3);
      io(s.algorithm, 0, 2);
      io(s.range, 0, 3);
      io(s.first, 0, 40000);
      io(s.last, 0, 40000);
      fault();
      break;
    case kOpHead:
    case kOpDelete:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      break;
    case kOpDeleteMany:
      io(s.session, 0, kSessions - 1);
      io(s.parts_mask, 0, (1u << kKeys) - 1);  // which keys
      break;
    case kOpGetMany:
      io(s.session, 0, kSessions - 1);
      io(s.parts_mask, 0, (1u << kKeys) - 1);  // which keys
      io(s.windows, 1, 4);
      io(s.slack, 0, 2);  // each region: exact, spare room, one octet short
      io(s.address, 0, 3);
      io(s.algorithm, 0, 2);
      io(s.range, 0, 1);  // 1: the last item reads a range (first..last)
      io(s.first, 0, 40000);
      io(s.last, 0, 40000);
      fault();
      break;
    case kOpPutMany:
      io(s.session, 0, kSessions - 1);
      io(s.parts_mask, 0, (1u << kKeys) - 1);  // which keys
      io(s.key, 0, kKeys - 1);                 // the key a nested PUT (kHookPutSameKey) writes
      io(s.len_class, 0, 3);
      io(s.len, 0, 40000);
      io(s.seed, 0, 255);
      io(s.windows, 1, 4);
      io(s.address, 0, 3);
      io(s.algorithm, 0, 2);     // 0: left unspecified (INVALID_ARGUMENT, AOBJ-OBJ-247)
      io(s.bad_checksum, 0, 7);  // 1: the first item carries a wrong checksum
      fault();
      break;
    case kOpList:
      io(s.session, 0, kSessions - 1);
      io(s.prefix, 0, 2);
      io(s.delimiter, 0, 1);
      io(s.page, 0, 3);
      break;
    case kOpCopy:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      io(s.key2, 0, kKeys - 1);
      io(s.precondition, 0, 3);
      break;
    case kOpMpCreate:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      io(s.upload, 0, kUploads - 1);
      break;
    case kOpMpPart:
      io(s.session, 0, kSessions - 1);
      io(s.upload, 0, kUploads - 1);
      io(s.part, 0, kParts + 1);
      body();
      fault();
      break;
    case kOpMpComplete:
      io(s.session, 0, kSessions - 1);
      io(s.upload, 0, kUploads - 1);
      io(s.parts_mask, 0, (1u << kParts) - 1);
      io(s.list_twist, 0, 3);
      io(s.precondition, 0, 3);
      break;
    case kOpMpAbort:
    case kOpMpListParts:
      io(s.session, 0, kSessions - 1);
      io(s.upload, 0, kUploads - 1);
      break;
    case kOpAdvance:
      io(s.millis, 0, 65535);
      break;
    case kOpForeign:
      io(s.session, 0, kSessions - 1);
      io(s.key, 0, kKeys - 1);
      break;
    default:
      break;
  }
}

// The body length a step names: its class bounds `len`.
inline uint64_t BodyLength(const Step& s) {
  switch (s.len_class) {
    case 0:
      return 0;
    case 1:
      return 1 + s.len % 64;
    case 2:
      return 65 + s.len % (4096 - 64);
    default:
      return 4097 + s.len % (40000 - 4096);
  }
}

// Encodes field values as the bytes FuzzedDataProvider::ConsumeIntegralInRange<uint32_t> reads
// back: it takes bytes from the end of the input, most significant first, as many as the range
// needs, and reduces them modulo the range size.
class ScriptWriter {
 public:
  void operator()(uint32_t& v, uint32_t lo, uint32_t hi) {
    const uint32_t range = hi - lo;
    const uint32_t x = std::clamp(v, lo, hi) - lo;
    int n = 0;
    for (int offset = 0; offset < 32 && (range >> offset) > 0; offset += 8) ++n;
    for (int i = n - 1; i >= 0; --i) consumed_.push_back(static_cast<char>(x >> (8 * i)));
  }
  void Add(Setup s) { VisitSetup(*this, s); }
  void Add(Step s) { VisitStep(*this, s); }
  // The input: the bytes in the order they are consumed, reversed.
  std::string Bytes() const { return std::string(consumed_.rbegin(), consumed_.rend()); }

 private:
  std::string consumed_;
};

}  // namespace aobj_fuzz

#endif  // AOBJ_FUZZ_STATEFUL_SCRIPT_H_
