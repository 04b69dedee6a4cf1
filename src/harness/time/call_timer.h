// Timing one call of an op implementation, the way the harness defines a speedup:
// on CUDA, events on the stream handed to the implementation, with L2 flushed and the
// persisting-L2 lines reset before every timed call; on the CPU, a steady clock.
#pragma once
#include <functional>
#include <memory>

namespace fk::bench {

class CallTimer {
 public:
  virtual ~CallTimer() = default;
  // Runs `call` once and returns its duration in microseconds. Cache flushing happens
  // before the start mark and is not counted.
  virtual double time_us(const std::function<void()>& call) = 0;
  virtual void* stream() const { return nullptr; }
};

std::unique_ptr<CallTimer> make_cpu_timer();
// The op benchmark's DeviceTimer one call at a time (CPU-only builds throw): its own
// non-blocking stream, events, and the L2 flush before every call.
std::unique_ptr<CallTimer> make_cuda_timer();

}  // namespace fk::bench
