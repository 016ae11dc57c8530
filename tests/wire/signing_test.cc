#include "wire/signing.h"

#include <cctype>
#include <cstdint>
#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

constexpr char kSecret[] = "example-secret-do-not-use";
constexpr char kOpenSession[] = "/aobj.v1.ObjectService/OpenSession";
constexpr char kPutObject[] = "/aobj.v1.ObjectService/PutObject";

// The fixed vector of spec Appendix A.1, computed independently with:
//
//   python3 -c '
//   import hmac, hashlib
//   k = hmac.new(b"AOBJ1example-secret-do-not-use", b"aobj1_request", hashlib.sha256).digest()
//   c = "\n".join(["AOBJ1-HMAC-SHA256", "/aobj.v1.ObjectService/OpenSession", "AKEXAMPLE",
//                  "1795000000000", "000102030405060708090a0b0c0d0e0f", "",
//                  hashlib.sha256(b"").hexdigest()]).encode()
//   print(k.hex()); print(len(c)); print(hmac.new(k, c, hashlib.sha256).hexdigest())'
//
// which prints the signing key, 175 (canonical string octets) and the signature below.
constexpr char kExpectedSigningKeyHex[] =
    "9b466f0b1a78f938d6c0e333079775138dc455b926a27b1f1e1d847591d03156";
constexpr char kExpectedSignature[] =
    "17c4b3e19b365f869026640c4611a3d11befc070db3d7ad13b62677055ac3313";

RequestAuth ExampleAuth() {
  RequestAuth auth;
  auth.access_key_id = "AKEXAMPLE";
  auth.timestamp = "1795000000000";
  auth.nonce_hex = "000102030405060708090a0b0c0d0e0f";
  auth.session_hex = "";
  auth.signature_hex = kExpectedSignature;
  return auth;
}

// A well-formed request that names a session (any call but OpenSession).
RequestAuth SessionAuth() {
  RequestAuth auth = ExampleAuth();
  auth.session_hex = "ffeeddccbbaa99887766554433221100";
  auth.signature_hex = SignRequest(DeriveSigningKey(kSecret), kPutObject, auth, "body");
  return auth;
}

// Changes one character of `s` at `pos` to another character of the same class.
std::string FlipOne(std::string s, size_t pos) {
  s[pos] = s[pos] == '0' ? '1' : (s[pos] == 'a' ? 'b' : '0');
  return s;
}

// --- Known answers (AOBJ-AUTH-002, AOBJ-AUTH-003) ---

TEST(DeriveSigningKeyTest, MatchesHmacOfPrefixedSecret) {
  // AOBJ-AUTH-003: HMAC-SHA256(key = "AOBJ1" || secret, data = "aobj1_request").
  const Sha256Digest want = HmacSha256(std::string("AOBJ1") + kSecret, "aobj1_request");
  const std::string key = DeriveSigningKey(kSecret);
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(HexEncode(key), HexEncode(want));
}

TEST(DeriveSigningKeyTest, MatchesFixedVector) {
  // AOBJ-AUTH-003 (spec Appendix A.1, step 1).
  EXPECT_EQ(HexEncode(DeriveSigningKey(kSecret)), kExpectedSigningKeyHex);
}

// Spec Appendix A.3 (AOBJ-SES-026).
TEST(EndpointProofTest, MatchesAppendixA3) {
  const std::string signing_key = DeriveSigningKey("example-secret-do-not-use");
  std::string session;
  ASSERT_TRUE(HexDecode("00112233445566778899aabbccddeeff", &session));
  std::string challenge;
  for (int c = 0x20; c < 0x40; ++c) challenge.push_back(static_cast<char>(c));
  const std::string key = DeriveEndpointKey(signing_key, session);
  EXPECT_EQ(HexEncode(key), "c3702a9119dfe9d804db26bff9796b31c1a5432c2e0ec5d5a03e4e40d3b23dd1");
  EXPECT_EQ(HexEncode(EndpointProof(key, session, challenge)),
            "142c26032db40a155cf14ddbd099056bf88cbfd94dd0d4ac1b84b323e2c8290e");
  // Bound to the session and to every challenge octet.
  std::string other = session;
  other[0] ^= 1;
  EXPECT_NE(EndpointProof(DeriveEndpointKey(signing_key, other), other, challenge),
            EndpointProof(key, session, challenge));
  std::string flipped = challenge;
  flipped[31] ^= 1;
  EXPECT_NE(EndpointProof(key, session, flipped), EndpointProof(key, session, challenge));
}

