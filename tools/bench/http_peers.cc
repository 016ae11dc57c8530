#include "bench/http_peers.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace aobj::bench {
namespace {

constexpr char kMotoAccessKey[] = "benchkey";
constexpr char kMotoSecret[] = "benchsecret";

struct Sink {
  uint8_t* data = nullptr;
  size_t capacity = 0;
  size_t got = 0;
};

size_t WriteToSink(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t n = size * nmemb;
  if (n > s->capacity - s->got) return 0;  // larger than expected: abort the transfer
  std::memcpy(s->data + s->got, ptr, n);
  s->got += n;
  return n;
}

size_t DiscardBody(char*, size_t size, size_t nmemb, void*) { return size * nmemb; }

struct Source {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t off = 0;
};

size_t ReadFromSource(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* s = static_cast<Source*>(user);
  const size_t n = std::min(size * nmemb, s->size - s->off);
  std::memcpy(ptr, s->data + s->off, n);
  s->off += n;
  return n;
}

// One easy handle set up for GET or PUT; reused for every operation of a thread (keep-alive).
class CurlOp {
 public:
  CurlOp(bool sigv4, Op op, const std::string& url, uint8_t* buf, size_t size)
      : op_(op), size_(size) {
    h_ = curl_easy_init();
    curl_easy_setopt(h_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h_, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h_, CURLOPT_BUFFERSIZE, static_cast<long>(CURL_MAX_READ_SIZE));
    curl_easy_setopt(h_, CURLOPT_PROXY, "");
    if (!sigv4) {
      headers_ = curl_slist_append(headers_, "Expect:");  // no 100-continue round trip
    } else {
      // curl would sign an empty "Expect:" and then not send it (radosgw then refuses the
      // signature): let curl send its 100-continue, without waiting for the answer.
      curl_easy_setopt(h_, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    }
    if (sigv4) {
      curl_easy_setopt(h_, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
      curl_easy_setopt(h_, CURLOPT_USERPWD, absl::StrCat(kMotoAccessKey, ":", kMotoSecret).c_str());
      // Also on GETs: curl does not send the header itself, and radosgw then signs with
      // UNSIGNED-PAYLOAD where curl signed the empty body's hash.
      headers_ = curl_slist_append(headers_, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    }
    curl_easy_setopt(h_, CURLOPT_HTTPHEADER, headers_);
    if (op == Op::kGet) {
      sink_.data = buf;
      sink_.capacity = size;
      curl_easy_setopt(h_, CURLOPT_WRITEFUNCTION, &WriteToSink);
      curl_easy_setopt(h_, CURLOPT_WRITEDATA, &sink_);
    } else {
      source_.data = buf;
      source_.size = size;
      curl_easy_setopt(h_, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h_, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
      curl_easy_setopt(h_, CURLOPT_READFUNCTION, &ReadFromSource);
      curl_easy_setopt(h_, CURLOPT_READDATA, &source_);
      curl_easy_setopt(h_, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
      curl_easy_setopt(h_, CURLOPT_WRITEFUNCTION, &DiscardBody);
    }
  }
  ~CurlOp() {
    curl_easy_cleanup(h_);
    curl_slist_free_all(headers_);
  }
  CurlOp(const CurlOp&) = delete;
  CurlOp& operator=(const CurlOp&) = delete;

  absl::Status Run() {
    sink_.got = 0;
    source_.off = 0;
    const CURLcode rc = curl_easy_perform(h_);
    if (rc != CURLE_OK) {
      return absl::InternalError(absl::StrCat("curl: ", curl_easy_strerror(rc)));
    }
    long code = 0;
    curl_easy_getinfo(h_, CURLINFO_RESPONSE_CODE, &code);
    if (op_ == Op::kGet) {
      if (code != 200 || sink_.got != size_) {
        return absl::InternalError(
            absl::StrCat("GET: HTTP ", code, ", ", sink_.got, " of ", size_, " bytes"));
      }
    } else if (code != 200 && code != 201 && code != 204) {
      return absl::InternalError(absl::StrCat("PUT: HTTP ", code));
    }
    return absl::OkStatus();
  }

 private:
  CURL* h_ = nullptr;
  curl_slist* headers_ = nullptr;
  Op op_;
  size_t size_;
  Sink sink_;
  Source source_;
};

absl::Status CurlPut(bool sigv4, const std::string& url, const uint8_t* data, uint64_t size) {
  CurlOp op(sigv4, Op::kPut, url, const_cast<uint8_t*>(data), static_cast<size_t>(size));
  return op.Run();
}

}  // namespace

// ---- nginx -------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<NginxServer>> NginxServer::Start(const std::string& binary,
                                                                const std::string& dir) {
  std::unique_ptr<NginxServer> n(new NginxServer());
  n->dir_ = dir;
  auto v = RunAndCapture({binary, "-V"}, 10);
  if (!v.ok()) return v.status();
  n->put_supported_ = absl::StrContains(*v, "--with-http_dav_module");
  for (absl::string_view l : absl::StrSplit(*v, '\n')) {
    if (absl::StartsWith(l, "nginx version:")) n->version_ = std::string(l.substr(15));
  }
  for (const char* sub : {"/www", "/www/put", "/tmp"}) {
    mkdir(absl::StrCat(dir, sub).c_str(), 0755);
  }
  n->port_ = PickFreePort();
  const std::string conf =
      absl::StrFormat(R"(# written by aobj-bench
daemon off;
master_process off;
worker_processes 1;
error_log %1$s/error.log warn;
pid %1$s/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  default_type application/octet-stream;
  client_body_temp_path %1$s/tmp/body;
  proxy_temp_path %1$s/tmp/proxy;
  fastcgi_temp_path %1$s/tmp/fastcgi;
  uwsgi_temp_path %1$s/tmp/uwsgi;
  scgi_temp_path %1$s/tmp/scgi;
  server {
    listen 127.0.0.1:%2$d;
    root %1$s/www;
    location /put/ {
      %3$s
      create_full_put_path on;
      client_max_body_size 0;
      client_body_buffer_size 1m;
    }
  }
}
)",
                      dir, n->port_, n->put_supported_ ? "dav_methods PUT;" : "");
  if (absl::Status s = WriteFile(absl::StrCat(dir, "/nginx.conf"), conf); !s.ok()) return s;
  ChildProcess::Options c;
  c.argv = {binary,
            "-p",
            dir,
            "-e",
            absl::StrCat(dir, "/error.log"),
            "-c",
            absl::StrCat(dir, "/nginx.conf")};
  c.log_path = absl::StrCat(dir, "/nginx.out");
  auto p = ChildProcess::Start(c);
  if (!p.ok()) return p.status();
  n->process_ = std::move(*p);
  if (!WaitForPort(n->port_, 10000)) {
    return absl::InternalError(
        absl::StrCat("nginx did not start: ", ReadSmallFile(absl::StrCat(dir, "/error.log"))));
  }
  return n;
}

absl::Status NginxServer::MakeObject(uint64_t size, const uint8_t* data) {
  const std::string path = absl::StrCat(dir_, "/www/obj-", size);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  uint64_t done = 0;
  while (done < size) {
    const ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("write ", path, ": ", strerror(errno)));
    }
    done += static_cast<uint64_t>(w);
  }
  close(fd);
  return absl::OkStatus();
}

