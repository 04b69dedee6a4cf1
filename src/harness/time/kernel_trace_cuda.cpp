// CUPTI and the driver library are loaded at run time (dlopen), not linked: test and
// command binaries of a CUDA build must still start on machines without a GPU driver.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <iterator>
#include <mutex>

#include "harness/time/kernel_trace.h"
#include "fk/cuda/check.h"
#include "fk/status.h"

namespace fk::bench {

namespace {

// The CUPTI entry points used here, resolved from the library.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetStreamIdEx) stream_id = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuCtxGetCurrent) ctx_get_current = nullptr;
  std::string error;  // why loading failed (empty when loaded)
};

template <class F>
void resolve(void* lib, const char* name, F& fn, std::string& error) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && error.empty()) error = std::string("missing symbol ") + name;
}

const Cupti& cupti() {
  static const Cupti c = [] {
    Cupti c;
    void* lib = nullptr;
    for (const char* name : {"libcupti.so.13", "libcupti.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !drv) {
      c.error = !lib ? "libcupti.so not found" : "libcuda.so.1 not found";
      return c;
    }
    resolve(lib, "cuptiActivityRegisterCallbacks", c.register_callbacks, c.error);
    resolve(lib, "cuptiActivityEnable", c.enable, c.error);
    resolve(lib, "cuptiActivityDisable", c.disable, c.error);
    resolve(lib, "cuptiActivityFlushAll", c.flush_all, c.error);
    resolve(lib, "cuptiActivityGetNextRecord", c.next_record, c.error);
    resolve(lib, "cuptiGetStreamIdEx", c.stream_id, c.error);
    resolve(lib, "cuptiGetTimestamp", c.timestamp, c.error);
    resolve(lib, "cuptiGetResultString", c.result_string, c.error);
    resolve(drv, "cuCtxGetCurrent", c.ctx_get_current, c.error);
    return c;
  }();
  if (!c.error.empty()) FK_FAIL(FK_ERR_UNSUPPORTED, "kernel trace unavailable: ", c.error);
  return c;
}

#define FK_CUPTI_CHECK(call)                                                            \
  do {                                                                                  \
    CUptiResult r_ = (call);                                                            \
    if (r_ != CUPTI_SUCCESS) {                                                          \
      const char* s_ = nullptr;                                                         \
      cupti().result_string(r_, &s_);                                                   \
      FK_FAIL(FK_ERR_CUDA, #call, " failed: ", s_ ? s_ : "unknown CUPTI error");        \
    }                                                                                   \
  } while (0)

std::mutex g_mu;
std::vector<KernelRecord> g_records;
bool g_enabled = false;
bool g_copies = false;  // memcpy and memset records too

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

const char* copy_direction(uint8_t copy_kind) {
  static const char* const names[] = {"", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < std::size(names) && copy_kind > 0 ? names[copy_kind] : "?";
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard lk(g_mu);
  while (cupti().next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      g_records.push_back({k->name ? k->name : "?", k->streamId, k->start, k->end, TraceKind::kernel});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      g_records.push_back({concat("memcpy ", copy_direction(m->copyKind), " ", m->bytes, " bytes"), m->streamId,
                           m->start, m->end, TraceKind::memcpy});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      g_records.push_back({concat("memset ", m->bytes, " bytes"), m->streamId, m->start, m->end, TraceKind::memset});
    }
  }
  std::free(buffer);
}

}  // namespace

bool kernel_trace_available() {
  try {
    cupti();
    return true;
  } catch (const Error&) {
    return false;
  }
}

void kernel_trace_start(bool copies_too) {
  std::lock_guard lk(g_mu);
  if (!g_enabled) {
    FK_CUPTI_CHECK(cupti().register_callbacks(buffer_requested, buffer_completed));
    FK_CUPTI_CHECK(cupti().enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    g_enabled = true;
  }
  if (copies_too && !g_copies) {
    FK_CUPTI_CHECK(cupti().enable(CUPTI_ACTIVITY_KIND_MEMCPY));
    FK_CUPTI_CHECK(cupti().enable(CUPTI_ACTIVITY_KIND_MEMSET));
    g_copies = true;
  }
}

std::vector<KernelRecord> kernel_trace_collect() {
  FK_CUPTI_CHECK(cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::lock_guard lk(g_mu);
  std::vector<KernelRecord> out;
  out.swap(g_records);
  return out;
}

void kernel_trace_stop() {
  std::lock_guard lk(g_mu);
  if (!g_enabled) return;
  cupti().disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (g_copies) {
    cupti().disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cupti().disable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  g_enabled = g_copies = false;
}

uint32_t kernel_trace_stream_id(void* stream) {
  CUcontext ctx = nullptr;
  if (cupti().ctx_get_current(&ctx) != CUDA_SUCCESS || ctx == nullptr) FK_FAIL(FK_ERR_CUDA, "no current CUDA context");
  uint32_t id = 0;
  FK_CUPTI_CHECK(cupti().stream_id(ctx, static_cast<CUstream>(stream), 0, &id));
  return id;
}

uint64_t kernel_trace_timestamp_ns() {
  uint64_t t = 0;
  FK_CUPTI_CHECK(cupti().timestamp(&t));
  return t;
}

}  // namespace fk::bench