// Spec Appendix A.2.1 (AOBJ-AUTH-020): the OpenSession response's signature.
TEST(OpenSessionResponseSignatureTest, MatchesAppendixA21) {
  const std::string signing_key = DeriveSigningKey("example-secret-do-not-use");
  const std::string request_signature =
      "e04279aa2c36e2e3f75f3988b08ea5faafefde48a71f98ec230555639fb5ddb4";
  std::string response;
  ASSERT_TRUE(HexDecode(
      "0801120901020304dab4e9d2051a108c0f5a3e91d24b7ca6e1f0d37b294e1520b0ea012a120880808080800210"
      "1018808001201028800830023a0f616f626a2d7365727665722f302e3142040801100148016001",
      &response));
  const std::string want = "007ac1c1b219214cec0ed7c2151976703a71653fb4c8b10ee038ee785c9271db";
  EXPECT_EQ(SignOpenSessionResponse(signing_key, request_signature, response), want);
  // Computed by hand from its definition.
  EXPECT_EQ(HexEncode(HmacSha256(signing_key, "AOBJ1-RESPONSE\n" + request_signature + "\n" +
                                                  HexEncode(Sha256(response)))),
            want);
  EXPECT_TRUE(VerifyOpenSessionResponse(signing_key, request_signature, response, want).ok());
  // Bound to every response octet, to the request and to the key; absent fails too.
  std::string altered = response;
  altered[1] ^= 1;
  std::string other_request = request_signature;
  other_request[0] = 'f';
  for (const absl::Status& s :
       {VerifyOpenSessionResponse(signing_key, request_signature, altered, want),
        VerifyOpenSessionResponse(signing_key, other_request, response, want),
        VerifyOpenSessionResponse(DeriveSigningKey("another"), request_signature, response, want),
        VerifyOpenSessionResponse(signing_key, request_signature, response, ""),
        VerifyOpenSessionResponse(signing_key, request_signature, response, want.substr(1))}) {
    EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kSignatureDoesNotMatch) << s;
  }
}

TEST(DeriveSigningKeyTest, DiffersForDifferentSecrets) {
  // AOBJ-AUTH-003
  EXPECT_NE(DeriveSigningKey(kSecret), DeriveSigningKey("example-secret-do-not-usf"));
}

TEST(CanonicalRequestTest, IsSevenLinesBuiltByHand) {
  // AOBJ-AUTH-002: seven lines joined by LF, no LF after the last, empty session line.
  const std::string want = std::string("AOBJ1-HMAC-SHA256\n") + kOpenSession + "\n" +
                           "AKEXAMPLE\n" + "1795000000000\n" +
                           "000102030405060708090a0b0c0d0e0f\n" + "\n" +
                           "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const std::string got = CanonicalRequest(kOpenSession, ExampleAuth(), "");
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 175u);
  EXPECT_NE(got.back(), '\n');
}

TEST(CanonicalRequestTest, CarriesSessionAndBodyHash) {
  // AOBJ-AUTH-002: the session line and the hex SHA-256 of the exact body octets.
  RequestAuth auth = SessionAuth();
  const std::string body("\x0a\x03" "abc", 5);
  const std::string want = std::string("AOBJ1-HMAC-SHA256\n") + kPutObject + "\nAKEXAMPLE\n" +
                           "1795000000000\n000102030405060708090a0b0c0d0e0f\n" +
                           "ffeeddccbbaa99887766554433221100\n" + HexEncode(Sha256(body));
  EXPECT_EQ(CanonicalRequest(kPutObject, auth, body), want);
}

