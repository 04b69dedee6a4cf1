#include "harness/capture/call_gpu_time.h"

#include <algorithm>

#include "harness/time/kernel_trace.h"

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

void CallGpuTimer::call_ended(Sink sink) {
  if (!available_) return;
  ends_.push_back({bench::kernel_trace_timestamp_ns(), std::move(sink)});
  if (ends_.size() >= kBatch) flush();
}

void CallGpuTimer::flush() {
  if (!available_ || ends_.empty()) return;
  for (const bench::KernelRecord& k : bench::kernel_trace_collect()) {
    if (k.kind != bench::TraceKind::kernel) continue;  // the op's kernels are its time
    if (k.start_ns < start_ns_) continue;  // ran before the first observed call of this batch
    // The first call whose end stamp is at or after the kernel's start.
    const auto it = std::partition_point(ends_.begin(), ends_.end(),
                                         [&](const auto& e) { return e.first < k.start_ns; });
    if (it != ends_.end()) it->second(static_cast<double>(k.end_ns - k.start_ns) * 1e-9);
  }
  start_ns_ = ends_.back().first;
  ends_.clear();
}

}  // namespace fk::e2e
