// A CPU-only build cannot time device calls.
#include "harness/time/op_timer.h"

namespace fk::bench {

struct DeviceTimer::Impl {};

DeviceTimer::DeviceTimer(int, TimerOptions) {
  FK_FAIL(FK_ERR_UNSUPPORTED, "timing on a CUDA device: fastkernels was built without CUDA (FK_CUDA=OFF)");
}
DeviceTimer::~DeviceTimer() = default;
int DeviceTimer::device() const { return 0; }
void* DeviceTimer::stream() const { return nullptr; }
size_t DeviceTimer::l2_bytes() const { return 0; }
size_t DeviceTimer::flush_bytes() const { return 0; }
size_t DeviceTimer::free_memory() const { return 0; }
const TimerOptions& DeviceTimer::options() const {
  static const TimerOptions defaults;
  return defaults;
}
std::vector<double> DeviceTimer::time(const TimedCall&, int) { return {}; }
double DeviceTimer::time_once(const std::function<void(void*)>&) { return 0; }
std::vector<std::vector<double>> DeviceTimer::time_interleaved(const std::vector<TimedCall>&, int) { return {}; }

}  // namespace fk::bench
