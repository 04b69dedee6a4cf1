// The device runtime as the rest of fastkernels sees it: no CUDA header needed, so CPU-only
// builds compile the same code and get a clear "built without CUDA" error at run time.
#pragma once
#include <cstddef>
#include <string>

#include "fk/tensor_view.h"

namespace fk::rt {

// True when fastkernels was built with CUDA and at least one device is visible.
bool cuda_available();
int device_count();
bool built_with_cuda();

// Device memory comes from the caching allocator (src/core/cuda/allocator.h). `stream` is a
// cudaStream_t (nullptr = legacy default stream): a freed block is reused on the same
// stream without synchronisation, on another only after the freeing stream reached it.
void* device_malloc(size_t bytes, int device, void* stream = nullptr);
void device_free(void* ptr, void* stream = nullptr);

// Page-locked host memory: copies from it are truly asynchronous (a pageable source makes
// cudaMemcpyAsync stage through a driver buffer and return only when it is done). Without
// CUDA: ordinary aligned memory.
void* host_pinned_malloc(size_t bytes);
void host_pinned_free(void* ptr);

// Synchronous copy between any two devices (host<->device, device<->device).
void memcpy_sync(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
// Asynchronous copy on `stream` (either side may be host memory).
void memcpy_async(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes,
                  void* stream);
void memset_async(void* ptr, int byte_value, size_t bytes, Device device, void* stream);
void stream_synchronize(void* stream);
// The CUDA runtime's pending (not yet reported) error of this thread, as "name: message",
// cleared by the call; "" when there is none (and always in CPU-only builds). The op
// registry asks before and after every CUDA op, so a failure is blamed on the call that
// caused it rather than on the next one that checks.
std::string take_pending_error();
void device_synchronize(int device = 0);

}  // namespace fk::rt
