// Test support: after hostile input, a well-behaved client still gets full service.
#ifndef AOBJ_TESTS_INTEGRATION_STILL_SERVES_H_
#define AOBJ_TESTS_INTEGRATION_STILL_SERVES_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "aobj/client.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj::testing {

// A new session of the test principal on `server`, a 100000-octet PUT by RMA of `fill` octets to
// test-bucket/`key` and the GET of it back. Fatal failures: wrap in ASSERT_NO_FATAL_FAILURE
// when the caller must stop.
// Client options for the test principal on `server`.
inline ClientOptions TestClientOptions(const ServerProcess& server) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  return o;
}

inline void ExpectStillServes(ServerProcess& server, const std::string& key, uint8_t fill) {
  ASSERT_TRUE(server.Alive()) << server.log();
  auto c = Client::Connect(TestClientOptions(server));
  ASSERT_TRUE(c.ok()) << c.status() << "\n" << server.log();
  auto buf = (*c)->AllocateBuffer(100000);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), fill, 100000);
  auto put = (*c)->Put("test-bucket", key, **buf, 100000);
  ASSERT_TRUE(put.ok()) << put.status();
  std::memset((*buf)->data(), 0, 100000);
  auto get = (*c)->Get("test-bucket", key, **buf);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ((*buf)->data()[99999], fill);
}

}  // namespace aobj::testing

#endif  // AOBJ_TESTS_INTEGRATION_STILL_SERVES_H_
