// AOBJ_PEER_INPUT: entity tags and times (fuzz/object_attrs_fuzzer.cc).
#include "wire/conditions.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {
namespace {

// The opaque part of an entity tag: `tag` without "W/" (when allowed) and without one pair of
// surrounding quotes.
absl::string_view Opaque(absl::string_view tag, bool allow_weak) {
  if (allow_weak && absl::StartsWith(tag, "W/")) tag.remove_prefix(2);
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    tag.remove_prefix(1);
    tag.remove_suffix(1);
  }
  return tag;
}

// AOBJ-OBJ-131: "*" or one entity tag of visible ASCII, quotes only around it, no list.
absl::Status ValidateTag(absl::string_view field, absl::string_view tag, bool allow_weak) {
  if (tag.empty() || tag == "*") return absl::OkStatus();
  auto bad = [&](absl::string_view why) {
    return MakeError(ErrorCode::kInvalidArgument, absl::StrCat(field, " is invalid: ", why));
  };
  if (tag.size() > kMaxEntityTagBytes) {
    return bad(absl::StrCat("longer than ", kMaxEntityTagBytes, " bytes"));
  }
  const absl::string_view opaque = Opaque(tag, allow_weak);
  if (opaque.empty()) return bad("empty entity tag");
  for (char c : opaque) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '"') {
      return bad("an entity tag is visible ASCII without quotes inside");
    }
    if (c == ',') return bad("lists of entity tags are not supported");
  }
  return absl::OkStatus();
}

absl::Status Failed(absl::string_view what) {
  return MakeError(ErrorCode::kPreconditionFailed, absl::StrCat("precondition failed: ", what));
}

absl::Status NotModified(absl::string_view what, absl::string_view etag) {
  return MakeError(ErrorCode::kNotModified, absl::StrCat("not modified: ", what, "; etag ", etag));
}

// RFC 9110 section 13.2.2 with the outcome of steps 3 and 4 given by `not_modified`.
absl::Status Evaluate(const Conditions& c, absl::string_view etag, int64_t last_modified_ms,
                      bool read) {
  // Step 1 / 2: If-Match, else If-Unmodified-Since.
  if (!c.if_match.empty()) {
    if (!EntityTagMatches(c.if_match, etag, /*weak=*/false)) {
      return Failed(absl::StrCat("If-Match ", c.if_match, " does not match etag ", etag));
    }
  } else if (c.if_unmodified_since_ms.has_value() && last_modified_ms > *c.if_unmodified_since_ms) {
    return Failed(absl::StrCat("modified at ", last_modified_ms, " ms, after If-Unmodified-Since ",
                               *c.if_unmodified_since_ms, " ms"));
  }
  // Step 3 / 4: If-None-Match, else If-Modified-Since.
  if (!c.if_none_match.empty()) {
    if (EntityTagMatches(c.if_none_match, etag, /*weak=*/true)) {
      const std::string what = absl::StrCat("If-None-Match ", c.if_none_match, " matches");
      // AOBJ-ERR-100: NOT_MODIFIED only for reads (GetObject, HeadObject).
      return read ? NotModified(what, etag) : Failed(what);
    }
  } else if (c.if_modified_since_ms.has_value() && last_modified_ms <= *c.if_modified_since_ms) {
    const std::string what = absl::StrCat("not modified since ", *c.if_modified_since_ms,
                                          " ms (last modified at ", last_modified_ms, " ms)");
    return read ? NotModified(what, etag) : Failed(what);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Conditions> ConditionsFromProto(const aobj::v1::Preconditions& in) {
  if (absl::Status s = ValidateTag("if_match", in.if_match(), /*allow_weak=*/false); !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateTag("if_none_match", in.if_none_match(), /*allow_weak=*/true);
      !s.ok()) {
    return s;
  }
  Conditions c;
  c.if_match = in.if_match();
  c.if_none_match = in.if_none_match();
  if (in.has_if_modified_since_ms()) c.if_modified_since_ms = in.if_modified_since_ms();
  if (in.has_if_unmodified_since_ms()) c.if_unmodified_since_ms = in.if_unmodified_since_ms();
  return c;
}

void ConditionsToProto(const Conditions& in, aobj::v1::Preconditions* out) {
  out->Clear();
  out->set_if_match(in.if_match);
  out->set_if_none_match(in.if_none_match);
  if (in.if_modified_since_ms.has_value()) out->set_if_modified_since_ms(*in.if_modified_since_ms);
  if (in.if_unmodified_since_ms.has_value()) {
    out->set_if_unmodified_since_ms(*in.if_unmodified_since_ms);
  }
}

bool EntityTagMatches(absl::string_view tag, absl::string_view etag, bool weak) {
  if (tag == "*") return true;  // any existing object
  // Stored ETags are strong; the strong comparison of RFC 9110 section 8.8.3.2 then reduces to
  // comparing the opaque parts, and a weak tag never matches strongly.
  if (!weak && absl::StartsWith(tag, "W/")) return false;
  return Opaque(tag, weak) == Opaque(etag, false);
}

std::string CanonicalEntityTag(absl::string_view tag) {
  if (tag == "*") return "*";
  return absl::StrCat("\"", Opaque(tag, /*allow_weak=*/false), "\"");
}

absl::Status EvaluateReadConditions(const Conditions& c, absl::string_view etag,
                                    int64_t last_modified_ms) {
  return Evaluate(c, etag, last_modified_ms, /*read=*/true);  // AOBJ-OBJ-130
}

absl::Status EvaluateCopySourceConditions(const Conditions& c, absl::string_view etag,
                                          int64_t last_modified_ms) {
  return Evaluate(c, etag, last_modified_ms, /*read=*/false);  // AOBJ-OBJ-152
}

absl::Status ValidateWriteConditions(const Conditions& c) {
  // AOBJ-OBJ-133
  if (!c.if_none_match.empty() && c.if_none_match != "*") {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a write accepts if_none_match \"*\" only (S3 answers NotImplemented)");
  }
  if (c.if_modified_since_ms.has_value() || c.if_unmodified_since_ms.has_value()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a write accepts no If-Modified-Since or If-Unmodified-Since condition");
  }
  if (!c.if_match.empty() && !c.if_none_match.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a write takes if_match or if_none_match, not both");
  }
  return absl::OkStatus();
}

}  // namespace aobj
