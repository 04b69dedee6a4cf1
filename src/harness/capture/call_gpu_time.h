// GPU time of each observed op call, from a kernel trace (CUPTI). OpRegistry::call
// synchronises the stream before and after an observed call, so every kernel that starts
// after one call's end stamp and before the next call's end stamp belongs to the later call.
// Wall-clock time around a synchronised call also counts the launch and the
// synchronisation (about 10 us), which would inflate small ops' shares; kernel time does not.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace fk::e2e {

class CallGpuTimer {
 public:
  // Receives the duration of each kernel that ran in one call.
  using Sink = std::function<void(double seconds)>;

  // Starts the trace; available() is false (and nothing is traced) when this build or
  // machine has none.
  CallGpuTimer();
  ~CallGpuTimer();
  CallGpuTimer(const CallGpuTimer&) = delete;
  CallGpuTimer& operator=(const CallGpuTimer&) = delete;

  bool available() const { return available_; }
  // After an observed call returned (and was synchronised): stamps its end; `sink` will
  // receive its kernels' durations. Every kBatch calls the collected kernels are
  // attributed (keeps the trace small).
  void call_ended(Sink sink);
  // Attributes what is left.
  void flush();

 private:
  static constexpr size_t kBatch = 512;
  bool available_ = false;
  uint64_t start_ns_ = 0;
  std::vector<std::pair<uint64_t, Sink>> ends_;  // (end stamp, the call's sink), in call order
};

}  // namespace fk::e2e
