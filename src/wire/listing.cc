// AOBJ_PEER_INPUT: continuation tokens (fuzz/list_token_fuzzer.cc).
#include "wire/listing.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"
#include "wire/le_codec.h"
#include "wire/names.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

constexpr absl::string_view kTagLabel = "aobj-list-token-v1";
constexpr size_t kTokenHeaderBytes = 4;

std::string Tag(absl::string_view key, absl::string_view scope, absl::string_view body) {
  const Sha256Digest mac = HmacSha256(key, absl::StrCat(kTagLabel, scope, body));
  return std::string(reinterpret_cast<const char*>(mac.data()), kListTokenTagBytes);
}

absl::Status BadToken(absl::string_view why) {
  return MakeError(ErrorCode::kInvalidContinuationToken,
                   absl::StrCat("the continuation token is invalid: ", why));
}

// The first key after every key that starts with `common_prefix` (keys never hold 0xFF).
std::string PastPrefix(absl::string_view common_prefix) {
  return absl::StrCat(common_prefix, "\xFF");
}

}  // namespace

std::string ListScope(absl::string_view operation, absl::string_view bucket,
                      absl::string_view prefix, absl::string_view delimiter) {
  std::string out;
  LeWriter w(&out);
  for (absl::string_view field : {operation, bucket, prefix, delimiter}) {
    w.String32(std::string_view(field.data(), field.size()));
  }
  return out;
}

std::string EncodeListToken(absl::string_view key, absl::string_view scope,
                            const ListPosition& position) {
  std::string token;
  LeWriter w(&token);
  w.U8(kListTokenVersion);
  w.U8(static_cast<uint8_t>(position.kind));
  const size_t n = std::min(position.position.size(), kMaxKeyBytes);
  w.U16(static_cast<uint16_t>(n));
  w.Bytes(std::string_view(position.position).substr(0, n));
  token += Tag(key, scope, token);
  return token;
}

absl::StatusOr<ListPosition> DecodeListToken(absl::string_view key, absl::string_view scope,
                                             absl::string_view token) {
  // AOBJ-OBJ-107: structure first, with every length checked against what is there.
  if (token.size() < kTokenHeaderBytes + kListTokenTagBytes || token.size() > kMaxListTokenBytes) {
    return BadToken(absl::StrCat(token.size(), " bytes is not a possible token length"));
  }
  LeReader header(std::string_view(token.data(), kTokenHeaderBytes));
  uint8_t version = 0, kind = 0;
  uint16_t n = 0;
  header.U8(&version);
  header.U8(&kind);
  header.U16(&n);  // the length was checked above: the header is there
  if (version != kListTokenVersion) {
    return BadToken(absl::StrCat("unknown format version ", version));
  }
  if (kind > static_cast<uint8_t>(ListPosition::Kind::kAfterPrefix)) {
    return BadToken(absl::StrCat("unknown kind ", kind));
  }
  if (n > kMaxKeyBytes || token.size() != kTokenHeaderBytes + n + kListTokenTagBytes) {
    return BadToken("the position length disagrees with the token's size");
  }
  const absl::string_view body = token.substr(0, kTokenHeaderBytes + n);
  const absl::string_view tag = token.substr(kTokenHeaderBytes + n);
  // Then authenticity, in constant time, before the position is used for anything.
  if (!ConstantTimeEquals(Tag(key, scope, body), tag)) {
    return BadToken("it was not issued by this server for this listing");
  }
  ListPosition out;
  out.kind = static_cast<ListPosition::Kind>(kind);
  out.position = std::string(body.substr(kTokenHeaderBytes));
  // Defence in depth: a server with a leaked key still never scans from a non-UTF-8 position.
  if (!IsValidUtf8(out.position)) return BadToken("the position is not UTF-8");
  return out;
}

absl::StatusOr<ListPage> ListObjectsPage(const ObjectScan& scan, absl::string_view prefix,
                                         absl::string_view delimiter, const ListPosition& start,
                                         uint32_t max_keys) {
  ListPage page;
  if (max_keys == 0) return page;
  // The scan cursor: keys strictly after it are still to be seen.
  std::string cursor =
      start.kind == ListPosition::Kind::kAfterPrefix ? PastPrefix(start.position) : start.position;
  size_t count = 0;
  // With a delimiter, a common prefix can stand for any number of keys. The walk never reads
  // through them: once it reports a prefix it scans again from past it, which the store answers
  // by a seek. Scans after such a jump ask for few entries (the next may be a prefix again) and
  // ask for twice as many each time they end without one, so a page reads at most
  // kFirstBatch entries per common prefix and twice the objects it returns (issue 16, L3: a page
  // used to read every key under the prefixes it reported, (max_keys + 1)^2 at worst).
  constexpr size_t kFirstBatch = 16;
  size_t batch_size = kFirstBatch;
  for (;;) {
    // One more than fits, to learn whether the page is truncated.
    const size_t fits = max_keys - count + 1;
    const size_t want = delimiter.empty() ? fits : std::min(fits, batch_size);
    absl::StatusOr<std::vector<ObjectSummary>> batch = scan(cursor, want);
    if (!batch.ok()) return batch.status();
    bool jumped = false;
    for (ObjectSummary& object : *batch) {
      // Every key the scan returns starts with `prefix` and sorts after the cursor.
      const std::string* last_prefix =
          page.common_prefixes.empty() ? nullptr : &page.common_prefixes.back();
      if (last_prefix != nullptr && absl::StartsWith(object.key, *last_prefix)) {
        continue;  // under a common prefix already reported (AOBJ-OBJ-101)
      }
      std::string common;
      if (!delimiter.empty()) {
        const absl::string_view rest = absl::string_view(object.key).substr(prefix.size());
        if (const size_t at = rest.find(delimiter); at != absl::string_view::npos) {
          common = std::string(object.key.substr(0, prefix.size() + at + delimiter.size()));
        }
      }
      if (count == max_keys) {  // AOBJ-OBJ-102; a further entry exists (AOBJ-OBJ-103)
        page.truncated = true;
        return page;
      }
      ++count;
      if (!common.empty()) {
        page.common_prefixes.push_back(std::move(common));
        page.next = {ListPosition::Kind::kAfterPrefix, page.common_prefixes.back()};
        cursor = PastPrefix(page.common_prefixes.back());
        jumped = true;
        break;  // the rest of the batch may be the prefix's own keys: seek past them instead
      }
      page.next = {ListPosition::Kind::kAfterKey, object.key};
      cursor = object.key;
      page.objects.push_back(std::move(object));
    }
    if (jumped) {
      batch_size = kFirstBatch;
      continue;
    }
    // Fewer than asked: nothing sorts after the cursor any more. Otherwise scan again from the
    // cursor; each scan adds an entry or ends the page, so there are at most max_keys + 1.
    if (batch->size() < want) return page;
    batch_size = std::min<size_t>(batch_size * 2, max_keys + 1);
  }
}

}  // namespace aobj
