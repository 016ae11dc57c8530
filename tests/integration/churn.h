// A churn of young connections beside a client (issue 16, seventh hostile probe F3): threads that
// each keep their last few connections open, closing the oldest for each new one, so that every
// connection the server holds is younger than its grace.
#ifndef AOBJ_TESTS_INTEGRATION_CHURN_H_
#define AOBJ_TESTS_INTEGRATION_CHURN_H_

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace aobj::testing {

struct ChurnResult {
  int served = 0;  // of the client's tries
  int opened = 0;  // connections the churn opened meanwhile
};

// Runs `threads` threads, each keeping its last `held` connections of `connect(i, thread)` (a
// descriptor, or -1) open; after `warm_up` tries `client` `tries` times, then stops the churn.
inline ChurnResult ServedBesideAChurn(
    int threads, size_t held, const std::function<int(size_t, int)>& connect,
    const std::function<bool()>& client, int tries,
    std::chrono::milliseconds warm_up = std::chrono::milliseconds(500)) {
  std::atomic<bool> stop{false};
  std::atomic<int> opened{0};
  std::vector<std::thread> churners;
  for (int t = 0; t < threads; ++t) {
    churners.emplace_back([&, t] {
      std::vector<int> ring(held, -1);
      for (size_t i = 0; !stop.load(); i = (i + 1) % ring.size()) {
        if (ring[i] >= 0) close(ring[i]);
        ring[i] = connect(i, t);
        if (ring[i] >= 0) ++opened;
      }
      for (int fd : ring) {
        if (fd >= 0) close(fd);
      }
    });
  }
  std::this_thread::sleep_for(warm_up);
  ChurnResult result;
  for (int i = 0; i < tries; ++i) result.served += client() ? 1 : 0;
  result.opened = opened.load();
  stop = true;
  for (auto& t : churners) t.join();
  return result;
}

}  // namespace aobj::testing

#endif  // AOBJ_TESTS_INTEGRATION_CHURN_H_
