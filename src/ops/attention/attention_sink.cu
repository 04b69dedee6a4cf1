// CUDA baseline of attention_sink_rescale (fk/ops/attention_sink.h): one warp per (token,
// head) row; lane 0's scale (f32, accurate expf) is shared by the warp, which scales the
// row's D values and rounds each once. A bandwidth-bound pass over the attention output
// (gpt-oss: 64 heads of 64, 8 KiB a token in bf16), next to the attention that made it.
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/attention/attention_sink_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

template <class T>
__global__ void __launch_bounds__(kThreads)
    attention_sink_rescale_kernel(T* out, int64_t row_stride, const float* lse, const float* sinks, int64_t tokens,
                                  int heads, int head_dim) {
  const int64_t rows = tokens * heads;
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t t = r / heads;
    const int h = static_cast<int>(r % heads);
    // 0.69314718f: ln 2; lse = -inf gives exp(+inf) = inf and a scale of exactly 0.
    const float x = lse[r] * 0.69314718055994531f - sinks[h];
    const float scale = 1.f / (1.f + expf(-x));
    T* row = out + t * row_stride + static_cast<int64_t>(h) * head_dim;
    for (int d = lane; d < head_dim; d += 32) row[d] = cuda::from_float<T>(cuda::to_float(row[d]) * scale);
  }
}

fk_status attention_sink_rescale_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const AttentionSinkRescaleArgs*>(args);
    validate_attention_sink_rescale(a, DeviceType::cuda);
    const int64_t T = a.out.shape[0], H = a.out.shape[1], D = a.out.shape[2];
    if (T == 0) return;
    const int64_t rows = T * H;
    const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((rows + kWarps - 1) / kWarps, 1, 65535 * 8));
    cuda::dispatch_float_dtype(a.out.dtype, a.kName, [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      attention_sink_rescale_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
          a.out.ptr<T_>(), a.out.strides[0], a.lse.ptr<float>(), a.sinks.ptr<float>(), T, static_cast<int>(H),
          static_cast<int>(D));
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("attention_sink_rescale", cuda, attention_sink_rescale_cuda);

}  // namespace
}  // namespace fk::ops
