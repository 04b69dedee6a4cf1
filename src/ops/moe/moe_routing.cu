// moe_topk_softmax, moe_topk_sigmoid and moe_grouped_topk CUDA baselines: one warp per
// token, the row's logits in registers (expert e in lane e % 32, register e / 32), scores
// in fp32, then k rounds of a warp argmax (ties: lower expert index). Grouped routing
// first scores the groups (one lane per group, from the row staged in shared memory) and
// masks the experts of the groups it does not keep. The per-token math is
// moe_routing_warp.cuh.
#include <cuda_runtime.h>

#include <climits>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/moe/moe_routing_cuda.h"
#include "ops/moe/moe_routing_warp.cuh"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kMaxExperts = moe_cuda::kRoutingMaxExperts;  // 32 registers a lane
constexpr int kMaxGroups = 32;     // one lane per group

struct RoutingParams {
  const void* logits;
  int64_t ld;  // logits row stride (elements)
  int T, E, k;
  MoeScoring scoring;
  const float* bias;  // [E] or null
  int n_group, topk_group;
  int renormalize;
  float scale;
  float* weights;  // [T, k]
  int32_t* ids;    // [T, k]
};

using moe_route::warp_argmax;

template <int kVpl, class In>
__global__ void __launch_bounds__(32 * kWarpsPerBlock) routing_kernel(const RoutingParams p) {
  extern __shared__ float staged[];  // grouped only: [warps][32 * kVpl] choice scores
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t = blockIdx.x * kWarpsPerBlock + warp;
  // Launched with PDL (launch latency hidden behind the router GEMM): the logits are read
  // only after it completes.
  cuda::pdl_wait();
  cuda::pdl_trigger();
  if (t >= p.T) return;  // whole warps leave; no CTA-wide barrier follows
  const In* row = static_cast<const In*>(p.logits) + static_cast<int64_t>(t) * p.ld;

  float s[kVpl], c[kVpl];
#pragma unroll
  for (int i = 0; i < kVpl; ++i) {
    const int e = lane + 32 * i;
    s[i] = e < p.E ? cuda::to_float(row[e]) : -INFINITY;
  }
  if (p.scoring == MoeScoring::softmax) moe_route::softmax_scores(s, p.E, lane);
  else moe_route::sigmoid_scores(s, p.E, lane);
#pragma unroll
  for (int i = 0; i < kVpl; ++i) {
    const int e = lane + 32 * i;
    c[i] = e < p.E ? s[i] + (p.bias ? p.bias[e] : 0.f) : -INFINITY;
  }

  if (p.n_group > 1) {
    float* row_c = staged + warp * 32 * kVpl;
#pragma unroll
    for (int i = 0; i < kVpl; ++i)
      if (lane + 32 * i < p.E) row_c[lane + 32 * i] = c[i];
    __syncwarp();
    const int per = p.E / p.n_group;
    float gs = -INFINITY;
    if (lane < p.n_group) {
      // With a bias: the sum of the group's two best choice scores; without: its best
      // score (c = s then).
      float a = -INFINITY, b = -INFINITY;
      for (int e = lane * per; e < (lane + 1) * per; ++e) {
        const float v = row_c[e];
        if (v > a) {
          b = a;
          a = v;
        } else if (v > b) {
          b = v;
        }
      }
      gs = p.bias ? a + b : a;
    }
    unsigned keep = 0;
    for (int r = 0; r < p.topk_group; ++r) {
      float v = gs;
      int g = lane < p.n_group ? lane : INT_MAX;
      warp_argmax(v, g);
      if (g < 32) keep |= 1u << g;
      if (lane == g) gs = -INFINITY;
    }
#pragma unroll
    for (int i = 0; i < kVpl; ++i) {
      const int e = lane + 32 * i;
      if (e < p.E && !((keep >> (e / per)) & 1u)) c[i] = -INFINITY;
    }
  }

  moe_route::select_topk(c, s, p.E, p.k, p.renormalize, p.scale, p.weights + static_cast<int64_t>(t) * p.k,
                         p.ids + static_cast<int64_t>(t) * p.k, lane);
}

