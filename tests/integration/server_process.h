// Test support: runs aobj-server (or any tool) as a separate process on 127.0.0.1.
#ifndef AOBJ_TESTS_INTEGRATION_SERVER_PROCESS_H_
#define AOBJ_TESTS_INTEGRATION_SERVER_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "gtest/gtest.h"

extern char** environ;

namespace aobj::testing {

inline constexpr char kAccessKey[] = "AKTESTPRIMARY";
inline constexpr char kSecret[] = "primary-secret-for-tests-only";

// Starts a process; returns its pid (or -1). stdout/stderr go to `log_path` when non-empty.
inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Waits for `pid` up to `timeout`; returns the wait status or -1 on timeout.
inline int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Removes every directory TestDir() handed out once its test has ended (after the fixture's
// destructor, so servers have stopped and mounts are gone). Stores of several hundred MiB per
// test would otherwise pile up in /tmp run after run until the disk is full (they did: CI failed
// with "no space left on device"). AOBJ_KEEP_TEST_DIRS=1 keeps them for debugging.
class TestDirCleaner : public ::testing::EmptyTestEventListener {
 public:
  static TestDirCleaner& Instance() {
    static TestDirCleaner* cleaner = [] {
      auto* c = new TestDirCleaner;
      ::testing::UnitTest::GetInstance()->listeners().Append(c);  // gtest owns it
      return c;
    }();
    return *cleaner;
  }
  void Add(const std::string& dir) { dirs_.push_back(dir); }
  void OnTestEnd(const ::testing::TestInfo&) override {
    const char* keep = std::getenv("AOBJ_KEEP_TEST_DIRS");
    for (const std::string& dir : dirs_) {
      if (keep != nullptr && std::string(keep) == "1") {
        std::fprintf(stderr, "AOBJ_KEEP_TEST_DIRS=1: kept %s\n", dir.c_str());
        continue;
      }
      const std::string cmd = "rm -rf '" + dir + "'";
      if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "could not remove the test directory %s\n", dir.c_str());
      }
    }
    dirs_.clear();
  }

 private:
  TestDirCleaner() = default;
  std::vector<std::string> dirs_;
};

// A fresh directory for the running test: TempDir()/aobj-<suite>-<test>, with the '/' of
// parameterised names replaced. It is removed when the test ends (TestDirCleaner).
inline std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "-" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  // The pid keeps two runs of the suite on one machine (a developer and CI) apart.
  std::string dir = ::testing::TempDir() + "aobj-" + name + "-" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) return dir;
  TestDirCleaner::Instance().Add(dir);
  return dir;
}

// An aobj-server process with its own temporary directory, credentials and store.
class ServerProcess {
 public:
  // `store` is "memory" or "fs". Extra flags are appended.
  ServerProcess(const std::string& dir, const std::string& store,
                std::vector<std::string> extra = {})
      : dir_(dir) {
    mkdir(dir_.c_str(), 0700);
    creds_ = dir_ + "/credentials";
    {
      std::ofstream out(creds_);
      out << "# test principals\n" << kAccessKey << " " << kSecret << "\n"
          << "AKTESTSECOND second-secret-for-tests\n";
    }
    chmod(creds_.c_str(), 0600);
    store_ = store;
    extra_ = std::move(extra);
  }
  ~ServerProcess() { Stop(); }

  // Starts the server and waits until it serves; false on failure (log() tells why).
  bool Start() {
    const std::string port_file = dir_ + "/port";
    unlink(port_file.c_str());
    const std::string listen = "127.0.0.1:" + std::to_string(same_port_ ? port_ : 0);
    std::vector<std::string> argv = {AOBJ_SERVER_BINARY,
                                     "--listen",
                                     listen,
                                     "--port-file",
                                     port_file,
                                     "--credentials",
                                     creds_,
                                     "--store",
                                     store_,
                                     "--root",
                                     dir_ + "/data",
                                     "--create-bucket",
                                     "test-bucket"};
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    if (std::find(extra_.begin(), extra_.end(), "--tls-cert") == extra_.end()) {
      argv.push_back("--plaintext");  // tests on loopback; TLS tests pass --tls-cert
    }
    pid_ = Spawn(argv, dir_ + "/server.log");
    if (pid_ < 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string p = ReadFile(port_file);
      if (!p.empty() && p.back() == '\n') {
        port_ = std::stoi(p);
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Kill(int sig) {
    if (pid_ > 0) {
      kill(pid_, sig);
      WaitFor(pid_, std::chrono::seconds(20));
      pid_ = -1;
    }
  }
  void Stop() { Kill(SIGTERM); }
  // Stops the server if it runs (SIGKILL when `sig` says so) and starts it again on the same
  // directory and store; the port changes.
  bool Restart(int sig = SIGTERM) {
    Kill(sig);
    return Start();
  }
  // The same, on the same port, as an operator's restart looks to a client that keeps its
  // endpoint.
  bool RestartOnSamePort(int sig = SIGTERM) {
    Kill(sig);
    same_port_ = true;
    const bool started = Start();
    same_port_ = false;
    return started;
  }
  bool Alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  pid_t pid() const { return pid_; }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& credentials_file() const { return creds_; }
  std::string log() const { return ReadFile(dir_ + "/server.log"); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, creds_, store_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool same_port_ = false;
};

// A client of `server` as the primary test principal; null (and a test failure) when the
// session does not open.
inline std::unique_ptr<Client> ConnectTo(const ServerProcess& server) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace aobj::testing

#endif  // AOBJ_TESTS_INTEGRATION_SERVER_PROCESS_H_
