// Overlap: one piece of work at a time on a helper thread, so that it runs while the caller
// does the next step of a transfer (a PUT's checksums while the next chunk travels, a GET's next
// file read while the current chunk travels). Used by one thread; Run and Wait are not
// thread-safe against each other.
#ifndef AOBJ_SERVER_OVERLAP_H_
#define AOBJ_SERVER_OVERLAP_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <utility>

namespace aobj {

// Chunks smaller than this are not worth a thread (a server configured with small staging
// buffers would otherwise start one per few kilobytes); their work runs on the caller's thread.
inline constexpr uint64_t kOverlapMinBytes = uint64_t{1} << 20;

class Overlap {
 public:
  Overlap() = default;
  Overlap(const Overlap&) = delete;
  Overlap& operator=(const Overlap&) = delete;
  ~Overlap() {
    if (thread_.joinable()) thread_.join();  // an error nobody waited for is dropped
  }

  // Waits for the previous work, then starts `work` on a new thread; runs it on the caller's
  // thread when no thread can be started. The caller reads the work's results after Wait().
  void Run(std::function<void()> work) {
    Wait();
    work_ = std::move(work);
    try {
      thread_ = std::thread([this] {
        try {
          work_();
        } catch (...) {
          error_ = std::current_exception();  // handed to the caller by Wait()
        }
      });
    } catch (...) {
      work_();
    }
  }

  // Joins the work; rethrows on the caller's thread what it threw.
  void Wait() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::function<void()> work_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_OVERLAP_H_
