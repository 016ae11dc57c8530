// embed-server: a product's own process serving AOBJ/1 in front of its own object store
// (TinyStore, tiny_store.cc) with the aobj server stack.
//
//   AOBJ_ACCESS_KEY_ID=AK AOBJ_SECRET_ACCESS_KEY=secret ./embed-server 127.0.0.1:0 PORT_FILE
// serves until SIGINT/SIGTERM; writes the bound port to PORT_FILE.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "aobj/server.h"
#include "aobj/status.h"
#include "tiny_store.h"

int main(int argc, char** argv) {
  if (argc != 3 || !std::getenv("AOBJ_ACCESS_KEY_ID") || !std::getenv("AOBJ_SECRET_ACCESS_KEY")) {
    std::cerr << "usage: AOBJ_ACCESS_KEY_ID=.. AOBJ_SECRET_ACCESS_KEY=.. embed-server HOST:PORT "
                 "PORT_FILE\n";
    return 2;
  }
  aobj::ServerOptions options;
  options.listen_address = argv[1];
  options.allow_plaintext = true;  // loopback demo; production sets options.tls
  options.credentials[std::getenv("AOBJ_ACCESS_KEY_ID")] = std::getenv("AOBJ_SECRET_ACCESS_KEY");
  options.log = [](const std::string& line) { std::cerr << "embed-server " << line << "\n"; };

  std::unique_ptr<aobj::ObjectStore> store = NewTinyStore();
  if (absl::Status s = store->CreateBucket("embed"); !s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  // Block the stop signals before the server starts its threads; this thread waits for them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto server = aobj::Server::Start(options, std::move(store));
  if (!server.ok()) {
    std::cerr << "start: " << server.status() << "\n";
    return 1;
  }
  {
    const std::string tmp = std::string(argv[2]) + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::rename(tmp.c_str(), argv[2]);
  }
  int sig = 0;
  sigwait(&sigs, &sig);
  (*server)->Shutdown();
  const aobj::ServerStats s = (*server)->stats();
  std::cerr << "embed-server: stopped after " << s.requests << " requests, " << s.bytes_in
            << " bytes in, " << s.bytes_out << " bytes out\n";
  return 0;
}
