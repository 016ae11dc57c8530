// Hashes and MACs used by AOBJ/1 signing and ETags (thin layer over OpenSSL's libcrypto).
// Pure functions; thread-safe.
#ifndef AOBJ_WIRE_CRYPTO_H_
#define AOBJ_WIRE_CRYPTO_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

namespace aobj {

using Sha256Digest = std::array<uint8_t, 32>;
using Md5Digest = std::array<uint8_t, 16>;

Sha256Digest Sha256(absl::string_view data);
Sha256Digest HmacSha256(absl::string_view key, absl::string_view data);

// Incremental MD5 (for S3 ETags). Move-only.
class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(Md5&&) noexcept;
  Md5& operator=(Md5&&) noexcept;
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;
  void Update(const void* data, size_t size);
  Md5Digest Finish();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

// Lower-case hex of bytes.
std::string HexEncode(const void* data, size_t size);
inline std::string HexEncode(absl::string_view s) { return HexEncode(s.data(), s.size()); }
template <size_t N>
std::string HexEncode(const std::array<uint8_t, N>& a) {
  return HexEncode(a.data(), N);
}
// Decodes lower- or upper-case hex; false on odd length or a non-hex character.
bool HexDecode(absl::string_view hex, std::string* out);

// Constant-time comparison of equal-length strings (false when lengths differ).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// Cryptographically random bytes (OpenSSL RAND_bytes). Aborts only if the CSPRNG fails.
std::string RandomBytes(size_t n);

}  // namespace aobj

#endif  // AOBJ_WIRE_CRYPTO_H_
