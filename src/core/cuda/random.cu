// Device Philox fills. Every element is computed by the same host/device functions as the
// host loops in src/core/random.cpp (core/random_element.h), so the tensors are
// bit-identical. One thread per Philox block (4 consecutive elements), grid-stride.
#include <algorithm>

#include "core/random_device.h"
#include "core/random_element.h"
#include "fk/cuda/check.h"
#include "fk/philox.h"

namespace fk::detail {
namespace {

struct UniformElement {
  UniformParams p;
  __device__ void operator()(void* d, int64_t i, DType t, const PhiloxBlock& b, unsigned lane) const {
    uniform_element(d, i, t, b, lane, p);
  }
};
struct IntElement {
  int64_t lo, hi;
  __device__ void operator()(void* d, int64_t i, DType t, const PhiloxBlock& b, unsigned lane) const {
    int_element(d, i, t, b, lane, lo, hi);
  }
};
struct NormalElement {
  NormalParams p;
  __device__ void operator()(void* d, int64_t i, DType t, const PhiloxBlock& b, unsigned lane) const {
    normal_element(d, i, t, b, lane, p);
  }
};

template <class Element>
__global__ void fill_kernel(void* data, DType t, int64_t n, uint64_t seed, uint64_t offset, Element element) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const PhiloxBlock block = philox_block(seed, offset, static_cast<uint64_t>(b));
#pragma unroll
    for (unsigned lane = 0; lane < 4; ++lane) {
      const int64_t i = 4 * b + lane;
      if (i < n) element(data, i, t, block, lane);
    }
  }
}

// Makes the tensor's device current for the launch and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    FK_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ == device) previous_ = -1;
    else FK_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

template <class Element>
void launch_fill(const TensorView& t, uint64_t seed, uint64_t offset, Element element, void* stream) {
  const int64_t n = t.numel();
  if (n == 0) return;
  DeviceGuard guard(t.device.index);
  constexpr int kThreads = 256;
  const int64_t blocks = (n + 3) / 4;
  const int grid = static_cast<int>(std::min<int64_t>((blocks + kThreads - 1) / kThreads, 16384));
  fill_kernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(t.data, t.dtype, n, seed, offset, element);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace

void fill_uniform_device(const TensorView& t, uint64_t seed, uint64_t offset, UniformParams p, void* stream) {
  launch_fill(t, seed, offset, UniformElement{p}, stream);
}

void fill_int_device(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream) {
  launch_fill(t, seed, offset, IntElement{lo, hi}, stream);
}

void fill_normal_device(const TensorView& t, uint64_t seed, uint64_t offset, NormalParams p, void* stream) {
  launch_fill(t, seed, offset, NormalElement{p}, stream);
}

}  // namespace fk::detail
