// Argument checks of the MoE ops, shared by their CPU references and CUDA baselines.
// `backend` is where the implementation runs: every tensor must live there (workspace
// aside on the CPU), and the CPU implementation, which is also the oracle, accepts f64 for
// the float tensors it writes.
#pragma once
#include <climits>
#include <utility>

#include "fk/ops/moe.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void expect_moe_device(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  if (arg_present(v)) expect_device(op, arg, v, backend);
}

// [T, k] topk_weights (f32, f64 where the oracle writes them) and topk_ids (i32).
inline void expect_topk_pair(const char* op, const TensorView& weights, const TensorView& ids, bool weights_written,
                             DeviceType backend) {
  expect_rank(op, "topk_weights", weights, 2);
  expect_rank(op, "topk_ids", ids, 2);
  expect_same_shape(op, "topk_weights", weights, "topk_ids", ids);
  if (weights_written) expect_written_dtype(op, "topk_weights", weights, DType::f32, backend);
  else expect_dtype(op, "topk_weights", weights, DType::f32);
  expect_dtype(op, "topk_ids", ids, DType::i32);
  expect_contiguous(op, "topk_weights", weights);
  expect_contiguous(op, "topk_ids", ids);
  expect_moe_device(op, "topk_weights", weights, backend);
  expect_moe_device(op, "topk_ids", ids, backend);
  FK_CHECK(ids.shape[0] <= INT_MAX && ids.shape[1] >= 1 && ids.shape[0] * ids.shape[1] <= INT_MAX, op,
           ": topk needs k >= 1 and at most 2^31-1 slots, got ", describe(ids));
}

// Routing ops: gating_output [T, E] and the [T, k] outputs. `op` names the op in errors
// (fused_moe validates its routing part with this too).
template <class A>
void validate_routing_common(const A& a, DeviceType backend, const char* op = A::kName) {
  expect_rank(op, "gating_output", a.gating_output, 2);
  expect_dtype_in(op, "gating_output", a.gating_output, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "gating_output", a.gating_output);
  expect_moe_device(op, "gating_output", a.gating_output, backend);
  expect_topk_pair(op, a.topk_weights, a.topk_ids, /*weights_written=*/true, backend);
  const int64_t T = a.gating_output.shape[0], E = a.gating_output.shape[1], k = a.topk_ids.shape[1];
  FK_CHECK(E >= 1 && E <= 65536, op, ": the number of experts must be in [1, 65536], got ", describe(a.gating_output));
  FK_CHECK(a.topk_ids.shape[0] == T, op, ": topk_ids must have ", T, " rows (one per token), got ",
           describe(a.topk_ids));
  FK_CHECK(k <= E, op, ": k (", k, ") exceeds the number of experts (", E, ")");
  expect_no_overlap(op, "topk_weights", a.topk_weights, "topk_ids", a.topk_ids);
  expect_no_overlap(op, "topk_weights", a.topk_weights, "gating_output", a.gating_output);
  expect_no_overlap(op, "topk_ids", a.topk_ids, "gating_output", a.gating_output);
}

inline void validate_grouped_topk(const MoeGroupedTopkArgs& a, DeviceType backend) {
  constexpr const char* op = MoeGroupedTopkArgs::kName;
  validate_routing_common(a, backend);
  const int64_t E = a.gating_output.shape[1], k = a.topk_ids.shape[1];
  FK_CHECK(a.n_group >= 1 && E % a.n_group == 0, op, ": n_group (", a.n_group,
           ") must be >= 1 and divide the number of experts (", E, ")");
  FK_CHECK(a.topk_group >= 1 && a.topk_group <= a.n_group, op, ": topk_group (", a.topk_group,
           ") must be in [1, n_group = ", a.n_group, "]");
  const int64_t per_group = E / a.n_group;
  FK_CHECK(k <= a.topk_group * per_group, op, ": k (", k, ") exceeds the experts of the ", a.topk_group,
           " kept groups (", a.topk_group * per_group, ")");
  FK_CHECK(a.scoring == MoeScoring::softmax || a.scoring == MoeScoring::sigmoid, op,
           ": scoring must be 0 (softmax) or 1 (sigmoid), got ", static_cast<int>(a.scoring));
  FK_CHECK(a.routed_scaling_factor > 0 && a.routed_scaling_factor < 1e30f, op,
           ": routed_scaling_factor must be positive and finite, got ", a.routed_scaling_factor);
  if (arg_present(a.e_score_correction_bias)) {
    expect_rank(op, "e_score_correction_bias", a.e_score_correction_bias, 1);
    expect_dim(op, "e_score_correction_bias", a.e_score_correction_bias, 0, E);
    expect_dtype(op, "e_score_correction_bias", a.e_score_correction_bias, DType::f32);
    expect_contiguous(op, "e_score_correction_bias", a.e_score_correction_bias);
    expect_moe_device(op, "e_score_correction_bias", a.e_score_correction_bias, backend);
    FK_CHECK(per_group >= 2, op, ": with a correction bias a group scores by its 2 best experts, so groups need >= 2 "
             "experts, got ", per_group);
  }
}

