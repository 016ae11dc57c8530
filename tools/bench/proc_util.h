// aobj-bench: processes and their costs. Spawning helper processes (aobj-server, nginx, moto,
// the bench's own worker and raw-UCX target processes), reading their CPU time and resident
// memory from /proc, temp directories and loopback ports.
//
// Threading: the free functions are thread-safe; a ChildProcess belongs to one thread.
#ifndef AOBJ_TOOLS_BENCH_PROC_UTIL_H_
#define AOBJ_TOOLS_BENCH_PROC_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace aobj::bench {

// CLOCK_MONOTONIC in nanoseconds: comparable across the processes of one host.
int64_t NowNs();

// utime + stime of the whole process `pid` (all threads) from /proc/<pid>/stat; < 0 on error.
double ProcCpuSeconds(pid_t pid);
// A "VmRSS"/"VmHWM"-style field of /proc/<pid>/status in KiB; < 0 on error.
int64_t ProcStatusKib(pid_t pid, const char* field);
// CPU seconds (user + system) of this process, all threads (getrusage RUSAGE_SELF).
double SelfCpuSeconds();

// A child process. Destruction stops it (SIGTERM, then SIGKILL after a grace period).
class ChildProcess {
 public:
  struct Options {
    std::vector<std::string> argv;           // argv[0] is the path of the program
    std::map<std::string, std::string> env;  // added to (or replacing in) our environment
    std::string log_path;                    // stdout+stderr go here unless piped; empty: ours
    bool pipe_stdio = false;                 // stdin and stdout become pipes to us
    bool stderr_to_stdout = false;           // with pipe_stdio: stderr joins the stdout pipe
  };
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const Options& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Line protocol over the pipes (pipe_stdio only). ReadLine returns false at EOF/timeout.
  bool WriteLine(const std::string& line);
  bool ReadLine(std::string* line, int timeout_ms = 600000);
  void CloseStdin();
  // Sends `sig`, waits up to `grace_ms`, then SIGKILL. Returns the wait status (or -1).
  int Stop(int sig = 15, int grace_ms = 5000);

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int in_fd_ = -1;   // our end of the child's stdin
  int out_fd_ = -1;  // our end of the child's stdout
  std::string buffered_;
  bool reaped_ = false;
  int status_ = -1;
};

// Makes SIGINT, SIGTERM, SIGHUP and fatal signals (SIGSEGV, SIGABRT, ...) stop every live
// ChildProcess with SIGTERM before this process dies, so that no server, nginx or moto outlives an
// interrupted or crashed bench. Call once, early, from main().
void InstallChildCleanup();

// mkdtemp under /tmp; RemoveTree deletes a directory recursively (best effort).
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix);
void RemoveTree(const std::string& path);
absl::Status WriteFile(const std::string& path, const std::string& contents, int mode = 0644);
std::string ReadSmallFile(const std::string& path);

// A free TCP port on 127.0.0.1 (bind to 0, read it back, close); WaitForPort polls connect().
int PickFreePort();
bool WaitForPort(int port, int timeout_ms);

// The directory of this executable (for aobj-server next to aobj-bench).
std::string SelfDir();
std::string SelfExe();
// Finds `name` on PATH (or returns an absolute path unchanged if executable); "" if absent.
std::string FindProgram(const std::string& name);
// Runs a program to completion and returns its stdout+stderr (bounded by `timeout_s`).
absl::StatusOr<std::string> RunAndCapture(const std::vector<std::string>& argv, int timeout_s);

}  // namespace aobj::bench

#endif  // AOBJ_TOOLS_BENCH_PROC_UTIL_H_
