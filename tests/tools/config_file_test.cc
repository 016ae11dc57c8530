// aobj-server's configuration file: strict `key = value` lines, flags override the file.
#include "config_file.h"

#include "gtest/gtest.h"

namespace aobj::tools {
namespace {

ConfigKeys Keys() {
  ConfigKeys k;
  k.value_keys = {"listen", "store", "create-bucket"};
  k.bool_keys = {"plaintext", "quiet"};
  k.repeatable_keys = {"create-bucket"};
  return k;
}

TEST(ConfigFileTest, ParsesValuesBoolsAndRepeats) {
  ParsedArgs out;
  ASSERT_TRUE(ParseConfig("# server\nlisten = 127.0.0.1:1\n\nstore=memory\nplaintext = true\n"
                          "quiet = false\ncreate-bucket = a\ncreate-bucket = b # c\n",
                          "f", Keys(), &out)
                  .ok());
  EXPECT_EQ(out.Get("listen"), "127.0.0.1:1");
  EXPECT_EQ(out.Get("store"), "memory");
  EXPECT_TRUE(out.Has("plaintext"));
  EXPECT_FALSE(out.Has("quiet"));
  ASSERT_EQ(out.flags["create-bucket"].size(), 2u);
  EXPECT_EQ(out.flags["create-bucket"][1], "b # c");  // values run to the end of the line
}

TEST(ConfigFileTest, UnknownKeyIsAnErrorNamingTheLine) {
  ParsedArgs out;
  absl::Status s = ParseConfig("listen = x\nlisten-addr = y\n", "srv.conf", Keys(), &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("srv.conf:2:"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("listen-addr"), absl::string_view::npos) << s;
}

TEST(ConfigFileTest, RejectsMalformedLines) {
  for (const char* bad : {"listen\n", "= x\n", "listen = a\nlisten = b\n", "plaintext = yes\n",
                          "store =\n"}) {
    ParsedArgs out;
    EXPECT_FALSE(ParseConfig(bad, "f", Keys(), &out).ok()) << bad;
  }
}

TEST(ConfigFileTest, FlagsOverrideTheFile) {
  ParsedArgs file, args;
  ASSERT_TRUE(ParseConfig("listen = from-file\nstore = fs\n", "f", Keys(), &file).ok());
  args.flags["listen"] = {"from-flag"};
  MergeConfig(file, &args);
  EXPECT_EQ(args.Get("listen"), "from-flag");
  EXPECT_EQ(args.Get("store"), "fs");
}

}  // namespace
}  // namespace aobj::tools