inline void validate_align(const MoeAlignBlockSizeArgs& a, DeviceType backend) {
  constexpr const char* op = MoeAlignBlockSizeArgs::kName;
  expect_rank(op, "topk_ids", a.topk_ids, 2);
  expect_dtype(op, "topk_ids", a.topk_ids, DType::i32);
  expect_contiguous(op, "topk_ids", a.topk_ids);
  for (const auto& [name, v] : {std::pair{"sorted_token_ids", a.sorted_token_ids}, std::pair{"expert_ids", a.expert_ids},
                                std::pair{"num_tokens_post_padded", a.num_tokens_post_padded}}) {
    expect_rank(op, name, v, 1);
    expect_dtype(op, name, v, DType::i32);
    expect_contiguous(op, name, v);
    expect_moe_device(op, name, v, backend);
  }
  expect_moe_device(op, "topk_ids", a.topk_ids, backend);
  FK_CHECK(a.num_experts >= 1 && a.num_experts <= 65536, op, ": num_experts must be in [1, 65536], got ",
           a.num_experts);
  FK_CHECK(a.block_size >= 1 && a.block_size <= 4096, op, ": block_size must be in [1, 4096], got ", a.block_size);
  const int64_t N = a.topk_ids.numel();
  FK_CHECK(N <= INT_MAX / 2, op, ": too many slots (", N, ")");
  const int64_t need = moe_align_max_padded(N, a.num_experts, a.block_size);
  FK_CHECK(a.sorted_token_ids.shape[0] >= need && a.sorted_token_ids.shape[0] <= INT_MAX, op,
           ": sorted_token_ids needs at least ", need, " entries (N + min(E, N) * (block_size - 1)), got ",
           describe(a.sorted_token_ids));
  const int64_t blocks = (a.sorted_token_ids.shape[0] + a.block_size - 1) / a.block_size;
  FK_CHECK(a.expert_ids.shape[0] >= blocks, op, ": expert_ids needs at least ", blocks,
           " entries (ceil(len(sorted_token_ids) / block_size)), got ", describe(a.expert_ids));
  FK_CHECK(a.num_tokens_post_padded.shape[0] == 1, op, ": num_tokens_post_padded must hold one element, got ",
           describe(a.num_tokens_post_padded));
  expect_no_overlap(op, "sorted_token_ids", a.sorted_token_ids, "expert_ids", a.expert_ids);
  expect_no_overlap(op, "sorted_token_ids", a.sorted_token_ids, "num_tokens_post_padded", a.num_tokens_post_padded);
  expect_no_overlap(op, "expert_ids", a.expert_ids, "num_tokens_post_padded", a.num_tokens_post_padded);
  expect_no_overlap(op, "sorted_token_ids", a.sorted_token_ids, "topk_ids", a.topk_ids);
  expect_no_overlap(op, "expert_ids", a.expert_ids, "topk_ids", a.topk_ids);
  expect_no_overlap(op, "num_tokens_post_padded", a.num_tokens_post_padded, "topk_ids", a.topk_ids);
  if (backend == DeviceType::cuda) {
    FK_CHECK(a.workspace.numel() * a.workspace.element_size() >= moe_align_workspace_bytes(N, a.num_experts), op,
             ": workspace needs at least ", moe_align_workspace_bytes(N, a.num_experts), " bytes, got ",
             describe(a.workspace));
    expect_moe_device(op, "workspace", a.workspace, backend);
    expect_no_overlap(op, "workspace", a.workspace, "sorted_token_ids", a.sorted_token_ids);
    expect_no_overlap(op, "workspace", a.workspace, "expert_ids", a.expert_ids);
    expect_no_overlap(op, "workspace", a.workspace, "num_tokens_post_padded", a.num_tokens_post_padded);
    expect_no_overlap(op, "workspace", a.workspace, "topk_ids", a.topk_ids);
  }
}