void NginxServer::RemoveObject(uint64_t size) {
  unlink(absl::StrCat(dir_, "/www/obj-", size).c_str());
  RemoveTree(absl::StrCat(dir_, "/www/put"));
  mkdir(absl::StrCat(dir_, "/www/put").c_str(), 0755);
}

std::string NginxServer::GetUrl(uint64_t size) const {
  return absl::StrCat("http://127.0.0.1:", port_, "/obj-", size);
}

std::string NginxServer::PutUrl(const std::string& key) const {
  return absl::StrCat("http://127.0.0.1:", port_, "/put/", key);
}

// ---- moto --------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MotoServer>> MotoServer::Start(const std::string& binary,
                                                              const std::string& dir,
                                                              const std::string& bucket) {
  std::unique_ptr<MotoServer> m(new MotoServer());
  m->port_ = PickFreePort();
  m->bucket_ = bucket;
  ChildProcess::Options c;
  c.argv = {binary, "-H", "127.0.0.1", "-p", absl::StrCat(m->port_)};
  c.log_path = absl::StrCat(dir, "/moto.log");
  auto p = ChildProcess::Start(c);
  if (!p.ok()) return p.status();
  m->process_ = std::move(*p);
  if (!WaitForPort(m->port_, 60000)) {
    return absl::InternalError(
        absl::StrCat("moto_server did not start: ", ReadSmallFile(c.log_path)));
  }
  if (absl::Status st = m->CreateBucket(); !st.ok()) return st;
  return m;
}

absl::StatusOr<std::unique_ptr<MotoServer>> MotoServer::Attach(int port,
                                                               const std::string& bucket) {
  std::unique_ptr<MotoServer> m(new MotoServer());
  m->port_ = port;
  m->bucket_ = bucket;
  if (absl::Status st = m->CreateBucket(); !st.ok()) return st;
  return m;
}

