// fused_experts: the GPU reference (OpRegistry::gpu_reference) for workloads too large for
// the CPU oracle. The semantics of fused_experts_reference.cpp in double on the device:
//     act[s, i] = silu(w13[e, i, :] . x[t, :]) * (w13[e, I + i, :] . x[t, :])   slot s = (t, j), e = topk_ids[t, j]
//     y[s, h]   = w2[e, h, :] . act[s, :]
//     out[t, h] = sum over the token's slots, by increasing expert: topk_weights[t, j] * y[s, h]
// with fp8 weights times their 128 x 128 block scales, nothing rounded in between (the
// CPU reference's order of the final sum, too). Slots whose expert is outside [0, E) add
// nothing. The slots are grouped by expert on the host (topk_ids is copied back), and two
// batched double-precision GEMMs (reference_gemm.cuh) run one batch entry per expert.
// Scratch: (routed slots) x (I + H) doubles, allocated here.
#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/op_registry.h"
#include "fk/ops/moe.h"
#include "fk/runtime.h"
#include "ops/common/reference_gemm.cuh"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

constexpr int64_t kScaleBlock = 128;

// gate and up projections of every routed slot (pair 0: gate rows, pair 1: up rows), then act.
template <class TH, class TW>
struct GateUpProblem {
  int64_t cols, depth;      // I, H
  const int64_t* offsets;   // [E + 1]: expert e owns rows [offsets[e], offsets[e + 1])
  const int32_t* row_token;  // [rows]: the token of each row
  const TH* hidden;
  int64_t hidden_row, hidden_col;
  const TW* w13;       // [E, 2I, H]
  const float* scale;  // [E, ceil(2I/128), ceil(H/128)]; null unless fp8
  int64_t scale_rows, scale_cols;
  double* act;  // [rows, I]

  __device__ int64_t rows(int64_t z) const { return offsets[z + 1] - offsets[z]; }
  __device__ double a(int64_t z, int64_t m, int64_t k) const {
    return gpu_ref::to_double(hidden[row_token[offsets[z] + m] * hidden_row + k * hidden_col]);
  }
  __device__ double b(int64_t z, int pair, int64_t n, int64_t k) const {
    const int64_t r = pair * cols + n;
    double w = gpu_ref::to_double(w13[(z * 2 * cols + r) * depth + k]);
    if (scale) w *= static_cast<double>(scale[(z * scale_rows + r / kScaleBlock) * scale_cols + k / kScaleBlock]);
    return w;
  }
  __device__ void store(int64_t z, int64_t m, int64_t n, const double (&acc)[2]) const {
    const double g = acc[0];
    act[(offsets[z] + m) * cols + n] = g / (1.0 + exp(-g)) * acc[1];
  }
};

// The down projection of every routed slot.
template <class TW>
struct DownProblem {
  int64_t cols, depth;  // H, I
  const int64_t* offsets;
  const double* act;  // [rows, I]
  const TW* w2;       // [E, H, I]
  const float* scale;  // [E, ceil(H/128), ceil(I/128)]; null unless fp8
  int64_t scale_rows, scale_cols;
  double* y;  // [rows, H]

  __device__ int64_t rows(int64_t z) const { return offsets[z + 1] - offsets[z]; }
  __device__ double a(int64_t z, int64_t m, int64_t k) const { return act[(offsets[z] + m) * depth + k]; }
  __device__ double b(int64_t z, int, int64_t n, int64_t k) const {
    double w = gpu_ref::to_double(w2[(z * cols + n) * depth + k]);
    if (scale) w *= static_cast<double>(scale[(z * scale_rows + n / kScaleBlock) * scale_cols + k / kScaleBlock]);
    return w;
  }
  __device__ void store(int64_t z, int64_t m, int64_t n, const double (&acc)[1]) const {
    y[(offsets[z] + m) * cols + n] = acc[0];
  }
};