TEST(SignRequestTest, IsHmacOfCanonicalStringComputedInTest) {
  // AOBJ-AUTH-003: signature = HMAC-SHA256(signing key, canonical string), lower-case hex.
  const std::string signing_key = DeriveSigningKey(kSecret);
  const std::string canonical =
      std::string("AOBJ1-HMAC-SHA256\n") + kOpenSession +
      "\nAKEXAMPLE\n1795000000000\n000102030405060708090a0b0c0d0e0f\n\n" + HexEncode(Sha256(""));
  const std::string want = HexEncode(HmacSha256(signing_key, canonical));
  EXPECT_EQ(SignRequest(signing_key, kOpenSession, ExampleAuth(), ""), want);
}

TEST(SignRequestTest, MatchesFixedVector) {
  // AOBJ-AUTH-003 (spec Appendix A.1, step 4).
  EXPECT_EQ(SignRequest(DeriveSigningKey(kSecret), kOpenSession, ExampleAuth(), ""),
            kExpectedSignature);
}

TEST(SignRequestTest, IgnoresSignatureField) {
  // AOBJ-AUTH-002: the signature itself is not part of the canonical string.
  RequestAuth auth = ExampleAuth();
  auth.signature_hex = "whatever";
  EXPECT_EQ(SignRequest(DeriveSigningKey(kSecret), kOpenSession, auth, ""), kExpectedSignature);
}

// --- VerifySignature (AOBJ-AUTH-006) ---

TEST(VerifySignatureTest, AcceptsFixedVector) {
  // AOBJ-AUTH-006
  EXPECT_TRUE(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, ExampleAuth(), "").ok());
}

TEST(VerifySignatureTest, AcceptsSessionRequest) {
  // AOBJ-AUTH-006
  EXPECT_TRUE(VerifySignature(DeriveSigningKey(kSecret), kPutObject, SessionAuth(), "body").ok());
}

TEST(VerifySignatureTest, RejectsOneCharacterChangeOfSignature) {
  // AOBJ-AUTH-006
  const std::string key = DeriveSigningKey(kSecret);
  for (size_t pos : {size_t{0}, size_t{31}, size_t{63}}) {
    RequestAuth auth = ExampleAuth();
    auth.signature_hex = FlipOne(auth.signature_hex, pos);
    EXPECT_EQ(ErrorCodeOf(VerifySignature(key, kOpenSession, auth, "")),
              ErrorCode::kSignatureDoesNotMatch)
        << "position " << pos;
  }
}

