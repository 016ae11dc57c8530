// The metrics endpoint (issue 9): its HTTP request parser on hostile input, and aobj-server with
// --metrics-listen scraped over a raw socket after a real PUT and GET.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <string>

#include "aobj/client.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "server/metrics_http.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

TEST(HttpParserTest, AcceptsGetAndStripsQuery) {
  HttpParse p = ParseHttpRequest("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(p.kind, HttpParse::kOk);
  EXPECT_EQ(p.path, "/metrics");
}

TEST(HttpParserTest, WaitsForEndOfHeaders) {
  EXPECT_EQ(ParseHttpRequest("GET /metrics HTTP/1.1\r\nHost: a\r\n").kind,
            HttpParse::kIncomplete);
  EXPECT_EQ(ParseHttpRequest("").kind, HttpParse::kIncomplete);
}

TEST(HttpParserTest, RejectsOtherMethodsWith405) {
  EXPECT_EQ(ParseHttpRequest("POST /metrics HTTP/1.1\r\n\r\n").kind,
            HttpParse::kMethodNotAllowed);
  EXPECT_EQ(ParseHttpRequest("HEAD /metrics HTTP/1.0\r\n\r\n").kind,
            HttpParse::kMethodNotAllowed);
}

TEST(HttpParserTest, RejectsMalformedRequests) {
  for (const char* bad : {"GET\r\n\r\n", "GET  HTTP/1.1\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/2\r\n\r\n", "GET /a b HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n",
                          "GET /metrics HTTP/1.1\r\n folded: x\r\n\r\n",
                          "G(T /metrics HTTP/1.1\r\n\r\n"}) {
    EXPECT_EQ(ParseHttpRequest(bad).kind, HttpParse::kBadRequest) << bad;
  }
}

TEST(HttpParserTest, RejectsOversizedRequestLineBeforeItEnds) {
  std::string line = "GET /" + std::string(kMaxRequestLine, 'a');
  EXPECT_EQ(ParseHttpRequest(line).kind, HttpParse::kBadRequest);
}

TEST(HttpParserTest, RejectsTooManyHeaders) {
  std::string req = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i <= kMaxHeaderLines; ++i) req += "X-A: b\r\n";
  req += "\r\n";
  EXPECT_EQ(ParseHttpRequest(req).kind, HttpParse::kBadRequest);
}

TEST(HttpParserTest, RejectsHeadersPastTheByteBound) {
  std::string req = "GET / HTTP/1.1\r\nX-A: " + std::string(kMaxHeaderBytes, 'b');
  EXPECT_EQ(ParseHttpRequest(req).kind, HttpParse::kBadRequest);
}

// Sends `request` to 127.0.0.1:port and returns everything the server answers.
std::string RawHttp(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// The value of the sample line `name` (full name with labels), or -1.
double Sample(const std::string& text, const std::string& name) {
  const std::string prefix = name + " ";
  size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + prefix.size()));
    pos += prefix.size();
  }
  return -1;
}

TEST(MetricsEndpointTest, ReportsRealFiguresAndSessions) {
  const std::string dir = testing::TestDir();
  ServerProcess server(dir, "memory",
                       {"--metrics-listen", "127.0.0.1:0", "--metrics-port-file",
                        dir + "/metrics-port"});
  ASSERT_TRUE(server.Start()) << server.log();
  int metrics_port = 0;
  for (int i = 0; i < 200 && metrics_port == 0; ++i) {
    const std::string p = testing::ReadFile(dir + "/metrics-port");
    if (!p.empty() && p.back() == '\n') metrics_port = std::stoi(p);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(metrics_port, 0) << server.log();

  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  auto client = Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  constexpr size_t kSize = 1 << 20;  // RMA path
  auto buf = (*client)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), 'x', kSize);
  ASSERT_TRUE((*client)->Put("test-bucket", "m", **buf, kSize).ok());
  ASSERT_TRUE((*client)->Get("test-bucket", "m", **buf).ok());
  EXPECT_FALSE((*client)->Get("test-bucket", "missing", **buf).ok());

  const std::string resp = RawHttp(metrics_port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  const std::string text = resp.substr(resp.find("\r\n\r\n") + 4);
  EXPECT_EQ(Sample(text, "aobj_bytes_in_total"), kSize) << text;
  EXPECT_EQ(Sample(text, "aobj_bytes_out_total"), kSize) << text;
  EXPECT_EQ(Sample(text, "aobj_requests_total{method=\"PutObject\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "aobj_requests_total{method=\"GetObject\"}"), 2) << text;
  EXPECT_EQ(Sample(text, "aobj_request_errors_total{code=\"NO_SUCH_KEY\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "aobj_request_duration_seconds_bucket{method=\"PutObject\",le=\"+Inf\"}"),
            1) << text;
  EXPECT_EQ(Sample(text, "aobj_request_duration_seconds_bucket{method=\"GetObject\",le=\"10\"}"),
            2) << text;
  EXPECT_EQ(Sample(text, "aobj_sessions_open"), 1) << text;
  EXPECT_EQ(Sample(text, "aobj_transfers_in_flight"), 0) << text;
  EXPECT_GE(Sample(text, "aobj_endpoints"), 1) << text;

  const std::string sessions = RawHttp(metrics_port, "GET /sessions HTTP/1.0\r\n\r\n");
  ASSERT_EQ(sessions.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << sessions;
  EXPECT_NE(sessions.find(std::string("\"access_key_id\":\"") + kAccessKey + "\""),
            std::string::npos) << sessions;
  EXPECT_TRUE(std::regex_search(sessions, std::regex("\"id\":\"[0-9a-f]{32}\""))) << sessions;
  EXPECT_NE(sessions.find("\"state\":\"open\""), std::string::npos) << sessions;

  EXPECT_EQ(RawHttp(metrics_port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(RawHttp(metrics_port, "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(RawHttp(metrics_port, "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  // The server still serves the control channel after all that.
  EXPECT_TRUE((*client)->Get("test-bucket", "m", **buf).ok());
}

TEST(MetricsEndpointTest, RefusesNonLoopbackAddressByDefault) {
  auto s = MetricsHttpServer::Start("0.0.0.0:0", false,
                                    [](const std::string&) { return HttpResponse{}; });
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace aobj
