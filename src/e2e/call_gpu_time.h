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
  // Starts the trace; available() is false (and nothing is traced) when this build or
  // machine has none.
  // Calls per attribution: call_ended() attributes every pending call after each kBatch-th.
  static constexpr int64_t kBatch = 512;

  CallGpuTimer();
  ~CallGpuTimer();
  CallGpuTimer(const CallGpuTimer&) = delete;
  CallGpuTimer& operator=(const CallGpuTimer&) = delete;

  bool available() const { return available_; }
  // After observed call `id` (0, 1, 2, ...) returned and was synchronised: stamps its end.
  // Every kBatch calls the collected kernels are attributed (keeps the trace small).
  void call_ended(int64_t id);
  // Attributes what is left; `add(id, seconds)` receives every kernel's duration.
  void flush();
  void on_kernel(std::function<void(int64_t id, double seconds)> add) { add_ = std::move(add); }

 private:
  bool available_ = false;
  uint64_t start_ns_ = 0;
  std::vector<std::pair<uint64_t, int64_t>> ends_;  // (end stamp, call id), in call order
  std::function<void(int64_t, double)> add_;
};

}  // namespace fk::e2e
