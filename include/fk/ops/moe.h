// Mixture-of-experts ops (vLLM conventions). Shapes beside each field: T tokens (packed),
// E experts, k experts per token (top-k), H hidden size, I expert intermediate size,
// N = T * k routing slots. Slot (t, j) is token t's j-th expert; its flattened index is
// t * k + j.
//
// Routing: gating logits [T, E] -> topk_weights [T, k] (f32) and topk_ids [T, k] (i32).
// The k experts of a token are distinct. Which experts tie-break an exact tie of scores is
// free (the CPU reference and the CUDA baseline pick the lower expert index, and write the
// k experts in descending order of score); checks accept any valid top-k selection in any
// order, with the weights that belong to the selected experts. Scores are computed in
// fp32 (CUDA) or double (CPU reference); a selection is valid when every selected expert
// scores at least as high as every unselected one, up to fp32 rounding.
//
// Expert ids outside [0, E) in topk_ids (e.g. -1: the expert lives on another rank, as in
// vLLM's expert parallelism) route the slot nowhere: moe_align_block_size leaves the slot
// out and fused_experts adds nothing for it.
#pragma once
#include <algorithm>
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

enum class MoeScoring : int32_t {
  softmax = 0,  // score = softmax(logits)[e]
  sigmoid = 1,  // score = 1 / (1 + exp(-logits[e]))
};

// Softmax top-k (Mixtral, Qwen-MoE, OLMoE): p = softmax(gating_output[t, :]); the k
// largest p; topk_weights = those p, divided by their sum when renormalize != 0.
struct MoeTopkSoftmaxArgs {
  static constexpr const char* kName = "moe_topk_softmax";
  TensorView topk_weights;   // [T, k] written; f32; contiguous
  TensorView topk_ids;       // [T, k] written; i32; contiguous
  TensorView gating_output;  // [T, E] read; f32/f16/bf16; rows contiguous (row stride free)
  int32_t renormalize;       // 1: weights / sum(weights); 0: the softmax probabilities
};

// Sigmoid top-k (Llama-4 style routing): s = sigmoid(gating_output[t, :]); the k largest
// s; topk_weights = those s, divided by their sum when renormalize != 0.
struct MoeTopkSigmoidArgs {
  static constexpr const char* kName = "moe_topk_sigmoid";
  TensorView topk_weights;   // [T, k] written; f32; contiguous
  TensorView topk_ids;       // [T, k] written; i32; contiguous
  TensorView gating_output;  // [T, E] read; f32/f16/bf16; rows contiguous (row stride free)
  int32_t renormalize;
};

// Grouped top-k (DeepSeek-V2/V3): experts form n_group groups of E / n_group consecutive
// experts. Per token:
//   s = score(gating_output[t, :])                (softmax or sigmoid)
//   c = s + e_score_correction_bias                (c = s without a bias)
//   group score = sum of the 2 largest c of the group with a bias (DeepSeek-V3),
//                 the largest s of the group without one (DeepSeek-V2)
//   keep the topk_group best groups; the k largest c among their experts are selected
//   topk_weights = s of the selected experts (the bias only chooses), divided by their
//                  sum when renormalize != 0, then times routed_scaling_factor.
// E % n_group == 0, 1 <= topk_group <= n_group, k <= topk_group * E / n_group, and with
// a bias E / n_group >= 2.
struct MoeGroupedTopkArgs {
  static constexpr const char* kName = "moe_grouped_topk";
  TensorView topk_weights;             // [T, k] written; f32; contiguous
  TensorView topk_ids;                 // [T, k] written; i32; contiguous
  TensorView gating_output;            // [T, E] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView e_score_correction_bias;  // [E] read; f32; optional (data == nullptr: none)
  int32_t n_group;
  int32_t topk_group;
  MoeScoring scoring;
  int32_t renormalize;
  float routed_scaling_factor;  // 1: none
};

