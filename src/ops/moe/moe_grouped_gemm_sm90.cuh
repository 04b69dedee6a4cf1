// run_grouped_gemm (moe_grouped_gemm.h) on sm_90a: CUTLASS's pointer-array grouped GEMM,
// cooperative warp-specialized (two consumer warpgroups on a 128 x 256 tile, TMA producer
// warp), persistent over the SMs. One group per expert; a small kernel first writes each
// group's problem size, pointers and strides from the grouping, so the host never reads a
// count. Included by one .cu per activation type (the instantiations are heavy to compile).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/status.h"
#include "ops/moe/moe_grouped_gemm.h"

namespace fk::ops::moe_grouped {

// The CUTLASS element type of an activation type.
template <class Act>
using CutlassElement = std::conditional_t<std::is_same_v<Act, __nv_bfloat16>, cutlass::bfloat16_t, cutlass::half_t>;

// d = a @ w^T per group: a row-major [M, K], w "column-major" [K, N] (the [N, K] weight
// rows, K contiguous), d row-major [M, N]; fp32 accumulation, no source C.
// Tile 128 x 256 x 64, one CTA per cluster, cooperative: the fastest of cooperative and
// ping-pong, 1 x 1 and 2 x 1 clusters on Qwen3-30B-A3B, OLMoE and Mixtral prefill shapes
// (bench/results/h100/fused_experts_grouped_configs.json).
template <class Element_>
struct Sm90GroupedGemm {
  using Element = Element_;
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;  // (M, N, K) per group
  using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  static constexpr int kAlignment = 8;  // elements per 16-byte TMA access

  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,  //
      void, cutlass::layout::RowMajor*, kAlignment,                     // no C
      Element_, cutlass::layout::RowMajor*, kAlignment,                 // D
      cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
      cutlass::epilogue::fusion::LinearCombination<Element_, float, void>>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,  //
      Element_, cutlass::layout::RowMajor*, kAlignment,      // A
      Element_, cutlass::layout::ColumnMajor*, kAlignment,   // B
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Kernel::InternalStrideA;
  using StrideB = typename Kernel::InternalStrideB;
  using StrideD = typename Kernel::InternalStrideD;
  using Problem = typename ProblemShape::UnderlyingProblemShape;
};

// The per-expert arrays CUTLASS reads, carved from the scratch.
template <class G>
struct GroupArrays {
  using Element = typename G::Element;
  typename G::Problem* problems;
  const Element** a;
  const Element** w;
  Element** d;
  typename G::StrideA* stride_a;
  typename G::StrideB* stride_w;
  typename G::StrideD* stride_d;
};

// One warp per expert: cnt[e] = the range's length less the sentinels of its last block
// (the only block that holds any), then the group's arguments.
template <class G>
__global__ void __launch_bounds__(256) setup_groups_kernel(const GroupedGemm g, const GroupArrays<G> out) {
  using Element = typename G::Element;
  const int e = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x & 31;
  if (e >= g.num_experts) return;
  const int begin = g.offsets[e], end = g.offsets[e + 1];
  int sentinels = 0;
  for (int i = max(begin, end - g.block_size) + lane; i < end; i += 32) sentinels += g.sorted_ids[i] >= g.num_slots;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sentinels += __shfl_xor_sync(0xffffffffu, sentinels, o);
  if (lane != 0) return;
  const int rows = end - begin - sentinels;
  out.problems[e] = typename G::Problem{rows, static_cast<int>(g.N), static_cast<int>(g.K)};
  out.a[e] = static_cast<const Element*>(g.a) + static_cast<int64_t>(begin) * g.lda;
  out.w[e] = static_cast<const Element*>(g.w) + static_cast<int64_t>(e) * g.N * g.K;
  out.d[e] = static_cast<Element*>(g.d) + static_cast<int64_t>(begin) * g.ldd;
  typename G::StrideA sa{};
  cute::get<0>(sa) = g.lda;
  typename G::StrideB sw{};
  cute::get<0>(sw) = g.K;
  typename G::StrideD sd{};
  cute::get<0>(sd) = g.ldd;
  out.stride_a[e] = sa;
  out.stride_w[e] = sw;
  out.stride_d[e] = sd;
}

template <class Act>
void run_grouped_gemm(const GroupedGemm& g, void* stream) {
  using Element = CutlassElement<Act>;
  using G = Sm90GroupedGemm<Element>;
  static_assert(sizeof(typename G::Problem) <= 16 && sizeof(typename G::StrideA) <= 16 &&
                    sizeof(typename G::StrideB) <= 16 && sizeof(typename G::StrideD) <= 16,
                "fused_experts_grouped_scratch_bytes counts at most 16 bytes per array entry");
  const int64_t E = g.num_experts;
  FK_CHECK(g.scratch_bytes >= fused_experts_grouped_scratch_bytes(E), "fused_experts grouped GEMM: scratch of ",
           g.scratch_bytes, " bytes, needs ", fused_experts_grouped_scratch_bytes(E));
  auto* base = static_cast<char*>(g.scratch);
  int64_t at = 0;
  auto take = [&](int64_t entry_bytes) {
    char* p = base + at;
    at += (entry_bytes * E + 255) / 256 * 256;
    return p;
  };
  GroupArrays<G> arrays{};
  arrays.problems = reinterpret_cast<typename G::Problem*>(take(sizeof(typename G::Problem)));
  arrays.a = reinterpret_cast<const Element**>(take(sizeof(void*)));
  arrays.w = reinterpret_cast<const Element**>(take(sizeof(void*)));
  arrays.d = reinterpret_cast<Element**>(take(sizeof(void*)));
  arrays.stride_a = reinterpret_cast<typename G::StrideA*>(take(sizeof(typename G::StrideA)));
  arrays.stride_w = reinterpret_cast<typename G::StrideB*>(take(sizeof(typename G::StrideB)));
  arrays.stride_d = reinterpret_cast<typename G::StrideD*>(take(sizeof(typename G::StrideD)));

  auto s = static_cast<cudaStream_t>(stream);
  setup_groups_kernel<G><<<static_cast<unsigned>((E * 32 + 255) / 256), 256, 0, s>>>(g, arrays);
  FK_CUDA_CHECK_LAUNCH();

  int device = 0;
  FK_CUDA_CHECK(cudaGetDevice(&device));
  cutlass::KernelHardwareInfo hw{};
  hw.device_id = device;
  FK_CUDA_CHECK(cudaDeviceGetAttribute(&hw.sm_count, cudaDevAttrMultiProcessorCount, device));
  FK_CHECK(hw.sm_count <= kMaxSms, "fused_experts grouped GEMM: ", hw.sm_count, " SMs, the workspace counts up to ",
           kMaxSms);

  typename G::Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGrouped,
      {static_cast<int>(E), arrays.problems, nullptr},  // no host copy of the sizes: the grid is one CTA per SM
      {arrays.a, arrays.stride_a, arrays.w, arrays.stride_w},
      {{}, nullptr, nullptr, arrays.d, arrays.stride_d},
      hw};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;

  typename G::Gemm gemm;
  const size_t workspace = G::Gemm::get_workspace_size(args);
  FK_CHECK(static_cast<int64_t>(workspace) <= g.scratch_bytes - at, "fused_experts grouped GEMM: CUTLASS needs ",
           workspace, " bytes of workspace, the scratch has ", g.scratch_bytes - at);
  FK_CHECK(gemm.can_implement(args) == cutlass::Status::kSuccess, "fused_experts grouped GEMM: CUTLASS cannot run N = ",
           g.N, ", K = ", g.K);
  FK_CHECK(gemm.initialize(args, base + at, s) == cutlass::Status::kSuccess,
           "fused_experts grouped GEMM: CUTLASS initialisation failed");
  FK_CHECK(gemm.run(s) == cutlass::Status::kSuccess, "fused_experts grouped GEMM: launch failed");
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::ops::moe_grouped
