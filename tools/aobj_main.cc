// aobj: command-line client for AOBJ/1 servers. A thin main over aobj::Client.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "session/credentials.h"
#include "tool_util.h"

namespace {

constexpr char kUsage[] = R"(aobj: command-line client for AOBJ/1 (S3 object access over RDMA/UCX)

Usage: aobj [flags] COMMAND ARGS...

Commands:
  put FILE BUCKET/KEY     upload FILE as an object (data moves by the server's RMA read)
  get BUCKET/KEY FILE     download an object into FILE ('-' for standard output)
  head BUCKET/KEY         show an object's metadata
  rm BUCKET/KEY           delete an object (succeeds if it does not exist)
  mb BUCKET               create a bucket
  rb BUCKET               delete an empty bucket
  session                 open a session and show what the server negotiated

Flags:
  --endpoint HOST:PORT    server control channel (default: AOBJ_ENDPOINT, else 127.0.0.1:7878)
  --tls-ca FILE           use TLS, trusting the server certificate signed by this CA
                          (default: AOBJ_TLS_CA; without it the channel is plaintext)
  --tls-cert FILE         client certificate for mutual TLS (with --tls-key)
  --tls-key FILE          client private key for mutual TLS
  --tls-server-name NAME  name expected in the server certificate
  --credentials FILE      "ACCESS_KEY_ID SECRET" file (default: AOBJ_ACCESS_KEY_ID and
                          AOBJ_SECRET_ACCESS_KEY, else AOBJ_CREDENTIALS_FILE)
  --checksum crc32c|crc64nvme   end-to-end checksum (default: crc32c)
  --content-type TYPE     content type stored with put
  --no-inline             always use the RMA data channel, even for small bodies
  --require-hardware-protection   refuse servers whose data channel is emulated
  --net-devices LIST      UCX_NET_DEVICES unless set in the environment (default: lo)
  --quiet                 print nothing on success
  --help                  this text

Exit status: 0 on success, 1 when the operation failed (the AOBJ error and its S3 name are
printed), 2 on a usage error.
)";

int Usage(const std::string& msg) {
  std::cerr << "aobj: " << msg << "\n(run aobj --help for usage)\n";
  return 2;
}

int Fail(const std::string& what, const absl::Status& st) {
  std::cerr << "aobj: " << what << ": " << aobj::tools::DescribeError(st) << "\n";
  return 1;
}

bool SplitPath(const std::string& s, std::string* bucket, std::string* key) {
  auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size()) return false;
  *bucket = s.substr(0, slash);
  *key = s.substr(slash + 1);
  return true;
}