// PUT /bucket; an existing bucket of ours is fine (S3: 409 BucketAlreadyOwnedByYou).
absl::Status MotoServer::CreateBucket() {
  CURL* h = curl_easy_init();
  struct curl_slist* headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  const std::string url = absl::StrCat("http://127.0.0.1:", port_, "/", bucket_);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(h, CURLOPT_USERPWD, absl::StrCat(kMotoAccessKey, ":", kMotoSecret).c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &DiscardBody);
  const CURLcode rc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK || (code != 200 && code != 409)) {
    return absl::InternalError(
        absl::StrCat("S3 peer: create bucket: ", curl_easy_strerror(rc), " HTTP ", code));
  }
  return absl::OkStatus();
}

std::string MotoServer::Url(const std::string& key) const {
  return absl::StrCat("http://127.0.0.1:", port_, "/", bucket_, "/", key);
}

absl::Status MotoServer::PutObject(const std::string& key, const uint8_t* data, uint64_t size) {
  return CurlPut(/*sigv4=*/true, Url(key), data, size);
}

// ---- load --------------------------------------------------------------------------------------

absl::StatusOr<LoadResult> RunCurlCell(const CurlTarget& target, Op op, uint64_t size,
                                       const LoadSpec& spec, BufferPool* pool,
                                       const std::function<void()>& at_start) {
  pool->Reserve(static_cast<size_t>(spec.threads));
  std::vector<std::unique_ptr<CurlOp>> handles(static_cast<size_t>(spec.threads));
  ThreadSetup setup = [&](int t) -> absl::StatusOr<OpFn> {
    uint8_t* buf = pool->Get(static_cast<size_t>(t), static_cast<size_t>(size));
    if (buf == nullptr) return absl::ResourceExhaustedError("cannot allocate a buffer");
    auto& h = handles[static_cast<size_t>(t)];
    h = std::make_unique<CurlOp>(target.sigv4, op, target.url(t), buf, static_cast<size_t>(size));
    CurlOp* raw = h.get();
    return OpFn([raw]() { return raw->Run(); });
  };
  return RunLoad(spec, size, setup, [&]() -> absl::Status {
    if (at_start) at_start();
    return absl::OkStatus();
  });
}

// ---- wrk ---------------------------------------------------------------------------------------

namespace {

// "98.00us", "1.20ms", "2.00s" -> microseconds.
bool ParseWrkTime(absl::string_view t, double* us) {
  double mult = 1;
  if (absl::ConsumeSuffix(&t, "us")) {
    mult = 1;
  } else if (absl::ConsumeSuffix(&t, "ms")) {
    mult = 1e3;
  } else if (absl::ConsumeSuffix(&t, "m")) {
    mult = 60e6;
  } else if (absl::ConsumeSuffix(&t, "s")) {
    mult = 1e6;
  }
  double v = 0;
  if (!absl::SimpleAtod(t, &v)) return false;
  *us = v * mult;
  return true;
}

}  // namespace

absl::StatusOr<WrkResult> RunWrk(const std::string& binary, const std::string& url, int connections,
                                 double seconds) {
  const int secs = std::max(1, static_cast<int>(seconds + 0.5));
  auto out = RunAndCapture({binary, "-t1", absl::StrCat("-c", connections),
                            absl::StrCat("-d", secs, "s"), "--latency", url},
                           secs + 30);
  if (!out.ok()) return out.status();
  WrkResult r;
  r.raw = *out;
  bool have_p50 = false, have_rps = false;
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() == 2 && (f[0] == "50%" || f[0] == "90%" || f[0] == "99%")) {
      double us = 0;
      if (!ParseWrkTime(f[1], &us)) continue;
      if (f[0] == "50%") {
        r.p50_us = us;
        have_p50 = true;
      } else if (f[0] == "90%") {
        r.p90_us = us;
      } else {
        r.p99_us = us;
      }
    }
    if (f.size() == 2 && f[0] == "Requests/sec:")
      have_rps = absl::SimpleAtod(f[1], &r.requests_per_s);
    if (absl::StrContains(line, "Non-2xx")) {
      return absl::InternalError(absl::StrCat("wrk saw errors: ", line));
    }
  }
  if (!have_p50 || !have_rps || r.requests_per_s <= 0) {
    return absl::InternalError(absl::StrCat("unexpected wrk output: ", *out));
  }
  return r;
}

}  // namespace aobj::bench
