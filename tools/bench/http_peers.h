// aobj-bench: what S3 users have today, on the same loopback. nginx (Debian's nginx-light,
// sendfile) serving files, and moto_server (a Python S3 API server) with SigV4-signed requests;
// both driven by libcurl at the same concurrency (one easy handle, one keep-alive connection per
// load thread; GET writes into a pre-faulted buffer, PUT reads from one). wrk, when installed,
// gives nginx's small-request figures the way they are usually quoted.
//
// Threading: one coordinator thread drives each server object; RunCurlCell uses load threads.
#ifndef AOBJ_TOOLS_BENCH_HTTP_PEERS_H_
#define AOBJ_TOOLS_BENCH_HTTP_PEERS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load.h"
#include "bench/proc_util.h"

namespace aobj::bench {

// nginx with `daemon off; master_process off; worker_processes 1; sendfile on;` on 127.0.0.1.
// GET serves <dir>/www/obj-<size>; PUT goes to /put/<key> through the dav module's PUT.
class NginxServer {
 public:
  static absl::StatusOr<std::unique_ptr<NginxServer>> Start(const std::string& binary,
                                                            const std::string& dir);
  pid_t pid() const { return process_->pid(); }
  // Whether this nginx was built with the dav module (nginx -V), i.e. PUT is comparable.
  bool put_supported() const { return put_supported_; }
  // Writes the file GET cells read (through the page cache, so it is warm).
  absl::Status MakeObject(uint64_t size, const uint8_t* data);
  void RemoveObject(uint64_t size);
  std::string GetUrl(uint64_t size) const;
  std::string PutUrl(const std::string& key) const;
  std::string version() const { return version_; }

 private:
  NginxServer() = default;
  std::unique_ptr<ChildProcess> process_;
  std::string dir_;
  int port_ = 0;
  bool put_supported_ = false;
  std::string version_;
};

// moto_server -H 127.0.0.1 -p PORT, with bucket `bucket` created.
class MotoServer {
 public:
  static absl::StatusOr<std::unique_ptr<MotoServer>> Start(const std::string& binary,
                                                           const std::string& dir,
                                                           const std::string& bucket);
  // An S3 server already running at 127.0.0.1:`port` (radosgw), with moto's keys; creates the
  // bucket if it is missing.
  static absl::StatusOr<std::unique_ptr<MotoServer>> Attach(int port, const std::string& bucket);
  pid_t pid() const { return process_ != nullptr ? process_->pid() : -1; }
  std::string Url(const std::string& key) const;
  absl::Status PutObject(const std::string& key, const uint8_t* data, uint64_t size);

 private:
  MotoServer() = default;
  absl::Status CreateBucket();
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
  std::string bucket_;
};

struct CurlTarget {
  bool sigv4 = false;  // moto: AWS SigV4 ("aws:amz:us-east-1:s3") with dummy credentials
  // URL of thread `t`'s operation.
  std::function<std::string(int t)> url;
};

// GET or PUT of `size` bytes per operation at spec.threads concurrency.
absl::StatusOr<LoadResult> RunCurlCell(const CurlTarget& target, Op op, uint64_t size,
                                       const LoadSpec& spec, BufferPool* pool,
                                       const std::function<void()>& at_start);

struct WrkResult {
  double p50_us = 0, p90_us = 0, p99_us = 0;
  double requests_per_s = 0;
  std::string raw;
};
// wrk -t1 -c<connections> -d<seconds>s --latency URL.
absl::StatusOr<WrkResult> RunWrk(const std::string& binary, const std::string& url, int connections,
                                 double seconds);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_HTTP_PEERS_H_
