#include "e2e/call_gpu_time.h"

#include <algorithm>

#include "bench/kernel_trace.h"

namespace fk::e2e {

CallGpuTimer::CallGpuTimer() {
  if (!bench::kernel_trace_available()) return;
  bench::kernel_trace_start();
  bench::kernel_trace_collect();  // drop whatever ran before
  start_ns_ = bench::kernel_trace_timestamp_ns();
  available_ = true;
}

CallGpuTimer::~CallGpuTimer() {
  if (available_) bench::kernel_trace_stop();
}

void CallGpuTimer::call_ended(int64_t id) {
  if (!available_) return;
  ends_.push_back({bench::kernel_trace_timestamp_ns(), id});
  if (static_cast<int64_t>(ends_.size()) >= kBatch) flush();
}

void CallGpuTimer::flush() {
  if (!available_ || ends_.empty()) return;
  for (const bench::KernelRecord& k : bench::kernel_trace_collect()) {
    // The first call whose end stamp is at or after the kernel's start.
    const auto it = std::lower_bound(ends_.begin(), ends_.end(), std::make_pair(k.start_ns, int64_t{-1}));
    if (it == ends_.end() || k.start_ns < start_ns_) continue;  // outside any observed call
    if (add_) add_(it->second, static_cast<double>(k.end_ns - k.start_ns) * 1e-9);
  }
  start_ns_ = ends_.back().first;
  ends_.clear();
}

}  // namespace fk::e2e
