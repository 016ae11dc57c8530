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
  std::printf("seeds written to %s\n", dir.c_str());
  return 0;
}
