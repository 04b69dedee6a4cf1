// A kernel trace of the timed calls (CUPTI activity records): every kernel that ran, on
// which stream, for how long, and on request the copies and memsets too (a copy engine's
// work is no kernel). The harness uses it to catch work a candidate puts on another stream
// (including the legacy default stream), which the timer on the harness's stream would not
// see, and to report which kernels a candidate launched.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fk::bench {

enum class TraceKind : uint8_t { kernel, memcpy, memset };

struct KernelRecord {
  std::string name;  // a kernel's mangled name; "memcpy DtoD 4096 bytes", "memset 4096 bytes"
  uint32_t stream_id = 0;
  uint64_t start_ns = 0, end_ns = 0;  // CUPTI's clock (trace_timestamp_ns)
  TraceKind kind = TraceKind::kernel;
};

// True when this build can trace kernels (CUDA builds with CUPTI).
bool kernel_trace_available();
// Starts collecting kernel records, and with `copies_too` memcpy and memset records as well
// (idempotent; a later call may add the copies).
void kernel_trace_start(bool copies_too = false);
// Flushes and returns the records collected since start (or the last collect).
std::vector<KernelRecord> kernel_trace_collect();
void kernel_trace_stop();
// CUPTI's id of a stream of the current context, and CUPTI's current timestamp.
uint32_t kernel_trace_stream_id(void* stream);
uint64_t kernel_trace_timestamp_ns();

}  // namespace fk::bench