// The sorted_token_ids length moe_align_block_size needs for N slots, E experts and
// `block_size`: every slot, plus at most block_size - 1 padding slots for each of the at
// most min(E, N) experts that have slots.
inline int64_t moe_align_max_padded(int64_t num_slots, int64_t num_experts, int64_t block_size) {
  return num_slots + std::min(num_experts, num_slots) * (block_size - 1);
}
inline int64_t moe_align_max_blocks(int64_t num_slots, int64_t num_experts, int64_t block_size) {
  return (moe_align_max_padded(num_slots, num_experts, block_size) + block_size - 1) / block_size;
}
// Scratch of moe_align_block_size: per-expert counts of every 1024 slots and the experts'
// offsets.
inline int64_t moe_align_workspace_bytes(int64_t num_slots, int64_t num_experts) {
  return 4 * ((num_slots + 1023) / 1024 * num_experts + num_experts + 1) + 256;
}

// Groups the slots by expert, each expert's group padded to a multiple of block_size, so
// that a grouped GEMM can give each block of block_size rows to one expert (vLLM's
// moe_align_block_size). With cnt[e] the number of slots routed to expert e and
// padded[e] = ceil(cnt[e] / block_size) * block_size:
//   num_tokens_post_padded[0] = sum_e padded[e]
//   expert e owns sorted_token_ids[off[e], off[e] + padded[e]), off[e] = sum of padded[e'] for e' < e
//     (experts in increasing order; experts without slots own nothing): its cnt[e] slots
//     (flattened indices t * k + j with topk_ids[t, j] == e), in any order, and
//     padded[e] - cnt[e] sentinels (the value N), in any positions of its range.
//   expert_ids[b] = the expert owning rows [b * block_size, (b + 1) * block_size) for
//     b < num_tokens_post_padded / block_size; -1 for the remaining blocks.
//   sorted_token_ids[i] = N (sentinel) for i >= num_tokens_post_padded.
// The CPU reference and the CUDA baseline order each expert's slots by flattened index,
// sentinels last. Slots with ids outside [0, E) are in no group.
struct MoeAlignBlockSizeArgs {
  static constexpr const char* kName = "moe_align_block_size";
  TensorView sorted_token_ids;        // [S] written; i32; S >= moe_align_max_padded(N, E, block_size); contiguous
  TensorView expert_ids;              // [B] written; i32; B >= ceil(S / block_size); contiguous
  TensorView num_tokens_post_padded;  // [1] written; i32
  TensorView topk_ids;                // [T, k] read; i32; contiguous
  TensorView workspace;               // [bytes] u8: >= moe_align_workspace_bytes(N, E) of scratch (device memory
                                      //   on the CUDA backend; the CPU reference needs none)
  int32_t num_experts;                // E >= 1
  int32_t block_size;                 // >= 1
};

// The weighted combine of expert outputs (the inverse of the permutation):
//   out[t, :] = sum_{j < k} topk_weights[t, j] * permuted[inv_perm[t, j], :]
// summed in fp32 (CUDA) or double (CPU) in order j = 0..k-1 and rounded once. A slot with
// inv_perm[t, j] outside [0, P) adds nothing. Without topk_weights every weight is 1.
struct MoeUnpermuteSumArgs {
  static constexpr const char* kName = "moe_unpermute_sum";
  TensorView out;           // [T, H] written; dtype of permuted; rows contiguous (row stride free)
  TensorView permuted;      // [P, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView inv_perm;      // [T, k] read; i32; contiguous: the row of `permuted` holding slot (t, j)
  TensorView topk_weights;  // [T, k] read; f32; contiguous; optional (data == nullptr: weights 1)
};