std::string Checksum(const aobj::ObjectInfo& info) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", info.crc32c);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  aobj::tools::ParsedArgs args;
  absl::Status st = aobj::tools::ParseArgs(
      argc, argv, 1, {"endpoint", "credentials", "checksum", "content-type", "net-devices", "tls-ca", "tls-cert",
       "tls-key", "tls-server-name"},
      {"no-inline", "require-hardware-protection", "quiet"}, &args);
  if (!st.ok()) return Usage(std::string(st.message()));
  if (args.positional.empty()) return Usage("no command given");
  const std::string cmd = args.positional[0];
  const std::vector<std::string> pos(args.positional.begin() + 1, args.positional.end());
  const bool quiet = args.Has("quiet");

  aobj::ClientOptions options;
  const char* env_endpoint = std::getenv("AOBJ_ENDPOINT");
  options.endpoint = args.Get("endpoint", env_endpoint ? env_endpoint : "127.0.0.1:7878");
  options.client_name = "aobj-cli/0.1";
  const char* env_ca = std::getenv("AOBJ_TLS_CA");
  options.tls.ca_file = args.Get("tls-ca", env_ca ? env_ca : "");
  options.tls.cert_file = args.Get("tls-cert");
  options.tls.key_file = args.Get("tls-key");
  options.tls.server_name_override = args.Get("tls-server-name");
  options.tls.enabled = !options.tls.ca_file.empty() || !options.tls.cert_file.empty();
  options.allow_inline = !args.Has("no-inline");
  options.require_hardware_protection = args.Has("require-hardware-protection");
  options.data_channel.net_devices = args.Get("net-devices", "lo");
  const std::string checksum = args.Get("checksum", "crc32c");
  if (checksum == "crc32c") {
    options.checksum = aobj::ChecksumAlgorithm::kCrc32c;
  } else if (checksum == "crc64nvme") {
    options.checksum = aobj::ChecksumAlgorithm::kCrc64Nvme;
  } else {
    return Usage("--checksum must be crc32c or crc64nvme");
  }
  absl::StatusOr<aobj::Credential> cred =
      args.Has("credentials")
          ? [&]() -> absl::StatusOr<aobj::Credential> {
              auto c = aobj::LoadCredentialsFile(args.Get("credentials"), false);
              if (!c.ok()) return c.status();
              return aobj::Credential{c->begin()->first, c->begin()->second};
            }()
          : aobj::ClientCredentialFromEnvironment("");
  if (!cred.ok()) return Usage(std::string(cred.status().message()));
  options.access_key_id = cred->access_key_id;
  options.secret = cred->secret;

  std::string bucket, key;
  auto need = [&](size_t n, const char* form) -> bool {
    if (pos.size() != n) {
      Usage(absl::StrCat("usage: aobj ", form));
      return false;
    }
    return true;
  };

  // Validate the command's arguments before opening a session.
  if (cmd == "put") {
    if (!need(2, "put FILE BUCKET/KEY")) return 2;
    if (!SplitPath(pos[1], &bucket, &key)) return Usage("expected BUCKET/KEY, got " + pos[1]);
  } else if (cmd == "get") {
    if (!need(2, "get BUCKET/KEY FILE")) return 2;
    if (!SplitPath(pos[0], &bucket, &key)) return Usage("expected BUCKET/KEY, got " + pos[0]);
  } else if (cmd == "head" || cmd == "rm") {
    if (!need(1, "head|rm BUCKET/KEY")) return 2;
    if (!SplitPath(pos[0], &bucket, &key)) return Usage("expected BUCKET/KEY, got " + pos[0]);
  } else if (cmd == "mb" || cmd == "rb") {
    if (!need(1, "mb|rb BUCKET")) return 2;
    bucket = pos[0];
  } else if (cmd == "session") {
    if (!need(0, "session")) return 2;
  } else {
    return Usage("unknown command '" + cmd + "'");
  }

  auto client = aobj::Client::Connect(options);
  if (!client.ok()) return Fail(absl::StrCat("cannot open a session with ", options.endpoint),
                                client.status());
  aobj::Client& c = **client;

  if (cmd == "session") {
    const aobj::SessionInfo& s = c.session();
    std::cout << "server:            " << s.server_name << " at " << options.endpoint << "\n"
              << "protocol version:  " << s.version << "\n"
              << "session id:        " << s.session_id << "\n"
              << "lease:             " << s.lease_ms << " ms\n"
              << "memory protection: "
              << (s.protection == aobj::MemoryProtection::kHardware ? "hardware" : "emulated")
              << "\n"
              << "capabilities:     ";
    for (uint32_t cap : s.capabilities) std::cout << " " << cap;
    std::cout << "\nlimits:            max_transfer_bytes=" << s.limits.max_transfer_bytes
              << " max_in_flight=" << s.limits.max_in_flight
              << " inline_threshold=" << s.limits.inline_threshold
              << " max_descriptors=" << s.limits.max_descriptors << "\n";
    return c.Close().ok() ? 0 : 1;
  }
  if (cmd == "mb" || cmd == "rb") {
    st = cmd == "mb" ? c.CreateBucket(bucket) : c.DeleteBucket(bucket);
    if (!st.ok()) return Fail(absl::StrCat(cmd, " ", bucket), st);
    if (!quiet) std::cout << (cmd == "mb" ? "created bucket " : "deleted bucket ") << bucket << "\n";
    return 0;
  }
  if (cmd == "rm") {
    st = c.Delete(bucket, key);
    if (!st.ok()) return Fail(absl::StrCat("rm ", bucket, "/", key), st);
    if (!quiet) std::cout << "deleted " << bucket << "/" << key << "\n";
    return 0;
  }
  if (cmd == "head") {
    auto info = c.Head(bucket, key);
    if (!info.ok()) return Fail(absl::StrCat("head ", bucket, "/", key), info.status());
    std::cout << "key:           " << bucket << "/" << key << "\n"
              << "size:          " << info->size << " (" << aobj::tools::HumanBytes(info->size)
              << ")\n"
              << "etag:          " << info->etag << "\n"
              << "last-modified: "
              << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(info->last_modified_ms),
                                  absl::UTCTimeZone())
              << "\n"
              << "content-type:  " << (info->content_type.empty() ? "-" : info->content_type) << "\n"
              << "crc32c:        " << Checksum(*info) << "\n";
    return 0;
  }
  if (cmd == "put") {
    int fd = open(pos[0].c_str(), O_RDONLY | O_CLOEXEC);
    struct stat sb {};
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      if (fd >= 0) close(fd);
      return Usage(absl::StrCat("cannot read regular file ", pos[0], ": ", std::strerror(errno)));
    }
    const uint64_t size = static_cast<uint64_t>(sb.st_size);
    auto buf = c.AllocateBuffer(std::max<uint64_t>(size, 1));
    if (!buf.ok()) return Fail("allocate buffer", buf.status());
    for (uint64_t off = 0; off < size;) {
      ssize_t r = pread(fd, (*buf)->data() + off, size - off, static_cast<off_t>(off));
      if (r <= 0) {
        close(fd);
        return Usage(absl::StrCat("read ", pos[0], ": ", r < 0 ? std::strerror(errno) : "short"));
      }
      off += static_cast<uint64_t>(r);
    }
    close(fd);
    aobj::PutOptions po;
    po.content_type = args.Get("content-type", "");
    const absl::Time t0 = absl::Now();
    auto r = c.Put(bucket, key, **buf, size, po);
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    if (!r.ok()) return Fail(absl::StrCat("put ", bucket, "/", key), r.status());
    if (!quiet) {
      std::cout << "put " << pos[0] << " -> " << bucket << "/" << key << ": " << size
                << " bytes (" << aobj::tools::HumanBytes(size) << ") in "
                << absl::StrFormat("%.3f", secs) << " s, " << aobj::tools::HumanRate(size, secs)
                << ", path=" << aobj::TransferPathName(r->path) << ", etag=" << r->info.etag
                << ", crc32c=" << Checksum(r->info) << " (verified by both sides)\n";
    }
    buf->reset();
    return c.Close().ok() ? 0 : 1;
  }
  // get
  auto info = c.Head(bucket, key);
  if (!info.ok()) return Fail(absl::StrCat("get ", bucket, "/", key), info.status());
  auto buf = c.AllocateBuffer(std::max<uint64_t>(info->size, 1));
  if (!buf.ok()) return Fail("allocate buffer", buf.status());
  const absl::Time t0 = absl::Now();
  auto r = c.Get(bucket, key, **buf);
  const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
  if (!r.ok()) return Fail(absl::StrCat("get ", bucket, "/", key), r.status());
  const uint64_t size = r->bytes_transferred;
  const bool to_stdout = pos[1] == "-";
  const std::string tmp = pos[1] + ".aobj-partial";
  int fd = to_stdout ? 1 : open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Usage(absl::StrCat("cannot write ", pos[1], ": ", std::strerror(errno)));
  for (uint64_t off = 0; off < size;) {
    ssize_t w = write(fd, (*buf)->data() + off, size - off);
    if (w <= 0) {
      if (!to_stdout) unlink(tmp.c_str());
      return Usage(absl::StrCat("write ", pos[1], ": ", std::strerror(errno)));
    }
    off += static_cast<uint64_t>(w);
  }
  if (!to_stdout) {
    // The file appears whole or not at all.
    if (fsync(fd) != 0 || close(fd) != 0 || std::rename(tmp.c_str(), pos[1].c_str()) != 0) {
      unlink(tmp.c_str());
      return Usage(absl::StrCat("write ", pos[1], ": ", std::strerror(errno)));
    }
  }
  if (!quiet) {
    (to_stdout ? std::cerr : std::cout)
        << "get " << bucket << "/" << key << " -> " << pos[1] << ": " << size << " bytes ("
        << aobj::tools::HumanBytes(size) << ") in " << absl::StrFormat("%.3f", secs) << " s, "
        << aobj::tools::HumanRate(size, secs) << ", path=" << aobj::TransferPathName(r->path)
        << ", etag=" << r->info.etag << ", crc32c=" << Checksum(r->info)
        << " (verified by both sides)\n";
  }
  buf->reset();
  return c.Close().ok() ? 0 : 1;
}