TEST(VerifySignatureTest, RejectsUpperCaseSignature) {
  // AOBJ-AUTH-003: the signature is lower-case hex; AOBJ-AUTH-006 compares octets.
  RequestAuth auth = ExampleAuth();
  for (char& c : auth.signature_hex) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, auth, "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsTruncatedSignature) {
  // AOBJ-AUTH-006
  RequestAuth auth = ExampleAuth();
  auth.signature_hex.pop_back();
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, auth, "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedBody) {
  // AOBJ-AUTH-006, AOBJ-AUTH-012: the body octets are signed.
  const std::string key = DeriveSigningKey(kSecret);
  EXPECT_EQ(ErrorCodeOf(VerifySignature(key, kPutObject, SessionAuth(), "bodz")),
            ErrorCode::kSignatureDoesNotMatch);
  EXPECT_EQ(ErrorCodeOf(VerifySignature(key, kOpenSession, ExampleAuth(), "x")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedMethod) {
  // AOBJ-AUTH-006: the method path is signed.
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret),
                                        "/aobj.v1.ObjectService/OpenSessioN", ExampleAuth(), "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedTimestamp) {
  // AOBJ-AUTH-006: the timestamp is signed exactly as sent.
  RequestAuth auth = ExampleAuth();
  auth.timestamp = "1795000000001";
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, auth, "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedNonce) {
  // AOBJ-AUTH-006: the nonce is signed.
  RequestAuth auth = ExampleAuth();
  auth.nonce_hex = FlipOne(auth.nonce_hex, 31);
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, auth, "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedSession) {
  // AOBJ-AUTH-006, AOBJ-AUTH-010: the session id is signed.
  RequestAuth auth = SessionAuth();
  auth.session_hex = FlipOne(auth.session_hex, 0);
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kPutObject, auth, "body")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsChangedAccessKeyId) {
  // AOBJ-AUTH-006: the access key id is signed.
  RequestAuth auth = ExampleAuth();
  auth.access_key_id = "AKEXAMPLF";
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey(kSecret), kOpenSession, auth, "")),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST(VerifySignatureTest, RejectsWrongSigningKey) {
  // AOBJ-AUTH-006
  EXPECT_EQ(ErrorCodeOf(VerifySignature(DeriveSigningKey("another-secret"), kOpenSession,
                                        ExampleAuth(), "")),
            ErrorCode::kSignatureDoesNotMatch);
}

// --- CheckAuthSyntax (AOBJ-AUTH-001, AOBJ-AUTH-013) ---

ErrorCode SyntaxCode(const RequestAuth& auth, bool needs_session) {
  int64_t ts = -1;
  return ErrorCodeOf(CheckAuthSyntax(auth, needs_session, &ts));
}

TEST(CheckAuthSyntaxTest, AcceptsWellFormedOpenSessionAndReturnsTimestamp) {
  // AOBJ-AUTH-001
  int64_t ts = -1;
  ASSERT_TRUE(CheckAuthSyntax(ExampleAuth(), /*needs_session=*/false, &ts).ok());
  EXPECT_EQ(ts, 1795000000000);
}

TEST(CheckAuthSyntaxTest, AcceptsWellFormedSessionRequest) {
  // AOBJ-AUTH-001
  int64_t ts = -1;
  ASSERT_TRUE(CheckAuthSyntax(SessionAuth(), /*needs_session=*/true, &ts).ok());
  EXPECT_EQ(ts, 1795000000000);
}

TEST(CheckAuthSyntaxTest, AcceptsKeyIdOf128PrintableBytes) {
  // AOBJ-AUTH-001: 1*128(%x21-7E).
  RequestAuth auth = ExampleAuth();
  auth.access_key_id = std::string(128, '~');
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kOk);
  auth.access_key_id = "!";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kOk);
}

TEST(CheckAuthSyntaxTest, AcceptsLargestTimestamp) {
  // AOBJ-AUTH-001: 19 digits up to 2^63 - 1.
  RequestAuth auth = ExampleAuth();
  auth.timestamp = "9223372036854775807";
  int64_t ts = 0;
  ASSERT_TRUE(CheckAuthSyntax(auth, false, &ts).ok());
  EXPECT_EQ(ts, INT64_MAX);
}

TEST(CheckAuthSyntaxTest, RejectsEmptyKeyId) {
  // AOBJ-AUTH-001
  RequestAuth auth = ExampleAuth();
  auth.access_key_id = "";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsKeyIdOf129Bytes) {
  // AOBJ-AUTH-001
  RequestAuth auth = ExampleAuth();
  auth.access_key_id = std::string(129, 'A');
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsKeyIdWithSpaceOrControlOrNonAscii) {
  // AOBJ-AUTH-001: only %x21-7E.
  for (const std::string& id : {std::string("AK EXAMPLE"), std::string("AK\tEX"),
                               std::string("AK\x7f"), std::string("AK\xc3\xa9"),
                               std::string("AK\0X", 4)}) {
    RequestAuth auth = ExampleAuth();
    auth.access_key_id = id;
    EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication) << id;
  }
}