// The gated shared expert of Qwen2-MoE, added IN PLACE to the routed experts' output:
//   out[t, h] = out[t, h] + sigmoid(gate[t, 0]) * input[t, h],   sigmoid(g) = 1 / (1 + exp(-g))
// computed in fp32 (CUDA) or double (CPU reference) and rounded once to the dtype.
// `input` is the shared expert's output (a SwiGLU MLP: linear, silu_and_mul, linear) and
// `gate` its gate logit, x . shared_expert_gate (linear with N = 1), one per token.
// The logit is a GEMV that `linear` already runs (and a linear candidate then covers), so
// it stays out of this op: what is left is one bandwidth-bound pass over the rows, with
// no reduction. In place because `out` is fused_experts' output buffer, which the next
// layer's fused_add_rms_norm reads: a separate result would cost a [T, H] buffer and a
// copy. A gate that is a column of a wider GEMM output (row stride > 1) is fine.
struct SigmoidGatedAddArgs {
  static constexpr const char* kName = "sigmoid_gated_add";
  TensorView out;    // [T, H] updated: the routed experts' sum in, plus the gated shared expert out;
                     //        dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free); must not overlap out
  TensorView gate;   // [T, 1] read; dtype of input; row stride free; must not overlap out
};

// Scratch of the CUDA baseline's grouped GEMM (prefill) for E experts: seven per-expert
// argument arrays (at most 16 bytes an entry, each 256-byte aligned), then CUTLASS's
// workspace: at most four 128-byte TMA descriptors per SM, for up to 1024 SMs.
inline constexpr int64_t kFusedExpertsMaxSms = 1024;
inline constexpr int64_t fused_experts_grouped_scratch_bytes(int64_t num_experts) {
  return 7 * (16 * num_experts + 256) + 4 * 128 * kFusedExpertsMaxSms;
}

