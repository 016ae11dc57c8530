#include "bench/proc_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace aobj::bench {

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double ProcCpuSeconds(pid_t pid) {
  const std::string text = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"));
  // "pid (comm) state ppid ...": comm may hold spaces, so parse after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::vector<std::string> f = absl::StrSplit(text.substr(close + 2), ' ', absl::SkipEmpty());
  // After the comm: field 3 (state) is f[0]; utime is field 14 and stime field 15.
  if (f.size() < 13) return -1;
  uint64_t utime = 0, stime = 0;
  if (!absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime)) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int64_t ProcStatusKib(pid_t pid, const char* field) {
  const std::string text = ReadSmallFile(absl::StrCat("/proc/", pid, "/status"));
  const std::string key = absl::StrCat(field, ":");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, key)) continue;
    std::vector<absl::string_view> f =
        absl::StrSplit(line.substr(key.size()), absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t v = 0;
    if (!f.empty() && absl::SimpleAtoi(f[0], &v)) return v;
  }
  return -1;
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

namespace {

// Live children, for the signal handler: a fixed table of pids (0 = free slot), touched with
// atomics only, so that the handler stays async-signal-safe.
constexpr int kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];

void TrackChild(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
}

void UntrackChild(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void KillChildrenAndDie(int sig) {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) kill(pid, SIGTERM);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void InstallChildCleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction sa {};
    sa.sa_handler = &KillChildrenAndDie;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const Options& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("no program to start");
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  if (options.pipe_stdio) {
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    }
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (options.pipe_stdio) {
    posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    if (options.stderr_to_stdout) posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 2);
  } else if (!options.log_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, options.log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  // Nothing else of ours leaks into the child (sockets, UCX and gRPC descriptors). This also
  // matters to wrk, whose event loop only takes descriptors below 10 + 3 * connections.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  // Environment: ours, with `env` added or replaced.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    merged[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : options.env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : options.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (options.pipe_stdio) {
    close(in_pipe[0]);
    close(out_pipe[1]);
  }
  if (rc != 0) {
    if (options.pipe_stdio) {
      close(in_pipe[1]);
      close(out_pipe[0]);
    }
    return absl::InternalError(absl::StrCat("cannot start ", options.argv[0], ": ", strerror(rc)));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  TrackChild(pid);
  if (options.pipe_stdio) {
    child->in_fd_ = in_pipe[1];
    child->out_fd_ = out_pipe[0];
  }
  return child;
}

ChildProcess::~ChildProcess() {
  CloseStdin();
  if (!reaped_) Stop();
  if (out_fd_ >= 0) close(out_fd_);
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    status_ = status;
    UntrackChild(pid_);
    return false;
  }
  return true;
}

bool ChildProcess::WriteLine(const std::string& line) {
  if (in_fd_ < 0) return false;
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(in_fd_, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

bool ChildProcess::ReadLine(std::string* line, int timeout_ms) {
  if (out_fd_ < 0) return false;
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  for (;;) {
    const size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      *line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return true;
    }
    const int64_t left_ms = (deadline - NowNs()) / 1000000;
    if (left_ms <= 0) return false;
    pollfd p{out_fd_, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    char buf[65536];
    const ssize_t r = read(out_fd_, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buffered_.append(buf, static_cast<size_t>(r));
  }
}

void ChildProcess::CloseStdin() {
  if (in_fd_ >= 0) close(in_fd_);
  in_fd_ = -1;
}

int ChildProcess::Stop(int sig, int grace_ms) {
  if (reaped_) return status_;
  kill(pid_, sig);
  const int64_t deadline = NowNs() + static_cast<int64_t>(grace_ms) * 1000000;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped_ = true;
      status_ = r == pid_ ? status : -1;
      UntrackChild(pid_);
      return status_;
    }
    if (NowNs() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped_ = true;
  status_ = status;
  UntrackChild(pid_);
  return status_;
}

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  std::string templ = absl::StrCat("/tmp/", prefix, "XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", strerror(errno)));
  }
  return templ;
}

void RemoveTree(const std::string& path) {
  if (path.empty() || path == "/") return;
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, struct FTW*) { return remove(p) == 0 ? 0 : 0; },
      16, FTW_DEPTH | FTW_PHYS);
}

absl::Status WriteFile(const std::string& path, const std::string& contents, int mode) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  fchmod(fd, static_cast<mode_t>(mode));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t w = write(fd, contents.data() + done, contents.size() - done);
    if (w <= 0) {
      close(fd);
      return absl::InternalError(absl::StrCat("write ", path, ": ", strerror(errno)));
    }
    done += static_cast<size_t>(w);
  }
  close(fd);
  return absl::OkStatus();
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

bool WaitForPort(int port, int timeout_ms) {
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  while (NowNs() < deadline) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string SelfDir() {
  const std::string exe = SelfExe();
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  dirs += ":/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin";
  for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

absl::StatusOr<std::string> RunAndCapture(const std::vector<std::string>& argv, int timeout_s) {
  ChildProcess::Options o;
  o.argv = argv;
  o.pipe_stdio = true;
  o.stderr_to_stdout = true;
  auto child = ChildProcess::Start(o);
  if (!child.ok()) return child.status();
  (*child)->CloseStdin();
  std::string out, line;
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_s) * 1000000000;
  while (NowNs() < deadline &&
         (*child)->ReadLine(&line, static_cast<int>((deadline - NowNs()) / 1000000) + 1)) {
    out += line + "\n";
  }
  (*child)->Stop(15, 1000);
  return out;
}

}  // namespace aobj::bench
