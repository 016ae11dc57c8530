#include "wire/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>

namespace aobj {
namespace {

// These calls fail only on allocation failure or a broken OpenSSL installation (e.g. a FIPS-only
// provider without MD5). The header promises plain values, and continuing with a wrong digest
// would silently break signing or ETags, so stop loudly instead.
[[noreturn]] void CryptoFatal(const char* what) {
  std::fprintf(stderr, "aobj: fatal: %s\n", what);
  std::abort();
}

// Explicitly fetched algorithms, kept for the life of the process: OpenSSL 3 otherwise repeats
// the provider lookup (and its locking) on every EVP_sha256()/EVP_md5() use.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    if (fetched == nullptr) CryptoFatal("OpenSSL EVP_MD_fetch(SHA2-256) failed");
    return fetched;
  }();
  return md;
}

const EVP_MD* Md5Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "MD5", nullptr);
    if (fetched == nullptr) CryptoFatal("OpenSSL EVP_MD_fetch(MD5) failed");
    return fetched;
  }();
  return md;
}

EVP_MD_CTX* NewMd5Ctx() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) CryptoFatal("OpenSSL EVP_MD_CTX_new failed");
  if (EVP_DigestInit_ex(ctx, Md5Md(), nullptr) != 1)
    CryptoFatal("OpenSSL EVP_DigestInit_ex(MD5) failed");
  return ctx;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Sha256Digest Sha256(absl::string_view data) {
  Sha256Digest out;
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, Sha256Md(), nullptr) != 1 ||
      len != out.size()) {
    CryptoFatal("OpenSSL EVP_Digest(SHA2-256) failed");
  }
  return out;
}

Sha256Digest HmacSha256(absl::string_view key, absl::string_view data) {
  // RFC 2104 over the SHA-256 fetched once (Sha256Md). OpenSSL 3's one-shot HMAC() goes through
  // EVP_Q_mac, which looks the MAC up in the provider on every call: about 26,000 instructions
  // of a few-hundred-octet request signature (docs/benchmarks.md, appendix A.10.3). Checked against
  // RFC 4231 in tests/wire/crypto_test.cc.
  constexpr size_t kBlock = 64;  // SHA-256's block size
  unsigned char k0[kBlock] = {};
  if (key.size() > kBlock) {
    const Sha256Digest hashed = Sha256(key);
    std::copy(hashed.begin(), hashed.end(), k0);
  } else {
    std::copy(key.begin(), key.end(), k0);
  }
  unsigned char pad[kBlock];
  struct CtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  if (ctx == nullptr) CryptoFatal("OpenSSL EVP_MD_CTX_new failed");
  Sha256Digest inner, out;
  unsigned int len = 0;
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k0[i] ^ 0x36;
  if (EVP_DigestInit_ex(ctx.get(), Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), pad, kBlock) != 1 ||
      (!data.empty() && EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1) ||
      EVP_DigestFinal_ex(ctx.get(), inner.data(), &len) != 1 || len != inner.size()) {
    CryptoFatal("OpenSSL SHA2-256 (HMAC inner hash) failed");
  }
  for (size_t i = 0; i < kBlock; ++i) pad[i] = k0[i] ^ 0x5c;
  if (EVP_DigestInit_ex(ctx.get(), Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), pad, kBlock) != 1 ||
      EVP_DigestUpdate(ctx.get(), inner.data(), inner.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != out.size()) {
    CryptoFatal("OpenSSL SHA2-256 (HMAC outer hash) failed");
  }
  OPENSSL_cleanse(k0, sizeof(k0));
  OPENSSL_cleanse(pad, sizeof(pad));
  return out;
}

Md5::Md5() : ctx_(NewMd5Ctx()) {}

Md5::~Md5() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Md5::Md5(Md5&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

Md5& Md5::operator=(Md5&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    ctx_ = std::exchange(other.ctx_, nullptr);
  }
  return *this;
}

void Md5::Update(const void* data, size_t size) {
  // A moved-from object has no context; using it is a caller bug, not peer input.
  if (ctx_ == nullptr) CryptoFatal("Md5::Update on a moved-from object");
  if (size == 0) return;
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, size) != 1) {
    CryptoFatal("OpenSSL EVP_DigestUpdate(MD5) failed");
  }
}

Md5Digest Md5::Finish() {
  if (ctx_ == nullptr) CryptoFatal("Md5::Finish on a moved-from object");
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  Md5Digest out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != out.size()) {
    CryptoFatal("OpenSSL EVP_DigestFinal_ex(MD5) failed");
  }
  // Leave the object ready for a new message rather than in OpenSSL's finalized state, where a
  // further Update would fail.
  if (EVP_DigestInit_ex(ctx, Md5Md(), nullptr) != 1)
    CryptoFatal("OpenSSL EVP_DigestInit_ex(MD5) failed");
  return out;
}

std::string HexEncode(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out(2 * size, '\0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0x0f];
  }
  return out;
}

bool HexDecode(absl::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  std::string decoded(hex.size() / 2, '\0');
  for (size_t i = 0; i < decoded.size(); ++i) {
    const int hi = HexValue(hex[2 * i]);
    const int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    decoded[i] = static_cast<char>((hi << 4) | lo);
  }
  // `out` is written only on success.
  *out = std::move(decoded);
  return true;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // The length is not secret (MACs and digests have fixed sizes); only the contents are.
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    const int chunk = static_cast<int>(std::min<size_t>(n - done, INT_MAX));
    if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data() + done), chunk) != 1) {
      CryptoFatal("OpenSSL RAND_bytes failed");
    }
    done += static_cast<size_t>(chunk);
  }
  return out;
}

}  // namespace aobj