// out[t, h] = sum_r topk_weights[t, slot_j[t, r]] * y[slot_row[t, r], h] over the token's
// routed slots in increasing expert order (slot_row -1 ends the list).
__global__ void combine_kernel(double* out, int64_t out_row, const double* y, const int32_t* slot_row,
                               const int32_t* slot_j, const float* weights, int64_t T, int64_t k, int64_t H) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < T * H;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / H, h = i % H;
    double acc = 0.0;
    for (int64_t r = 0; r < k; ++r) {
      const int32_t row = slot_row[t * k + r];
      if (row < 0) break;
      acc += static_cast<double>(weights[t * k + slot_j[t * k + r]]) * y[row * H + h];
    }
    out[t * out_row + h] = acc;
  }
}

// The routing on the host: rows grouped by expert (experts in increasing order, each
// expert's slots by flattened index, as the CPU reference visits them).
struct Grouping {
  std::vector<int64_t> offsets;    // [E + 1]
  std::vector<int32_t> row_token;  // [rows]
  std::vector<int32_t> slot_row;   // [T * k]: per token, its rows by increasing expert; -1 after the last
  std::vector<int32_t> slot_j;     // [T * k]: the j of each of those rows
  int64_t max_rows = 0;            // the largest expert group
};

Grouping group_slots(const std::vector<int32_t>& ids, int64_t T, int64_t k, int64_t E) {
  Grouping g;
  std::vector<std::vector<int64_t>> by_expert(static_cast<size_t>(E));
  for (int64_t s = 0; s < T * k; ++s) {
    const int64_t e = ids[static_cast<size_t>(s)];
    if (e >= 0 && e < E) by_expert[static_cast<size_t>(e)].push_back(s);
  }
  g.offsets.assign(static_cast<size_t>(E + 1), 0);
  std::vector<int32_t> row_of_slot(static_cast<size_t>(T * k), -1);
  for (int64_t e = 0; e < E; ++e) {
    const auto& slots = by_expert[static_cast<size_t>(e)];
    g.offsets[static_cast<size_t>(e + 1)] = g.offsets[static_cast<size_t>(e)] + static_cast<int64_t>(slots.size());
    g.max_rows = std::max(g.max_rows, static_cast<int64_t>(slots.size()));
    for (const int64_t s : slots) {
      row_of_slot[static_cast<size_t>(s)] = static_cast<int32_t>(g.row_token.size());
      g.row_token.push_back(static_cast<int32_t>(s / k));
    }
  }
  g.slot_row.assign(static_cast<size_t>(T * k), -1);
  g.slot_j.assign(static_cast<size_t>(T * k), 0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int64_t> js;
    for (int64_t j = 0; j < k; ++j)
      if (row_of_slot[static_cast<size_t>(t * k + j)] >= 0) js.push_back(j);
    std::stable_sort(js.begin(), js.end(), [&](int64_t x, int64_t y) {
      return ids[static_cast<size_t>(t * k + x)] < ids[static_cast<size_t>(t * k + y)];
    });
    for (size_t r = 0; r < js.size(); ++r) {
      g.slot_row[static_cast<size_t>(t * k) + r] = row_of_slot[static_cast<size_t>(t * k + js[r])];
      g.slot_j[static_cast<size_t>(t * k) + r] = static_cast<int32_t>(js[r]);
    }
  }
  return g;
}

template <class V>
Tensor upload(const std::vector<V>& v, DType dt, Device device, cudaStream_t stream) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, dt, device, stream);
  if (!v.empty()) rt::memcpy_async(t.data(), device, v.data(), Device::cpu(), t.nbytes(), stream);
  return t;
}

// Device buffers of one call.
struct Scratch {
  const int64_t* offsets;
  const int32_t* row_token;
  double* act;
  double* y;
  int64_t max_rows;
};

