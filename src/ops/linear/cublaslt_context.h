// cuBLASLt resources of the linear op: one handle per device and one 32 MiB workspace per
// (device, stream), both created on first use and kept for the life of the process.
// A workspace is per stream because two streams running matmuls concurrently must not
// share scratch memory. CUDA graphs: the first call on a stream allocates its workspace,
// so run each (shape, stream) once before capturing. Include only from CUDA-enabled code.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace fk::ops::cublaslt {

inline constexpr size_t kWorkspaceBytes = size_t{32} << 20;

cublasLtHandle_t handle(int device);
void* workspace(int device, cudaStream_t stream);

// Makes `device` current for its scope and restores the previous device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace fk::ops::cublaslt
