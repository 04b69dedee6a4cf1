#include <chrono>

#include "bench/call_timer.h"

namespace fk::bench {

namespace {
class CpuTimer final : public CallTimer {
 public:
  double time_us(const std::function<void()>& call) override {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
};
}  // namespace

std::unique_ptr<CallTimer> make_cpu_timer() { return std::make_unique<CpuTimer>(); }

}  // namespace fk::bench
