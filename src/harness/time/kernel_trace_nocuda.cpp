#include "harness/time/kernel_trace.h"

namespace fk::bench {
bool kernel_trace_available() { return false; }
void kernel_trace_start(bool) {}
std::vector<KernelRecord> kernel_trace_collect() { return {}; }
void kernel_trace_stop() {}
uint32_t kernel_trace_stream_id(void*) { return 0; }
uint64_t kernel_trace_timestamp_ns() { return 0; }
}  // namespace fk::bench
