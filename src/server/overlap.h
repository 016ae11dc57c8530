// Overlap: one piece of work at a time on a helper thread, so that it runs while the caller
// does the next step of a transfer (a PUT's checksums while the next chunk travels, a GET's next
// file read while the current chunk travels). Used by one thread; Run and Wait are not
// thread-safe against each other.
#ifndef AOBJ_SERVER_OVERLAP_H_
#define AOBJ_SERVER_OVERLAP_H_

#include <functional>
#include <system_error>
#include <thread>
#include <utility>

namespace aobj {

class Overlap {
 public:
  Overlap() = default;
  Overlap(const Overlap&) = delete;
  Overlap& operator=(const Overlap&) = delete;
  ~Overlap() { Wait(); }

  // Waits for the previous work, then starts `work` on a new thread; runs it on the caller's
  // thread when no thread can be started. The caller reads the work's results after Wait().
  void Run(std::function<void()> work) {
    Wait();
    work_ = std::move(work);
    try {
      thread_ = std::thread([this] { work_(); });
    } catch (const std::system_error&) {
      work_();
    }
  }

  void Wait() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::function<void()> work_;
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_OVERLAP_H_