// act, then y, for every routed slot: TH the activation type, TW the weights'.
template <class TH, class TW>
void project(const FusedExpertsArgs& a, const FusedExpertsShape& s, const Scratch& scratch, cudaStream_t stream) {
  constexpr const char* op = FusedExpertsArgs::kName;
  GateUpProblem<TH, TW> up{};
  up.cols = s.I;
  up.depth = s.H;
  up.offsets = scratch.offsets;
  up.row_token = scratch.row_token;
  up.hidden = static_cast<const TH*>(a.hidden.data);
  up.hidden_row = a.hidden.strides[0];
  up.hidden_col = a.hidden.strides[1];
  up.w13 = static_cast<const TW*>(a.w13.data);
  up.scale = s.fp8 ? static_cast<const float*>(a.w13_scale.data) : nullptr;
  up.scale_rows = (2 * s.I + kScaleBlock - 1) / kScaleBlock;
  up.scale_cols = (s.H + kScaleBlock - 1) / kScaleBlock;
  up.act = scratch.act;
  gpu_ref::launch_reference_gemm<2>(op, up, s.E, scratch.max_rows, stream);

  DownProblem<TW> down{};
  down.cols = s.H;
  down.depth = s.I;
  down.offsets = scratch.offsets;
  down.act = scratch.act;
  down.w2 = static_cast<const TW*>(a.w2.data);
  down.scale = s.fp8 ? static_cast<const float*>(a.w2_scale.data) : nullptr;
  down.scale_rows = (s.H + kScaleBlock - 1) / kScaleBlock;
  down.scale_cols = (s.I + kScaleBlock - 1) / kScaleBlock;
  down.y = scratch.y;
  gpu_ref::launch_reference_gemm<1>(op, down, s.E, scratch.max_rows, stream);
}

fk_status fused_experts_gpu_reference(const void* args, void* stream_ptr) {
  return op_guard([&] {
    const auto& a = *static_cast<const FusedExpertsArgs*>(args);
    constexpr const char* op = FusedExpertsArgs::kName;
    auto stream = static_cast<cudaStream_t>(stream_ptr);
    // The op's own checks on the CUDA backend expect `out` in the activation dtype: run
    // them on a copy that says so, and check the f64 `out` of the reference separately.
    FusedExpertsArgs checked = a;
    checked.out.dtype = a.hidden.dtype;
    const FusedExpertsShape s = validate_fused_experts(checked, DeviceType::cuda);
    expect_dtype(op, "out", a.out, DType::f64);
    if (s.T == 0) return;

    std::vector<int32_t> ids(static_cast<size_t>(s.T * s.k));
    rt::memcpy_async(ids.data(), Device::cpu(), a.topk_ids.data, a.topk_ids.device, ids.size() * sizeof(int32_t),
                     stream);
    rt::stream_synchronize(stream);
    const Grouping g = group_slots(ids, s.T, s.k, s.E);
    const int64_t rows = g.offsets.back();

    const Device dev = a.out.device;
    const Tensor offsets = upload(g.offsets, DType::i64, dev, stream);
    const Tensor row_token = upload(g.row_token, DType::i32, dev, stream);
    const Tensor slot_row = upload(g.slot_row, DType::i32, dev, stream);
    const Tensor slot_j = upload(g.slot_j, DType::i32, dev, stream);
    const Tensor act = Tensor::empty({rows, s.I}, DType::f64, dev, stream);
    const Tensor y = Tensor::empty({rows, s.H}, DType::f64, dev, stream);

    const Scratch scratch{offsets.data_as<int64_t>(), row_token.data_as<int32_t>(), act.data_as<double>(),
                          y.data_as<double>(), g.max_rows};
    const bool bf16 = a.hidden.dtype == DType::bf16;  // else f16 (validated)
    if (bf16 && s.fp8) project<__nv_bfloat16, __nv_fp8_e4m3>(a, s, scratch, stream);
    else if (bf16) project<__nv_bfloat16, __nv_bfloat16>(a, s, scratch, stream);
    else if (s.fp8) project<__half, __nv_fp8_e4m3>(a, s, scratch, stream);
    else project<__half, __half>(a, s, scratch, stream);

    const int64_t n = s.T * s.H;
    const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
    combine_kernel<<<blocks, 256, 0, stream>>>(static_cast<double*>(a.out.data), a.out.strides[0],
                                               y.data_as<double>(), slot_row.data_as<int32_t>(),
                                               slot_j.data_as<int32_t>(),
                                               static_cast<const float*>(a.topk_weights.data), s.T, s.k, s.H);
    FK_CUDA_CHECK_LAUNCH();
    // The scratch above is released when this returns: finish with it first.
    rt::stream_synchronize(stream);
  });
}

FK_REGISTER_GPU_REFERENCE("fused_experts", fused_experts_gpu_reference);

}  // namespace
}  // namespace fk::ops