inline void validate_unpermute_sum(const MoeUnpermuteSumArgs& a, DeviceType backend) {
  constexpr const char* op = MoeUnpermuteSumArgs::kName;
  expect_rank(op, "permuted", a.permuted, 2);
  expect_rank(op, "out", a.out, 2);
  expect_rank(op, "inv_perm", a.inv_perm, 2);
  expect_dtype_in(op, "permuted", a.permuted, {DType::f32, DType::f16, DType::bf16});
  expect_written_dtype(op, "out", a.out, a.permuted.dtype, backend);
  expect_dtype(op, "inv_perm", a.inv_perm, DType::i32);
  expect_rows_contiguous(op, "permuted", a.permuted);
  expect_rows_contiguous(op, "out", a.out);
  expect_contiguous(op, "inv_perm", a.inv_perm);
  const int64_t T = a.inv_perm.shape[0], H = a.permuted.shape[1];
  FK_CHECK(a.inv_perm.shape[1] >= 1, op, ": inv_perm needs k >= 1 columns, got ", describe(a.inv_perm));
  expect_dim(op, "out", a.out, 0, T);
  expect_dim(op, "out", a.out, 1, H);
  FK_CHECK(H >= 1 && H <= INT_MAX && T <= INT_MAX && a.permuted.shape[0] <= INT_MAX, op,
           ": sizes must fit 32-bit indices, got permuted ", describe(a.permuted));
  FK_CHECK(T <= 1 || a.out.strides[0] >= H, op, ": out rows overlap, got ", describe(a.out));
  if (arg_present(a.topk_weights)) {
    expect_same_shape(op, "topk_weights", a.topk_weights, "inv_perm", a.inv_perm);
    expect_dtype(op, "topk_weights", a.topk_weights, DType::f32);
    expect_contiguous(op, "topk_weights", a.topk_weights);
    expect_moe_device(op, "topk_weights", a.topk_weights, backend);
  }
  expect_moe_device(op, "out", a.out, backend);
  expect_moe_device(op, "permuted", a.permuted, backend);
  expect_moe_device(op, "inv_perm", a.inv_perm, backend);
  expect_no_overlap(op, "out", a.out, "permuted", a.permuted);
  expect_no_overlap(op, "out", a.out, "inv_perm", a.inv_perm);
  expect_no_overlap(op, "out", a.out, "topk_weights", a.topk_weights);
}

// Shapes of fused_experts: T, k, E, H, I and whether the weights are fp8.
struct FusedExpertsShape {
  int64_t T, k, E, H, I;
  bool fp8;
};