TEST(CheckAuthSyntaxTest, RejectsNonDecimalTimestamp) {
  // AOBJ-AUTH-001: 1*19DIGIT.
  for (const char* t : {"", "17950000000x0", "0x1A", "+1795000000000", "1.5", "1e12"}) {
    RequestAuth auth = ExampleAuth();
    auth.timestamp = t;
    EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication) << "'" << t << "'";
  }
}

TEST(CheckAuthSyntaxTest, RejectsTimestampWithSurroundingWhitespace) {
  // AOBJ-AUTH-001: 1*19DIGIT. Regression: absl::SimpleAtoi strips whitespace, and a
  // timestamp with a trailing space or line feed used to pass the syntax check.
  for (const char* t : {"1795000000000 ", "1795000000000\n", "1795000000000\t",
                        " 1795000000000", "\t1795000000000", "17950 00000000"}) {
    RequestAuth auth = ExampleAuth();
    auth.timestamp = t;
    EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication) << "'" << t << "'";
  }
}

TEST(CheckAuthSyntaxTest, RejectsNegativeTimestamp) {
  // AOBJ-AUTH-001
  RequestAuth auth = ExampleAuth();
  auth.timestamp = "-1795000000000";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsTimestampPastInt64OrTwentyDigits) {
  // AOBJ-AUTH-001: more than 19 digits, or a value above 2^63 - 1, is malformed.
  RequestAuth auth = ExampleAuth();
  auth.timestamp = "9223372036854775808";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
  auth.timestamp = "01795000000000000000";  // 20 digits, small value
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsUpperCaseNonce) {
  // AOBJ-AUTH-001: 32LHEX.
  RequestAuth auth = ExampleAuth();
  auth.nonce_hex = "000102030405060708090A0B0C0D0E0F";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsShortOrLongNonce) {
  // AOBJ-AUTH-001
  RequestAuth auth = ExampleAuth();
  auth.nonce_hex = "000102030405060708090a0b0c0d0e0";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
  auth.nonce_hex = "000102030405060708090a0b0c0d0e0f0";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
  auth.nonce_hex = "000102030405060708090a0b0c0d0e0g";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsMissingSessionWhenNeeded) {
  // AOBJ-AUTH-001: aobj-session-id on every call but OpenSession.
  RequestAuth auth = SessionAuth();
  auth.session_hex = "";
  EXPECT_EQ(SyntaxCode(auth, true), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsMalformedSession) {
  // AOBJ-AUTH-001
  RequestAuth auth = SessionAuth();
  auth.session_hex = "FFEEDDCCBBAA99887766554433221100";
  EXPECT_EQ(SyntaxCode(auth, true), ErrorCode::kMissingAuthentication);
  auth.session_hex = "ffeeddccbbaa9988776655443322110";
  EXPECT_EQ(SyntaxCode(auth, true), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsSessionGivenForOpenSession) {
  // AOBJ-AUTH-013
  RequestAuth auth = SessionAuth();
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsShortSignature) {
  // AOBJ-AUTH-001: 64LHEX.
  RequestAuth auth = ExampleAuth();
  auth.signature_hex.pop_back();
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
  auth.signature_hex = "";
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, RejectsUpperCaseSignature) {
  // AOBJ-AUTH-001: 64LHEX.
  RequestAuth auth = ExampleAuth();
  auth.signature_hex[0] = 'A';
  EXPECT_EQ(SyntaxCode(auth, false), ErrorCode::kMissingAuthentication);
}

TEST(CheckAuthSyntaxTest, LeavesTimestampUntouchedOnFailure) {
  // AOBJ-AUTH-001: the output is written only on success.
  RequestAuth auth = ExampleAuth();
  auth.signature_hex = "";
  int64_t ts = 42;
  EXPECT_FALSE(CheckAuthSyntax(auth, false, &ts).ok());
  EXPECT_EQ(ts, 42);
}

}  // namespace
}  // namespace aobj
