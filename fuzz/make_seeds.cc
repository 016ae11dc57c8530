// Writes the seed corpora of the fuzz targets from real messages: `aobj_fuzz_seeds <corpus dir>`.
// Run it when a message changes and check the files in (fuzz/README.md).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "golden/confined_frames.h"
#include "golden/fast_frames.h"
#include "golden/rados_records.h"
#include "stateful_script.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace {

std::string dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string d = dir + "/" + target;
  mkdir(d.c_str(), 0755);
  std::ofstream(d + "/" + name, std::ios::binary) << bytes;
}

// stateful: scripts of steps (stateful_script.h), encoded as the fuzzer decodes them.
void WriteScript(const std::string& name, aobj_fuzz::Setup setup,
                 std::initializer_list<aobj_fuzz::Step> steps) {
  aobj_fuzz::ScriptWriter w;
  w.Add(setup);
  for (const aobj_fuzz::Step& s : steps) w.Add(s);
  Write("stateful", name, w.Bytes());
}

void StatefulSeeds() {
  using namespace aobj_fuzz;  // NOLINT: the script's vocabulary
  const Step open0{.op = kOpOpen, .session = 0, .caps = 7};
  const Step open1{.op = kOpOpen, .session = 1, .access_key = 1, .caps = 7};
  // A PUT of `len_class`/`len` bytes of body `seed` to key `key` over `windows` descriptors.
  auto put = [](uint32_t key, uint32_t len_class, uint32_t len, uint32_t seed, uint32_t windows) {
    return Step{.op = kOpPut, .key = key, .len_class = len_class, .len = len, .seed = seed,
                .windows = windows, .algorithm = 1};
  };
  auto get = [](uint32_t key, uint32_t windows) {
    return Step{.op = kOpGet, .key = key, .windows = windows, .algorithm = 1};
  };
  {
    // AOBJ-SES-025..027: sessions whose endpoint was never confirmed, or refused a wrong or
    // short proof, move nothing by RMA (the inline path still works); a confirmed one does.
    Step unconfirmed{.op = kOpOpen, .session = 1, .caps = 7, .confirm = 1};
    Step wrong{.op = kOpOpen, .session = 2, .caps = 7, .confirm = 2};
    Step short_proof{.op = kOpOpen, .session = 3, .caps = 7, .confirm = 3};
    Step put1 = put(0, 2, 3000, 1, 2);
    put1.session = 1;
    Step get2 = get(0, 1);
    get2.session = 2;
    Step inline3 = put(1, 1, 40, 2, 1);
    inline3.session = 3;
    inline3.inline_path = 1;
    WriteScript("endpoint-binding", {},
                {unconfirmed, wrong, short_proof, put1, get2, inline3, open0, put(0, 2, 3000, 1, 2),
                 get2, get(0, 1), Step{.op = kOpClose, .session = 1}});
  }
  WriteScript("put-get-rma", {},
              {open0, put(0, 2, 3000, 1, 3), get(0, 2),
               Step{.op = kOpGet, .key = 0, .windows = 1, .slack = 1, .algorithm = 2, .range = 1,
                    .first = 10, .last = 99},
               Step{.op = kOpGet, .key = 0, .inline_path = 1, .windows = 1, .range = 3, .last = 7},
               Step{.op = kOpHead, .key = 0}, Step{.op = kOpList, .delimiter = 1},
               Step{.op = kOpDelete, .key = 0}, get(0, 1), Step{.op = kOpClose}});
  {
    Step inline_put = put(1, 1, 40, 2, 1);
    inline_put.inline_path = 1;
    Step if_none = put(1, 1, 41, 3, 1);
    if_none.precondition = 1;
    Step if_match = put(1, 2, 500, 4, 2);
    if_match.precondition = 2;
    WriteScript("overwrite-copy-list", {},
                {open0, inline_put, if_none, if_match,
                 Step{.op = kOpCopy, .key = 1, .key2 = 3}, Step{.op = kOpCopy, .key = 1, .key2 = 1},
                 put(4, 0, 0, 0, 1), Step{.op = kOpList, .prefix = 1, .page = 1},
                 Step{.op = kOpList, .delimiter = 1, .page = 2},
                 Step{.op = kOpDeleteMany, .parts_mask = 0x13}});
  }
  {
    // GetObjects (spec 9.16) through a small staging buffer (items cross rounds), with a range,
    // a missing key, short regions, a failure mid-flush and an overwrite during the transfer.
    Step many{.op = kOpGetMany, .windows = 3, .algorithm = 1, .parts_mask = 0x1f};
    Step ranged{.op = kOpGetMany,
                .windows = 1,
                .slack = 1,
                .algorithm = 2,
                .range = 1,
                .first = 5,
                .last = 700,
                .parts_mask = 0x0b};
    Step short_regions{.op = kOpGetMany, .windows = 2, .slack = 2, .parts_mask = 0x07};
    Step failing{
        .op = kOpGetMany, .windows = 2, .fault = kFaultFailAt, .fault_at = 2, .parts_mask = 0x1f};
    Step overwritten{.op = kOpGetMany,
                     .windows = 1,
                     .fault = kFaultHookAt,
                     .fault_at = 1,
                     .hook = kHookPutSameKey,
                     .parts_mask = 0x03};
    WriteScript("batched-reads", {.hide_fast_paths = 1, .staging = 1, .rma_piece = 1},
                {open0, put(0, 2, 3000, 21, 1), put(1, 1, 40, 22, 1), put(3, 3, 9000, 23, 2),
                 put(4, 0, 0, 0, 1), many, ranged, short_regions, overwritten, failing, many});
  }
  {
    // PutObjects (spec 9.17) through a small staging buffer (items share and cross rounds): a
    // plain batch, one with a bad checksum, a failure mid-request, a nested PUT of one of its
    // keys, then a batched read of what was stored.
    Step many{.op = kOpPutMany,
              .len_class = 3,
              .len = 9000,
              .seed = 31,
              .windows = 3,
              .algorithm = 1,
              .parts_mask = 0x1f};
    Step small{.op = kOpPutMany,
               .len_class = 2,
               .len = 100,
               .seed = 41,
               .windows = 1,
               .algorithm = 2,
               .parts_mask = 0x0b};
    Step bad{.op = kOpPutMany,
             .len_class = 1,
             .len = 7,
             .seed = 51,
             .windows = 2,
             .algorithm = 1,
             .bad_checksum = 1,
             .parts_mask = 0x07};
    Step failing{.op = kOpPutMany,
                 .len_class = 3,
                 .len = 5000,
                 .seed = 61,
                 .windows = 2,
                 .algorithm = 1,
                 .fault = kFaultFailAt,
                 .fault_at = 2,
                 .parts_mask = 0x1f};
    Step nested{.op = kOpPutMany,
                .key = 1,
                .len_class = 3,
                .len = 3000,
                .seed = 71,
                .windows = 1,
                .algorithm = 1,
                .fault = kFaultHookAt,
                .fault_at = 1,
                .hook = kHookPutSameKey,
                .parts_mask = 0x03};
    Step read_back{.op = kOpGetMany, .windows = 2, .algorithm = 1, .parts_mask = 0x1f};
    WriteScript("batched-writes", {.hide_fast_paths = 1, .staging = 1, .rma_piece = 1},
                {open0, many, small, bad, failing, nested, read_back});
  }
  {
    Step part1{.op = kOpMpPart, .len_class = 2, .len = 100, .seed = 5, .windows = 2,
               .algorithm = 1, .part = 1};
    Step part2{.op = kOpMpPart, .len_class = 1, .len = 3, .seed = 6, .inline_path = 1,
               .algorithm = 2, .part = 2};
    WriteScript("multipart", {.hide_fast_paths = 1, .staging = 0, .rma_piece = 1},
                {open0, Step{.op = kOpMpCreate, .key = 2, .upload = 0}, part1, part2,
                 Step{.op = kOpMpListParts, .upload = 0},
                 Step{.op = kOpMpComplete, .upload = 0, .parts_mask = 3}, get(2, 4),
                 Step{.op = kOpMpCreate, .key = 3, .upload = 1},
                 Step{.op = kOpMpComplete, .upload = 1, .parts_mask = 0},
                 Step{.op = kOpMpAbort, .upload = 1}});
  }
  {
    // OPAQUE_PART_ETAG (AOBJ-OBJ-254): part 1 written twice gets two ETags, and Complete's
    // multipart ETag is computed over the opaque digits (AOBJ-OBJ-217).
    Step open_opaque{.op = kOpOpen, .session = 0, .caps = 7 | 32};
    Step part1{.op = kOpMpPart, .len_class = 2, .len = 100, .seed = 5, .windows = 2, .part = 1};
    Step part2{.op = kOpMpPart, .len_class = 1, .len = 3, .seed = 6, .part = 2};
    WriteScript("opaque-parts", {.hide_fast_paths = 1, .staging = 0, .rma_piece = 1},
                {open_opaque, Step{.op = kOpMpCreate, .key = 2, .upload = 0}, part1, part1, part2,
                 Step{.op = kOpMpListParts, .upload = 0},
                 Step{.op = kOpMpComplete, .upload = 0, .parts_mask = 3}, get(2, 4)});
  }
  {
    // Transfers that fail part-way, lose the endpoint, or deliver a wrong byte, through the
    // staging path (small chunks and pieces).
    Step fail = put(0, 3, 9000, 7, 3);
    fail.fault = kFaultFailAt;
    fail.fault_at = 3;
    Step corrupt = put(0, 2, 2000, 8, 1);
    corrupt.fault = kFaultCorruptAt;
    corrupt.fault_at = 1;
    Step batches = put(0, 2, 2000, 9, 1);
    batches.fault = kFaultFailBatches;
    batches.fault_at = 1;
    Step get_fail = get(1, 2);
    get_fail.fault = kFaultFailAt;
    get_fail.fault_at = 2;
    Step lose = put(1, 2, 1500, 10, 2);
    lose.fault = kFaultLoseAt;
    lose.fault_at = 0;
    WriteScript("transport-faults", {.hide_fast_paths = 1, .staging = 0, .rma_piece = 2},
                {open0, put(1, 3, 6000, 11, 2), fail, corrupt, batches, get_fail, lose,
                 get(1, 1), Step{.op = kOpLoseEndpoint}, put(2, 1, 10, 12, 1),
                 Step{.op = kOpClose}, Step{.op = kOpSweep}});
  }
  {
    // Nested requests in the middle of a transfer, as concurrent requests or a cancellation.
    Step overwrite = put(0, 3, 5000, 13, 2);
    overwrite.fault = kFaultHookAt;
    overwrite.fault_at = 1;
    overwrite.hook = kHookPutSameKey;
    Step delete_during_get = get(0, 2);
    delete_during_get.fault = kFaultHookAt;
    delete_during_get.fault_at = 1;
    delete_during_get.hook = kHookDeleteSameKey;
    Step abort_during_part{.op = kOpMpPart, .len_class = 2, .len = 300, .seed = 14,
                           .windows = 2, .algorithm = 1, .fault = kFaultHookAt, .fault_at = 1,
                           .hook = kHookAbortUpload, .part = 1};
    Step close_during_put = put(1, 2, 3000, 15, 3);
    close_during_put.fault = kFaultHookAt;
    close_during_put.fault_at = 2;
    close_during_put.hook = kHookClose;
    Step expire_during_get = get(1, 1);
    expire_during_get.session = 1;
    expire_during_get.fault = kFaultHookAt;
    expire_during_get.hook = kHookExpire;
    Step recreate_during_put = put(0, 2, 2000, 17, 2);
    recreate_during_put.fault = kFaultHookAt;
    recreate_during_put.fault_at = 1;
    recreate_during_put.hook = kHookRecreateBucket;
    Step put1 = put(1, 2, 700, 16, 1);
    put1.session = 1;
    WriteScript("nested-requests", {.hide_fast_paths = 0, .staging = 1, .rma_piece = 1},
                {open0, open1, recreate_during_put, overwrite, delete_during_get,
                 Step{.op = kOpMpCreate, .key = 2, .upload = 0}, abort_during_part,
                 close_during_put, put1, expire_during_get, Step{.op = kOpSweep}});
  }
  WriteScript("sessions-and-leases", {},
              {open0, open1, Step{.op = kOpForeign, .session = 0},
               Step{.op = kOpOpen, .session = 2, .caps = 1, .channel = 1},
               Step{.op = kOpOpen, .session = 2, .caps = 1, .channel = 2},
               Step{.op = kOpOpen, .session = 2, .caps = 1, .require_hardware = 1},
               Step{.op = kOpOpen, .session = 2, .caps = 1, .require_hardware = 1, .channel = 3},
               Step{.op = kOpAdvance, .millis = 20000}, Step{.op = kOpRenew, .session = 1},
               Step{.op = kOpAdvance, .millis = 20000}, Step{.op = kOpSweep},
               Step{.op = kOpHead, .session = 0}, Step{.op = kOpExpire},
               Step{.op = kOpClose, .session = 1}, Step{.op = kOpOpen, .session = 0, .caps = 2},
               Step{.op = kOpClose, .session = 0}, Step{.op = kOpRenew, .session = 0}});
}

