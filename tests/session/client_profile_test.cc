// Client profiles: ~/.aobj/credentials and ~/.aobj/config in the S3 tools' conventions.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"
#include "session/credentials.h"
#include "session/session_table.h"

namespace aobj {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  // Per test: ctest runs the tests of this binary in parallel processes.
  const std::string path = ::testing::TempDir() + "aobj-profile-" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           "-" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(IniTest, ParsesSectionsAndIgnoresComments) {
  auto ini = ParseIni("# c\n; c\n[default]\na = 1\n\n[profile lab]\n endpoint = h:1 \n");
  ASSERT_TRUE(ini.ok()) << ini.status();
  EXPECT_EQ((*ini)["default"]["a"], "1");
  EXPECT_EQ((*ini)["profile lab"]["endpoint"], "h:1");
}

TEST(IniTest, RejectsMalformedLinesNamingTheLine) {
  for (const char* bad : {"a = 1\n", "[default]\nnot a pair\n", "[default\n",
                          "[a]\nk=1\nk=2\n", "[a]\n[a]\n", "[]\n"}) {
    auto ini = ParseIni(bad);
    ASSERT_FALSE(ini.ok()) << bad;
    EXPECT_NE(ini.status().message().find("line "), absl::string_view::npos);
  }
}

class ResolveClientProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.shared_credentials_file = WriteTemp(
        "credentials",
        "[default]\naobj_access_key_id = AKDEFAULT\naobj_secret_access_key = s1\n"
        "[lab]\naobj_access_key_id = AKLAB\naobj_secret_access_key = s2\n"
        "[half]\naobj_access_key_id = AKHALF\n");
    env_.config_file = WriteTemp("config", "[default]\nendpoint = 127.0.0.1:7000\n"
                                           "[profile lab]\nendpoint = 127.0.0.1:7001\n");
  }
  ClientEnvironment env_;
};

TEST_F(ResolveClientProfileTest, DefaultProfile) {
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "default");
  EXPECT_EQ(p->credential.access_key_id, "AKDEFAULT");
  EXPECT_EQ(p->credential.secret, "s1");
  EXPECT_EQ(p->endpoint, "127.0.0.1:7000");
}

TEST_F(ResolveClientProfileTest, NamedProfileUsesProfileSectionOfConfig) {
  env_.profile = "lab";
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->credential.access_key_id, "AKLAB");
  EXPECT_EQ(p->endpoint, "127.0.0.1:7001");
}

TEST_F(ResolveClientProfileTest, EnvironmentKeysWinOverProfile) {
  env_.access_key_id = "AKENV";
  env_.secret = "senv";
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->credential.access_key_id, "AKENV");
  EXPECT_EQ(p->endpoint, "127.0.0.1:7000");  // still from the config file
}

TEST_F(ResolveClientProfileTest, LegacyCredentialsFileWinsOverProfile) {
  env_.credentials_file = WriteTemp("legacy", "AKLEGACY legacy-secret\n");
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->credential.access_key_id, "AKLEGACY");
}

TEST_F(ResolveClientProfileTest, UnknownNamedProfileIsAnError) {
  env_.profile = "nope";
  EXPECT_FALSE(ResolveClientProfile(env_).ok());
}

TEST_F(ResolveClientProfileTest, ProfileWithOnlyOneKeyIsAnError) {
  env_.profile = "half";
  EXPECT_FALSE(ResolveClientProfile(env_).ok());
}

TEST_F(ResolveClientProfileTest, MissingFilesAndNoKeysIsMissingAuthentication) {
  ClientEnvironment env;
  env.shared_credentials_file = ::testing::TempDir() + "aobj-profile-does-not-exist";
  env.config_file = env.shared_credentials_file;
  auto p = ResolveClientProfile(env);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(ErrorCodeOf(p.status()), ErrorCode::kMissingAuthentication);
}

// Issue 23: a boto3 user's file works as it is; what is missing is named; loose files warned.
TEST_F(ResolveClientProfileTest, AwsKeyNamesAreAccepted) {
  env_.shared_credentials_file =
      WriteTemp("aws", "[default]\naws_access_key_id = AKAWS\naws_secret_access_key = s-aws\n");
  chmod(env_.shared_credentials_file.c_str(), 0600);
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->credential.access_key_id, "AKAWS");
  EXPECT_EQ(p->credential.secret, "s-aws");
  EXPECT_NE(p->credential_source.find("[default]"), std::string::npos) << p->credential_source;
  EXPECT_TRUE(p->warnings.empty());
}

TEST_F(ResolveClientProfileTest, AProfileWithoutKeysSaysWhatItHolds) {
  env_.shared_credentials_file = WriteTemp("nokeys", "[default]\naccess_key = AKX\nsecret = y\n");
  auto p = ResolveClientProfile(env_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(ErrorCodeOf(p.status()), ErrorCode::kMissingAuthentication);
  EXPECT_NE(p.status().message().find("holds only access_key, secret"), absl::string_view::npos)
      << p.status();
}

TEST_F(ResolveClientProfileTest, ACredentialsFileOthersCanReadIsUsedWithAWarning) {
  chmod(env_.shared_credentials_file.c_str(), 0644);
  auto p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->warnings.size(), 1u);
  EXPECT_NE(p->warnings[0].find("chmod 600"), std::string::npos) << p->warnings[0];
  EXPECT_NE(p->warnings[0].find("0644"), std::string::npos) << p->warnings[0];
  chmod(env_.shared_credentials_file.c_str(), 0600);
  p = ResolveClientProfile(env_);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->warnings.empty());
}

TEST_F(ResolveClientProfileTest, AMissingProfileNamesWhereItWasChosen) {
  env_.profile = "nowhere";
  env_.profile_source = "--profile";
  auto p = ResolveClientProfile(env_);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--profile names profile 'nowhere'"), absl::string_view::npos)
      << p.status();
}

TEST_F(ResolveClientProfileTest, MalformedFileIsAnErrorNamingIt) {
  env_.shared_credentials_file = WriteTemp("bad", "[default]\ngarbage\n");
  auto p = ResolveClientProfile(env_);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("IsAnErrorNamingIt-bad"), absl::string_view::npos);
}

TEST(SessionTableListTest, ListsOpenSessionsWithAgeLeaseAndInFlight) {
  SessionTable table(absl::Seconds(30), absl::Seconds(60));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  SessionState a;
  a.access_key_id = "AKA";
  a.limits.max_in_flight = 4;
  const std::string id = table.Create(a, t0);
  SessionState b;
  b.access_key_id = "AKB";
  const std::string closed = table.Create(b, t0 + absl::Seconds(1));
  ASSERT_TRUE(table.Close(closed, "AKB").ok());
  auto slot = table.Admit(id);
  ASSERT_TRUE(slot.ok()) << slot.status();
  auto rows = table.List();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id_hex, id);
  EXPECT_EQ(rows[0].access_key_id, "AKA");
  EXPECT_EQ(rows[0].state, "open");
  EXPECT_EQ(rows[0].created, t0);
  EXPECT_EQ(rows[0].expires, t0 + absl::Seconds(30));
  EXPECT_EQ(rows[0].in_flight, 1u);
  EXPECT_EQ(table.transfers_in_flight(), 1u);
  slot->reset();
  EXPECT_EQ(table.transfers_in_flight(), 0u);
}

}  // namespace
}  // namespace aobj