// Bytes of fused_experts' workspace for T tokens (see FusedExpertsArgs).
inline int64_t fused_experts_workspace_bytes(int64_t tokens, int64_t top_k, int64_t num_experts, int64_t hidden,
                                             int64_t intermediate) {
  constexpr int64_t kAlign = 256;
  auto round_up = [](int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
  const int64_t slots = tokens * top_k;
  // Grouping and padding of the slots for every GEMM block size up to 128 rows, and
  // block counts for block sizes down to 16.
  const int64_t padded = moe_align_max_padded(slots, num_experts, 128);
  const int64_t blocks = moe_align_max_blocks(slots, num_experts, 16);
  const int64_t chunks = (slots + 1023) / 1024;
  int64_t b = 0;
  b += round_up(4 * padded);                          // sorted slot ids
  b += round_up(4 * blocks);                          // expert of each block
  b += round_up(4 * 4);                               // padded slot count
  b += round_up(4 * (num_experts + 1));               // expert offsets
  b += round_up(4 * chunks * num_experts);            // per-chunk expert counts
  b += round_up(2 * padded * 2 * intermediate);       // gate | up, then silu(gate) * up, of every sorted slot (16-bit)
  b += round_up(2 * padded * hidden);                 // hidden rows in sorted order, then expert outputs (16-bit)
  b += round_up(4 * slots);                           // sorted position of every slot
  b += round_up(fused_experts_grouped_scratch_bytes(num_experts));
  return b + kAlign;
}

// The experts of one MoE layer, routed (vLLM's fused_experts):
//   out[t, :] = sum_{j < k} topk_weights[t, j] * expert_{topk_ids[t, j]}(hidden[t, :])
//   expert_e(x) = w2[e] @ (silu(w13[e, :I] @ x) * (w13[e, I:] @ x))
// w13 holds the gate projection in its first I rows and the up projection in the last I
// (HF's gate_up_proj, vLLM's w13), w2 the down projection. A shared expert (DeepSeek,
// Qwen2-MoE) is one more expert that every token selects with weight 1 (or its gate).
//
// Precision: products accumulate in fp32 (CUDA) or double (CPU); an implementation may
// round silu(gate) * up to the activation dtype before the down projection and each
// weighted expert output to it before the sum over j (as vLLM does).
//
// fp8 weights (w13 and w2 f8e4m3fn, block-scaled like DeepSeek-V3 / vLLM's block fp8):
// the weight value is w[e, n, c] * scale[e, n / 128, c / 128]; hidden stays bf16/f16
// (weight-only quantisation). Without fp8 the scale tensors are absent.
//
// workspace: at least fused_experts_workspace_bytes(T, k, E, H, I) bytes of device scratch
// (contents undefined before and after). The CUDA baseline launches kernels only (no
// allocation, copy or sync): it can be captured in a CUDA graph. It needs H and I
// multiples of 8 (16 with fp8 weights), 16-byte aligned tensors and hidden's row stride
// a multiple of 8, and reports FK_ERR_UNSUPPORTED otherwise.
struct FusedExpertsArgs {
  static constexpr const char* kName = "fused_experts";
  TensorView out;           // [T, H] written; dtype of hidden; contiguous
  TensorView hidden;        // [T, H] read; bf16/f16; rows contiguous (row stride free)
  TensorView w13;           // [E, 2I, H] read; dtype of hidden, or f8e4m3fn; contiguous
  TensorView w2;            // [E, H, I] read; dtype of w13; contiguous
  TensorView w13_scale;     // [E, ceil(2I/128), ceil(H/128)] read; f32; fp8 only (absent otherwise)
  TensorView w2_scale;      // [E, ceil(H/128), ceil(I/128)] read; f32; fp8 only (absent otherwise)
  TensorView topk_weights;  // [T, k] read; f32; contiguous
  TensorView topk_ids;      // [T, k] read; i32; contiguous
  TensorView workspace;     // [bytes] u8: scratch (device memory on the CUDA backend)
};

// Softmax routing and the routed experts in one op (vLLM's fused_moe(hidden, w1, w2,
// gating_output, topk, renormalize)): exactly moe_topk_softmax(topk_weights, topk_ids,
// gating_output, renormalize) followed by fused_experts(out, hidden, w13, w2, w13_scale,
// w2_scale, topk_weights, topk_ids, workspace), with k = topk_ids.shape[1]. The routing is
// an output too (the engine may reuse it; checks accept any valid top-k selection in any
// order, as for moe_topk_softmax, and then check `out` against the experts it selected).
// The router GEMV (hidden @ router^T -> gating_output) stays outside: it is `linear`.
//
// Why one op: at decode the CUDA baseline computes the routing inside the two GEMV kernels
// of fused_experts' decode path (each CTA routes its token from the logits; no routing
// kernel, no launch boundary); other shapes run the routing kernel then fused_experts.
// The routing it writes is bit-identical to moe_topk_softmax's CUDA baseline.
//
// workspace: at least fused_experts_workspace_bytes(T, k, E, H, I) bytes of device scratch.
// Requirements and unsupported shapes are those of both ops (E <= 1024 on the CUDA baseline).
struct FusedMoeArgs {
  static constexpr const char* kName = "fused_moe";
  TensorView out;            // [T, H] written; dtype of hidden; contiguous
  TensorView hidden;         // [T, H] read; bf16/f16; rows contiguous (row stride free)
  TensorView w13;            // [E, 2I, H] read; dtype of hidden, or f8e4m3fn; contiguous
  TensorView w2;             // [E, H, I] read; dtype of w13; contiguous
  TensorView w13_scale;      // [E, ceil(2I/128), ceil(H/128)] read; f32; fp8 only (absent otherwise)
  TensorView w2_scale;       // [E, ceil(H/128), ceil(I/128)] read; f32; fp8 only (absent otherwise)
  TensorView gating_output;  // [T, E] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView topk_weights;   // [T, k] written; f32; contiguous
  TensorView topk_ids;       // [T, k] written; i32; contiguous
  TensorView workspace;      // [bytes] u8: scratch (device memory on the CUDA backend)
  int32_t renormalize;       // 1: weights / sum(weights); 0: the softmax probabilities
};

}  // namespace fk::ops
