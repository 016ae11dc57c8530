// embed-client: the smallest useful program on the aobj client library. It opens a session,
// PUTs an object from a library-allocated (UCX-registered) buffer and GETs it back into another,
// then compares the bytes.
//
//   AOBJ_ACCESS_KEY_ID=AK AOBJ_SECRET_ACCESS_KEY=secret ./embed-client 127.0.0.1:7878 bucket
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "aobj/client.h"
#include "aobj/status.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: embed-client HOST:PORT BUCKET (credentials from AOBJ_ACCESS_KEY_ID and "
                 "AOBJ_SECRET_ACCESS_KEY)\n";
    return 2;
  }
  const char* id = std::getenv("AOBJ_ACCESS_KEY_ID");
  const char* secret = std::getenv("AOBJ_SECRET_ACCESS_KEY");
  if (id == nullptr || secret == nullptr) {
    std::cerr << "set AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY\n";
    return 2;
  }
  aobj::ClientOptions options;
  options.endpoint = argv[1];
  options.access_key_id = id;
  options.secret = secret;
  // Plaintext control channel unless options.tls.enabled (loopback demo).
  const std::string bucket = argv[2];

  // Every call returns absl::Status(Or); aobj::ErrorCodeOf() gives the protocol error.
  auto client = aobj::Client::Connect(options);
  if (!client.ok()) {
    std::cerr << "connect: " << client.status() << "\n";
    return 1;
  }
  constexpr size_t kSize = 4 << 20;  // above the inline threshold: moved by RMA
  auto src = (*client)->AllocateBuffer(kSize);
  auto dst = (*client)->AllocateBuffer(kSize);
  if (!src.ok() || !dst.ok()) {
    std::cerr << "allocate: " << (src.ok() ? dst.status() : src.status()) << "\n";
    return 1;
  }
  for (size_t i = 0; i < kSize; ++i) (*src)->data()[i] = static_cast<uint8_t>(i * 131);

  auto put = (*client)->Put(bucket, "hello/embed", **src, kSize);
  if (!put.ok()) {
    std::cerr << "put: " << put.status() << "\n";
    return 1;
  }
  auto get = (*client)->Get(bucket, "hello/embed", **dst);
  if (!get.ok()) {
    std::cerr << "get: " << get.status() << "\n";
    return 1;
  }
  if (get->bytes_transferred != kSize || std::memcmp((*src)->data(), (*dst)->data(), kSize)) {
    std::cerr << "content differs\n";
    return 1;
  }
  std::cout << "embed-client: put and got " << kSize << " bytes via "
            << aobj::TransferPathName(get->path) << ", etag " << get->info.etag << "\n";
  return 0;
}
