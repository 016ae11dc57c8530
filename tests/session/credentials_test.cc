#include "session/credentials.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "aobj/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kGoodText[] =
    "# AOBJ credentials\n"
    "\n"
    "AKEXAMPLE example-secret-do-not-use\n"
    "   # indented comment\n"
    "AKOTHER\t\tother-secret   \n"
    "\r\n"
    "  AKTHIRD  third#secret\r\n";

// Writes `text` to a fresh file under the test temp dir with `mode`, returns its path.
std::string WriteFile(const std::string& name, const std::string& text, mode_t mode) {
  const std::string path = ::testing::TempDir() + "/" + name;
  unlink(path.c_str());
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  EXPECT_EQ(chmod(path.c_str(), mode), 0) << path;
  return path;
}

TEST(ParseCredentialsTest, ParsesEntriesSkippingCommentsAndBlankLines) {
  // No spec ID (session/credentials.h format): one principal per line; '#' comments and blank
  // lines ignored.
  auto creds = ParseCredentials(kGoodText);
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_THAT(*creds, UnorderedElementsAre(Pair("AKEXAMPLE", "example-secret-do-not-use"),
                                           Pair("AKOTHER", "other-secret"),
                                           Pair("AKTHIRD", "third#secret")));
}

TEST(ParseCredentialsTest, ParsesLastLineWithoutNewline) {
  // No spec ID: the file format of session/credentials.h.
  auto creds = ParseCredentials("AK1 s1\nAK2 s2");
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_THAT(*creds, UnorderedElementsAre(Pair("AK1", "s1"), Pair("AK2", "s2")));
}

TEST(ParseCredentialsTest, MalformedLineNamesItsNumber) {
  // No spec ID (session/credentials.h): INVALID_ARGUMENT naming the line. Here a line with one
  // field, on line 4 (after a comment, an entry and a blank line).
  auto creds = ParseCredentials("# c\nAK1 s1\n\nAKLONELY\nAK2 s2\n");
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(ErrorCodeOf(creds.status()), ErrorCode::kInvalidArgument);
  EXPECT_THAT(creds.status().message(), HasSubstr("line 4"));
}

TEST(ParseCredentialsTest, RejectsLineWithThreeFields) {
  // No spec ID: the file format of session/credentials.h.
  auto creds = ParseCredentials("AK1 s1\nAK2 s2 extra\n");
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(ErrorCodeOf(creds.status()), ErrorCode::kInvalidArgument);
  EXPECT_THAT(creds.status().message(), HasSubstr("line 2"));
}

TEST(ParseCredentialsTest, RejectsAccessKeyIdOver128Bytes) {
  // AOBJ-AUTH-001: an access key id is at most 128 octets, so such an entry could never sign.
  const std::string text = std::string(129, 'A') + " secret\n";
  auto creds = ParseCredentials(text);
  ASSERT_FALSE(creds.ok());
  EXPECT_THAT(creds.status().message(), HasSubstr("line 1"));
  EXPECT_TRUE(ParseCredentials(std::string(128, 'A') + " secret\n").ok());
}

TEST(ParseCredentialsTest, RejectsEmptyText) {
  // No spec ID: the file format of session/credentials.h.
  EXPECT_EQ(ErrorCodeOf(ParseCredentials("").status()), ErrorCode::kInvalidArgument);
}

TEST(ParseCredentialsTest, RejectsTextWithOnlyCommentsAndBlankLines) {
  // No spec ID: the file format of session/credentials.h.
  EXPECT_EQ(ErrorCodeOf(ParseCredentials("# nothing\n\n   \n#AK s\n").status()),
            ErrorCode::kInvalidArgument);
}

TEST(LoadCredentialsFileTest, RefusesGroupOrWorldReadableFileWhenPrivateRequired) {
  // No spec ID (session/credentials.h): the server refuses a file others can read (mode & 077),
  // since it holds secrets (AOBJ-AUTH-004, AOBJ-AUTH-015).
  const std::string path = WriteFile("creds_0644", kGoodText, 0644);
  auto creds = LoadCredentialsFile(path, /*require_private=*/true);
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(ErrorCodeOf(creds.status()), ErrorCode::kInvalidArgument);
  EXPECT_THAT(creds.status().message(), HasSubstr("chmod 600"));
}

TEST(LoadCredentialsFileTest, RefusesGroupOnlyReadableFileWhenPrivateRequired) {
  // No spec ID: credentials.h contract; the file holds secrets (AOBJ-AUTH-004, -015).
  const std::string path = WriteFile("creds_0640", kGoodText, 0640);
  EXPECT_FALSE(LoadCredentialsFile(path, /*require_private=*/true).ok());
}

TEST(LoadCredentialsFileTest, AcceptsPrivateFile) {
  // No spec ID: credentials.h contract; the file holds secrets (AOBJ-AUTH-004, -015).
  const std::string path = WriteFile("creds_0600", kGoodText, 0600);
  auto creds = LoadCredentialsFile(path, /*require_private=*/true);
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_EQ(creds->size(), 3u);
  EXPECT_EQ(creds->at("AKEXAMPLE"), "example-secret-do-not-use");
}

TEST(LoadCredentialsFileTest, AcceptsReadableFileWhenPrivateNotRequired) {
  // No spec ID: credentials.h contract; the file holds secrets (AOBJ-AUTH-004, -015).
  const std::string path = WriteFile("creds_0644_open", kGoodText, 0644);
  auto creds = LoadCredentialsFile(path, /*require_private=*/false);
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_EQ(creds->size(), 3u);
}

TEST(LoadCredentialsFileTest, MalformedFileNamesPathAndLine) {
  // No spec ID: the file format of session/credentials.h.
  const std::string path = WriteFile("creds_bad", "AK1 s1\nbroken\n", 0600);
  auto creds = LoadCredentialsFile(path, /*require_private=*/true);
  ASSERT_FALSE(creds.ok());
  EXPECT_EQ(ErrorCodeOf(creds.status()), ErrorCode::kInvalidArgument);
  EXPECT_THAT(creds.status().message(), HasSubstr("creds_bad"));
  EXPECT_THAT(creds.status().message(), HasSubstr("line 2"));
}

TEST(LoadCredentialsFileTest, RejectsMissingFile) {
  // No spec ID: the file format of session/credentials.h.
  const std::string path = ::testing::TempDir() + "/no_such_credentials_file";
  unlink(path.c_str());
  EXPECT_EQ(ErrorCodeOf(LoadCredentialsFile(path, /*require_private=*/false).status()),
            ErrorCode::kInvalidArgument);
}

TEST(LoadCredentialsFileTest, RejectsEmptyFile) {
  // No spec ID: the file format of session/credentials.h.
  const std::string path = WriteFile("creds_empty", "", 0600);
  EXPECT_EQ(ErrorCodeOf(LoadCredentialsFile(path, /*require_private=*/true).status()),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace aobj
