#include "harness/time/timed_calls.h"

#include <chrono>

#include "fk/status.h"

namespace fk::bench {

std::vector<double> time_calls(int64_t warmups, int64_t iters, const std::function<void()>& call) {
  FK_CHECK(warmups >= 0 && iters >= 1, "time_calls: ", warmups, " warm-up and ", iters,
           " timed calls (at least one timed call, no negative count)");
  for (int64_t i = 0; i < warmups; ++i) call();
  std::vector<double> seconds;
  seconds.reserve(static_cast<size_t>(iters));
  for (int64_t i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return seconds;
}

}  // namespace fk::bench
