// The runtime of a CPU-only build: every device request fails with a clear message.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::rt {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  FK_FAIL(FK_ERR_UNSUPPORTED, what, ": fastkernels was built without CUDA (FK_CUDA=OFF)");
}
}  // namespace

bool cuda_available() { return false; }
bool built_with_cuda() { return false; }
int device_count() { return 0; }
void* device_malloc(size_t, int, void*) { no_cuda("device_malloc"); }
void device_free(void*, void*) {}
void memcpy_sync(void* dst, Device dd, const void* src, Device sd, size_t n) {
  if (!dd.is_cpu() || !sd.is_cpu()) no_cuda("memcpy to or from a CUDA device");
  std::memmove(dst, src, n);
}
void* host_pinned_malloc(size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) FK_FAIL(FK_ERR_OUT_OF_MEMORY, "host allocation of ", bytes, " bytes failed");
  return p;
}
void host_pinned_free(void* ptr) { std::free(ptr); }
void memcpy_async(void* dst, Device dd, const void* src, Device sd, size_t n, void*) {
  memcpy_sync(dst, dd, src, sd, n);
}
void memset_async(void* p, int v, size_t n, Device d, void*) {
  if (!d.is_cpu()) no_cuda("memset on a CUDA device");
  std::memset(p, v, n);
}
void stream_synchronize(void*) {}
std::string take_pending_error() { return {}; }
void device_synchronize(int) {}

}  // namespace fk::rt
