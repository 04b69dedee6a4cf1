// dfl_box_decode CUDA baseline: one thread per (image, anchor, side) computes that side's
// softmax expectation over the reg_max bins (f32, max-subtracted) and writes its box
// coordinate; a second grid-stride pass writes the sigmoid scores, one thread per element
// (the scores dominate the bytes: 8400 x 80 per image at 640 x 640). Memory-bound and tiny;
// a fused candidate would also run the top-k.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/conv/nhwc.cuh"
#include "ops/detect/dfl_box_decode_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads)
    box_kernel(float* boxes, const T* raw, const float* anchors, int64_t n_img, int64_t anchors_n, int64_t s_img,
               int64_t s_anchor, int reg_max) {
  const int64_t total = n_img * anchors_n * 4;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int side = static_cast<int>(t % 4);
    const int64_t a = (t / 4) % anchors_n, n = t / (4 * anchors_n);
    const T* r = raw + n * s_img + a * s_anchor + static_cast<int64_t>(side) * reg_max;
    float top = -INFINITY;
    for (int b = 0; b < reg_max; ++b) top = fmaxf(top, cuda::to_float(r[b]));
    float sum = 0.f, weighted = 0.f;
    for (int b = 0; b < reg_max; ++b) {
      const float e = __expf(cuda::to_float(r[b]) - top);
      sum += e;
      weighted = fmaf(e, static_cast<float>(b), weighted);
    }
    const float d = weighted / sum;
    const float* an = anchors + a * 3;
    const float centre = side % 2 == 0 ? an[0] : an[1];
    boxes[t] = (side < 2 ? centre - d : centre + d) * an[2];
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    score_kernel(float* scores, const T* raw, int64_t n_img, int64_t anchors_n, int64_t nc, int64_t s_img,
                 int64_t s_anchor, int64_t first) {
  const int64_t total = n_img * anchors_n * nc;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = t % nc, a = (t / nc) % anchors_n, n = t / (nc * anchors_n);
    const float x = cuda::to_float(raw[n * s_img + a * s_anchor + first + k]);
    scores[t] = 1.f / (1.f + __expf(-x));
  }
}

fk_status dfl_box_decode_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const DflBoxDecodeArgs*>(args);
    validate_dfl_box_decode(a, DeviceType::cuda);
    const int64_t n = a.raw.shape[0], anchors = a.raw.shape[1], nc = a.raw.shape[2] - 4 * int64_t{a.reg_max};
    if (n * anchors == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.raw.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* raw = static_cast<const T*>(a.raw.data);
      box_kernel<T><<<conv_cuda::grid_for(n * anchors * 4, kThreads), kThreads, 0, s>>>(
          static_cast<float*>(a.boxes.data), raw, static_cast<const float*>(a.anchors.data), n, anchors,
          a.raw.strides[0], a.raw.strides[1], a.reg_max);
      FK_CUDA_CHECK_LAUNCH();
      score_kernel<T><<<conv_cuda::grid_for(n * anchors * nc, kThreads), kThreads, 0, s>>>(
          static_cast<float*>(a.scores.data), raw, n, anchors, nc, a.raw.strides[0], a.raw.strides[1],
          4 * int64_t{a.reg_max});
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("dfl_box_decode", cuda, dfl_box_decode_cuda);

}  // namespace
}  // namespace fk::ops