// `op` names the op in errors; topk_weights_written: the routing is an output (fused_moe),
// so the CPU oracle may hold its weights in f64.
inline FusedExpertsShape validate_fused_experts(const FusedExpertsArgs& a, DeviceType backend,
                                                const char* op = FusedExpertsArgs::kName,
                                                bool topk_weights_written = false) {
  expect_rank(op, "hidden", a.hidden, 2);
  expect_rank(op, "out", a.out, 2);
  expect_rank(op, "w13", a.w13, 3);
  expect_rank(op, "w2", a.w2, 3);
  expect_dtype_in(op, "hidden", a.hidden, {DType::bf16, DType::f16});
  expect_written_dtype(op, "out", a.out, a.hidden.dtype, backend);
  expect_rows_contiguous(op, "hidden", a.hidden);
  expect_contiguous(op, "out", a.out);
  expect_contiguous(op, "w13", a.w13);
  expect_contiguous(op, "w2", a.w2);
  FusedExpertsShape s{};
  s.T = a.hidden.shape[0];
  s.H = a.hidden.shape[1];
  s.E = a.w13.shape[0];
  FK_CHECK(a.w13.shape[1] % 2 == 0 && a.w13.shape[1] > 0, op, ": w13 must be [E, 2I, H] (gate rows then up rows), got ",
           describe(a.w13));
  s.I = a.w13.shape[1] / 2;
  FK_CHECK(s.E >= 1 && s.E <= 65536 && s.H >= 1, op, ": w13 needs 1..65536 experts and hidden >= 1, got ",
           describe(a.w13));
  expect_dim(op, "w13", a.w13, 2, s.H);
  expect_dim(op, "w2", a.w2, 0, s.E);
  expect_dim(op, "w2", a.w2, 1, s.H);
  expect_dim(op, "w2", a.w2, 2, s.I);
  expect_dim(op, "out", a.out, 0, s.T);
  expect_dim(op, "out", a.out, 1, s.H);
  FK_CHECK(s.T <= 1 || a.hidden.strides[0] >= s.H, op, ": hidden rows overlap, got ", describe(a.hidden));
  s.fp8 = a.w13.dtype == DType::f8e4m3fn;
  if (s.fp8) {
    expect_dtype(op, "w2", a.w2, DType::f8e4m3fn);
    const int64_t shapes[2][3] = {{s.E, (2 * s.I + 127) / 128, (s.H + 127) / 128},
                                  {s.E, (s.H + 127) / 128, (s.I + 127) / 128}};
    const char* names[2] = {"w13_scale", "w2_scale"};
    const TensorView* scales[2] = {&a.w13_scale, &a.w2_scale};
    for (int i = 0; i < 2; ++i) {
      const TensorView& v = *scales[i];
      FK_CHECK(arg_present(v), op, ": fp8 weights need ", names[i], " (f32 [", shapes[i][0], ", ", shapes[i][1], ", ",
               shapes[i][2], "], one scale per 128x128 block)");
      expect_rank(op, names[i], v, 3);
      for (int d = 0; d < 3; ++d) expect_dim(op, names[i], v, d, shapes[i][d]);
      expect_dtype(op, names[i], v, DType::f32);
      expect_contiguous(op, names[i], v);
      expect_moe_device(op, names[i], v, backend);
    }
  } else {
    expect_dtype(op, "w13", a.w13, a.hidden.dtype);
    expect_dtype(op, "w2", a.w2, a.hidden.dtype);
    FK_CHECK(!arg_present(a.w13_scale) && !arg_present(a.w2_scale), op,
             ": w13_scale / w2_scale are for fp8 weights only, w13 is ", describe(a.w13));
  }
  expect_topk_pair(op, a.topk_weights, a.topk_ids, topk_weights_written, backend);
  expect_dim(op, "topk_ids", a.topk_ids, 0, s.T);
  s.k = a.topk_ids.shape[1];
  FK_CHECK(s.T * s.k <= INT_MAX / 2 && s.H <= INT_MAX && s.I <= INT_MAX, op, ": sizes must fit 32-bit indices");
  for (const auto& [name, v] : {std::pair{"hidden", a.hidden}, std::pair{"out", a.out}, std::pair{"w13", a.w13},
                                std::pair{"w2", a.w2}})
    expect_moe_device(op, name, v, backend);
  expect_no_overlap(op, "out", a.out, "hidden", a.hidden);
  expect_no_overlap(op, "out", a.out, "w13", a.w13);
  expect_no_overlap(op, "out", a.out, "w2", a.w2);
  expect_no_overlap(op, "out", a.out, "topk_weights", a.topk_weights);
  expect_no_overlap(op, "out", a.out, "topk_ids", a.topk_ids);
  expect_no_overlap(op, "out", a.out, "workspace", a.workspace);
  if (backend == DeviceType::cuda) {
    const int64_t need = fused_experts_workspace_bytes(s.T, s.k, s.E, s.H, s.I);
    FK_CHECK(a.workspace.numel() * a.workspace.element_size() >= need, op, ": workspace needs at least ", need,
             " bytes (fused_experts_workspace_bytes), got ", describe(a.workspace));
    expect_moe_device(op, "workspace", a.workspace, backend);
    for (const auto& [name, v] : {std::pair{"hidden", a.hidden}, std::pair{"w13", a.w13}, std::pair{"w2", a.w2},
                                  std::pair{"topk_weights", a.topk_weights}, std::pair{"topk_ids", a.topk_ids}})
      expect_no_overlap(op, "workspace", a.workspace, name, v);
  }
  return s;
}

}  // namespace fk::ops
