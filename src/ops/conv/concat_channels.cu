// concat_channels CUDA baseline: one launch per input, each a strided copy of its pixels into
// its channel range of out, one thread per 16-byte chunk of a pixel's channels when that
// input's channels, strides, its destination slice and pointers allow, else per element.
// Chunks of a pixel fastest, so each warp reads and writes contiguous memory. Two to four
// launches of a memory-bound copy; DRAM traffic is each element read and written once.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/conv/conv_validate.h"
#include "ops/conv/nhwc.cuh"

namespace fk::ops {
namespace {

using conv_cuda::Nhwc;
constexpr int kThreads = 256;

// W: the unit of copy. out points at the input's first channel of the destination.
template <class W>
__global__ void __launch_bounds__(kThreads) copy_pixels_kernel(const Nhwc<const W> in, const Nhwc<W> out) {
  const int C = in.c;  // in units of W
  const int64_t total = static_cast<int64_t>(in.n) * in.h * in.w * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t m = i / C;
    const int x = static_cast<int>(m % in.w);
    const int y = static_cast<int>((m / in.w) % in.h);
    const int64_t n = m / (static_cast<int64_t>(in.w) * in.h);
    out.pixel(n, y, x)[c] = in.pixel(n, y, x)[c];
  }
}

template <class W>
Nhwc<W> in_units(const TensorView& v, int64_t vec) {
  Nhwc<W> r = conv_cuda::nhwc<W>(v);
  r.c = static_cast<int>(v.shape[3] / vec);
  r.sn = v.strides[0] / vec, r.sh = v.strides[1] / vec, r.sw = v.strides[2] / vec;
  return r;
}

template <class W>
void copy(const TensorView& in, const TensorView& dst, int64_t vec, cudaStream_t stream) {
  copy_pixels_kernel<W><<<conv_cuda::grid_for(in.numel() / vec, kThreads), kThreads, 0, stream>>>(
      in_units<const W>(in, vec), in_units<W>(dst, vec));
  FK_CUDA_CHECK_LAUNCH();
}

fk_status concat_channels_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ConcatChannelsArgs*>(args);
    validate_concat_channels(a, DeviceType::cuda);
    const auto s = static_cast<cudaStream_t>(stream);
    const int64_t vec = 16 / a.out.element_size();
    int64_t offset = 0;
    for (int i = 0; i < a.num_inputs; ++i) {
      const TensorView& in = a.inputs[i];
      // out's channels [offset, offset + C_i): the destination of this input.
      TensorView dst = a.out;
      dst.data = a.out.element_ptr(offset);
      dst.shape[3] = in.shape[3];
      offset += in.shape[3];
      if (in.numel() == 0) continue;
      if (conv_cuda::vec16_ok(in, vec) && conv_cuda::vec16_ok(dst, vec)) {
        copy<uint4>(in, dst, vec, s);
        continue;
      }
      cuda::dispatch_float_dtype(in.dtype, a.kName, [&](auto tag) {
        using T = typename decltype(tag)::type;
        copy<T>(in, dst, 1, s);
      });
    }
  });
}

FK_REGISTER_IMPL("concat_channels", cuda, concat_channels_cuda);

}  // namespace
}  // namespace fk::ops
