#include <cuda.h>
#include <cupti.h>

#include <cstdlib>
#include <mutex>

#include "bench/kernel_trace.h"
#include "fk/cuda/check.h"

namespace fk::bench {

namespace {

#define FK_CUPTI_CHECK(call)                                                            \
  do {                                                                                  \
    CUptiResult r_ = (call);                                                            \
    if (r_ != CUPTI_SUCCESS) {                                                          \
      const char* s_ = nullptr;                                                         \
      cuptiGetResultString(r_, &s_);                                                    \
      FK_FAIL(FK_ERR_CUDA, #call, " failed: ", s_ ? s_ : "unknown CUPTI error");        \
    }                                                                                   \
  } while (0)

std::mutex g_mu;
std::vector<KernelRecord> g_records;
bool g_enabled = false;

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard lk(g_mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    g_records.push_back({k->name ? k->name : "?", k->streamId, k->start, k->end});
  }
  std::free(buffer);
}

}  // namespace

bool kernel_trace_available() { return true; }

void kernel_trace_start() {
  std::lock_guard lk(g_mu);
  if (g_enabled) return;
  FK_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  FK_CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  g_enabled = true;
}

std::vector<KernelRecord> kernel_trace_collect() {
  FK_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::lock_guard lk(g_mu);
  std::vector<KernelRecord> out;
  out.swap(g_records);
  return out;
}

void kernel_trace_stop() {
  std::lock_guard lk(g_mu);
  if (!g_enabled) return;
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  g_enabled = false;
}

uint32_t kernel_trace_stream_id(void* stream) {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) FK_FAIL(FK_ERR_CUDA, "no current CUDA context");
  uint32_t id = 0;
  FK_CUPTI_CHECK(cuptiGetStreamIdEx(ctx, static_cast<CUstream>(stream), 0, &id));
  return id;
}

uint64_t kernel_trace_timestamp_ns() {
  uint64_t t = 0;
  FK_CUPTI_CHECK(cuptiGetTimestamp(&t));
  return t;
}

}  // namespace fk::bench