std::string Le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: aobj_fuzz_seeds CORPUS_DIR\n");
    return 2;
  }
  dir = argv[1];
  mkdir(dir.c_str(), 0755);
  // fast_frame: the golden frames of tests/golden/fast_frames.h.
  Write("fast_frame", "golden-request", aobj::golden::kGoldenFastRequest);
  Write("fast_frame", "golden-reply", aobj::golden::kGoldenFastReply);
  // confined_reply: the golden replies of tests/golden/confined_frames.h.
  Write("confined_reply", "golden-ok", aobj::golden::kGoldenOkReply);
  Write("confined_reply", "golden-error", aobj::golden::kGoldenErrorReply);
  // rados_record: the golden images of tests/golden/rados_records.h, after their selector.
  for (const aobj::golden::GoldenRadosRecord& g : aobj::golden::kGoldenRadosRecords) {
    Write("rados_record", std::string("golden-") + g.name, std::string(1, g.selector) + *g.image);
  }
  auto ctx = aobj::UcxContext::Create(aobj::DataChannelOptions{});
  if (!ctx.ok()) return 1;
  std::vector<uint8_t> own(1 << 16);
  auto allocated = aobj::RegisteredMemory::Allocate(**ctx, 1 << 20);
  auto registered = aobj::RegisteredMemory::Register(**ctx, own.data(), own.size());
  if (!allocated.ok() || !registered.ok()) return 1;

  // rkey: real packed keys and cut-down versions of them.
  for (const auto* mem : {allocated->get(), registered->get()}) {
    const std::string& rk = mem->packed_rkey();
    const std::string tag = mem->allocated_by_ucx() ? "allocated" : "registered";
    Write("rkey", tag, rk);
    Write("rkey", tag + "-truncated", rk.substr(0, rk.size() / 2));
  }

  // descriptor: real PutObjectRequests.
  for (int n = 1; n <= 3; ++n) {
    aobj::v1::PutObjectRequest req;
    req.set_bucket("bucket");
    req.set_key("key/" + std::to_string(n));
    req.set_size(uint64_t{100000} * n);
    req.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
    req.set_checksum(std::string(4, '\x11'));
    for (int i = 0; i < n; ++i) {
      auto* d = req.add_source();
      d->set_address(reinterpret_cast<uint64_t>((*allocated)->data()) + 4096 * i);
      d->set_length(uint64_t{60000} * (i + 1));
      d->set_rkey((*allocated)->packed_rkey());
      d->set_memory_type(aobj::v1::MEMORY_TYPE_HOST);
    }
    Write("descriptor", "put-" + std::to_string(n), req.SerializeAsString());
    req.mutable_source(0)->set_address(UINT64_MAX - 10);
    Write("descriptor", "wrap-" + std::to_string(n), req.SerializeAsString());
  }

  // auth: byte strings that FuzzedDataProvider turns into plausible metadata.
  Write("auth", "plain", "/aobj.v1.ObjectService/PutObject\\AKFUZZ\\1795000000000\\" +
                             std::string(32, 'a') + "\\" + std::string(32, 'b') + "\\" +
                             std::string(64, 'c') + "\\body");
  Write("auth", "empty", "");

  // names: bucket names and keys.
  Write("names", "bucket", "my-bucket.example");
  Write("names", "key-utf8", "photos/2026/\xc3\xa9t\xc3\xa9/\xf0\x9f\x93\xb7.jpg");
  Write("names", "ipv4", "192.168.1.1");
  Write("names", "overlong", "\xc0\xaf");

  // shm_maps: a real maps text with a window inside its first shared mapping.
  {
    std::ifstream in("/proc/self/maps");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string maps = ss.str();
    Write("shm_maps", "self", Le64(reinterpret_cast<uint64_t>((*allocated)->data())) +
                                  Le64(4096) + std::string(1, '\0') + maps);
    Write("shm_maps", "synthetic",
          Le64(0x7f0000000000) + Le64(0x1000) + std::string(1, '\x01') +
              "7f0000000000-7f0000100000 rw-s 00000000 00:01 1      /SYSV00000000 (deleted)\n");
  }

  // error_trailer: the trailer of every registered error, as the server sends it.
  for (uint32_t code : {1u, 3u, 5u, 9u, 21u, 31u, 40u, 0x0A0A0A0Au}) {
    std::string trailer;
    aobj::v1::VersionRange range;
    range.set_min(1);
    range.set_max(1);
    aobj::ToGrpcStatus(aobj::MakeError(static_cast<aobj::ErrorCode>(code), "seed"), &trailer,
                       code == 3 ? &range : nullptr);
    Write("error_trailer", "code-" + std::to_string(code), std::string("\x05seed\x00", 6) + trailer);
  }
  // client_reply: real responses followed by the bytes FuzzedDataProvider reads from the end
  // (operation, reply kind, gRPC code, PUT size, buffer fill).
  {
    aobj::v1::PutObjectResponse put;
    put.set_bytes_transferred(0);
    put.set_checksum(std::string(4, '\0'));
    put.set_path(aobj::v1::TRANSFER_PATH_NONE);
    aobj::v1::GetObjectResponse get;
    get.set_bytes_transferred(3);
    get.mutable_metadata()->set_size(3);
    get.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
    get.set_checksum(std::string("\x12\x34\x56\x78", 4));
    get.set_path(aobj::v1::TRANSFER_PATH_INLINE);
    get.set_inline_data("abc");
    aobj::v1::HeadObjectResponse head;
    head.mutable_metadata()->set_size(42);
    std::string trailer;
    aobj::ToGrpcStatus(aobj::MakeError(aobj::ErrorCode::kNoSuchKey, "seed"), &trailer);
    const std::string tail_ok(std::string(9, '\0') + std::string("\x01\x01\x00", 3));
    Write("client_reply", "put-empty", put.SerializeAsString() + tail_ok);
    Write("client_reply", "get-inline", get.SerializeAsString() + tail_ok + std::string(1, '\x01'));
    Write("client_reply", "head", head.SerializeAsString() + tail_ok + std::string(1, '\x02'));
    Write("client_reply", "error-trailer", trailer + std::string(9, '\0') + std::string("\x04\x00\x01", 3));
  }
  StatefulSeeds();
  std::printf("seeds written to %s\n", dir.c_str());
  return 0;
}