template <class In>
void launch_typed(const RoutingParams& p, cudaStream_t s) {
  const int vpl = (p.E + 31) / 32;
  const dim3 grid(static_cast<unsigned>((p.T + kWarpsPerBlock - 1) / kWarpsPerBlock));
  auto go = [&](auto kernel, int v) {
    const size_t smem = p.n_group > 1 ? static_cast<size_t>(kWarpsPerBlock) * 32 * v * sizeof(float) : 0;
    cuda::launch_pdl(kernel, grid, dim3(32 * kWarpsPerBlock), smem, s, p);
  };
  if (vpl <= 1) go(routing_kernel<1, In>, 1);
  else if (vpl <= 2) go(routing_kernel<2, In>, 2);
  else if (vpl <= 4) go(routing_kernel<4, In>, 4);
  else if (vpl <= 8) go(routing_kernel<8, In>, 8);
  else if (vpl <= 16) go(routing_kernel<16, In>, 16);
  else go(routing_kernel<32, In>, 32);
}

}  // namespace

void moe_cuda::launch_routing(const TensorView& weights, const TensorView& ids, const TensorView& gating,
                              const char* op, MoeScoring scoring, const TensorView& bias, int n_group, int topk_group,
                              int renormalize, float scale, void* stream) {
  const int64_t T = gating.shape[0], E = gating.shape[1];
  if (E > kMaxExperts)
    FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline handles up to ", kMaxExperts, " experts, got ", E);
  if (n_group > kMaxGroups)
    FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline handles up to ", kMaxGroups, " groups, got ", n_group);
  if (T == 0) return;
  const cuda::PdlOffScope pdl(pdl_off_for(op));
  RoutingParams p{};
  p.logits = gating.data;
  p.ld = gating.strides[0];
  p.T = static_cast<int>(T);
  p.E = static_cast<int>(E);
  p.k = static_cast<int>(ids.shape[1]);
  p.scoring = scoring;
  p.bias = arg_present(bias) ? static_cast<const float*>(bias.data) : nullptr;
  p.n_group = n_group;
  p.topk_group = topk_group;
  p.renormalize = renormalize;
  p.scale = scale;
  p.weights = static_cast<float*>(weights.data);
  p.ids = static_cast<int32_t*>(ids.data);
  auto s = static_cast<cudaStream_t>(stream);
  switch (gating.dtype) {
    case DType::f32: launch_typed<float>(p, s); break;
    case DType::f16: launch_typed<__half>(p, s); break;
    default: launch_typed<__nv_bfloat16>(p, s); break;
  }
}

namespace {

fk_status topk_softmax_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeTopkSoftmaxArgs*>(args);
    validate_routing_common(a, DeviceType::cuda);
    moe_cuda::launch_routing(a.topk_weights, a.topk_ids, a.gating_output, a.kName, MoeScoring::softmax, TensorView{},
                             1, 1, a.renormalize, 1.f, stream);
  });
}

fk_status topk_sigmoid_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeTopkSigmoidArgs*>(args);
    validate_routing_common(a, DeviceType::cuda);
    moe_cuda::launch_routing(a.topk_weights, a.topk_ids, a.gating_output, a.kName, MoeScoring::sigmoid, TensorView{},
                             1, 1, a.renormalize, 1.f, stream);
  });
}

fk_status grouped_topk_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeGroupedTopkArgs*>(args);
    validate_grouped_topk(a, DeviceType::cuda);
    moe_cuda::launch_routing(a.topk_weights, a.topk_ids, a.gating_output, a.kName, a.scoring,
                             a.e_score_correction_bias, a.n_group, a.topk_group, a.renormalize,
                             a.routed_scaling_factor, stream);
  });
}

FK_REGISTER_IMPL("moe_topk_softmax", cuda, topk_softmax_cuda);
FK_REGISTER_IMPL("moe_topk_sigmoid", cuda, topk_sigmoid_cuda);
FK_REGISTER_IMPL("moe_grouped_topk", cuda, grouped_topk_cuda);

}  // namespace
}  // namespace fk::ops
