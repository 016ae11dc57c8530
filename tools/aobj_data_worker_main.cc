// aobj-data-worker: the data-channel process of a confined aobj-server (one per access key;
// docs/security.md "Data channel confinement"). The server starts it; it is not run by hand.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "transport/confined_worker.h"

int main(int argc, char** argv) {
  int fd = -1;
  aobj::DataChannelOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t n = std::strlen(name);
      return a.compare(0, n, name) == 0 && a.size() > n && a[n] == '=' ? argv[i] + n + 1 : nullptr;
    };
    if (const char* v = value("--fd")) {
      if (!absl::SimpleAtoi(v, &fd)) fd = -1;
    } else if (const char* v = value("--net-devices")) {
      options.net_devices = v;
    } else if (const char* v = value("--transports")) {
      options.transports = v;
    } else if (const char* v = value("--keepalive-ms")) {
      if (!absl::SimpleAtoi(v, &options.keepalive_ms)) options.keepalive_ms = 5000;
    } else {
      std::fprintf(stderr,
                   "aobj-data-worker: unknown argument %s\n"
                   "usage: aobj-data-worker --fd=N [--net-devices=D] [--transports=T] "
                   "[--keepalive-ms=N]\n"
                   "The data-channel process of a confined aobj-server; the server starts it.\n",
                   argv[i]);
      return 2;
    }
  }
  if (fd < 0) {
    std::fprintf(stderr, "aobj-data-worker: --fd=N is required (the server starts this tool)\n");
    return 2;
  }
  const std::string why = aobj::ConfineThisProcess();
  if (!why.empty())
    std::fprintf(stderr, "aobj-data-worker: confinement incomplete: %s\n", why.c_str());
  return aobj::RunConfinedWorker(fd, options);
}
