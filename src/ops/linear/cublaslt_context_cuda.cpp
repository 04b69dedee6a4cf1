#include "ops/linear/cublaslt_context.h"

#include <map>
#include <mutex>
#include <utility>

#include "core/cuda/cublas_api.h"
#include "fk/cuda/check.h"
#include "fk/cuda/cublas_check.h"
#include "fk/runtime.h"

namespace fk::ops::cublaslt {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceHandle {
  std::once_flag once;
  cublasLtHandle_t handle = nullptr;
};

// Never destroyed: handles and workspaces may be used from other static destructors, and
// the driver reclaims everything at exit.
DeviceHandle* device_handles() {
  static auto* h = new DeviceHandle[kMaxDevices];
  return h;
}

struct Workspaces {
  std::mutex mu;
  std::map<std::pair<int, cudaStream_t>, void*> by_stream;
};
Workspaces& workspaces() {
  static auto* w = new Workspaces();
  return *w;
}

}  // namespace

DeviceGuard::DeviceGuard(int device) {
  FK_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) FK_CUDA_CHECK(cudaSetDevice(device));
  else previous_ = -1;  // nothing to restore
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);  // best effort: destructors must not throw
}

cublasLtHandle_t handle(int device) {
  FK_CHECK(device >= 0 && device < kMaxDevices, "cuBLASLt handle: device index ", device, " out of range");
  DeviceHandle& d = device_handles()[device];
  // call_once leaves the flag unset when creation throws, so a later call retries.
  std::call_once(d.once, [&] {
    DeviceGuard guard(device);
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtCreate(&d.handle));
  });
  return d.handle;
}

void* workspace(int device, cudaStream_t stream) {
  Workspaces& w = workspaces();
  std::lock_guard lk(w.mu);
  void*& p = w.by_stream[{device, stream}];
  if (p == nullptr) p = rt::device_malloc(kWorkspaceBytes, device, stream);
  return p;
}

}  // namespace fk::ops::cublaslt
