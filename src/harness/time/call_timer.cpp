#include "harness/time/call_timer.h"

#include <chrono>

#include "harness/time/op_timer.h"

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

// The op benchmark's timer (L2 flush, persisting-L2 reset, events on its own stream),
// one call at a time.
class CudaTimer final : public CallTimer {
 public:
  double time_us(const std::function<void()>& call) override {
    return timer_.time_once([&](void*) { call(); });
  }
  void* stream() const override { return timer_.stream(); }

 private:
  DeviceTimer timer_;
};

}  // namespace

std::unique_ptr<CallTimer> make_cpu_timer() { return std::make_unique<CpuTimer>(); }
std::unique_ptr<CallTimer> make_cuda_timer() { return std::make_unique<CudaTimer>(); }

}  // namespace fk::bench
