// The gated delta rule (Gated DeltaNet: Qwen3-Next, Qwen3.5), token-packed and variable
// length, with per-sequence recurrent state in a slot pool. The two ops compute the same
// function; they mirror flash-linear-attention's chunk_gated_delta_rule (the prefill path:
// a chunked, matmul-shaped algorithm) and fused_recurrent_gated_delta_rule (the decode path:
// a loop over tokens), as vLLM calls them with cu_seqlens and ssm_state_indices.
//
// Shapes: T tokens of N sequences packed back to back (sequence n owns tokens
// [cu_seqlens[n], cu_seqlens[n+1])), Hk query/key heads of size K, Hv value heads of size V,
// Hv a multiple of Hk (grouped value attention). Value head h uses query/key head
// h / (Hv / Hk): consecutive value heads share a key head, as transformers'
// repeat_interleave and flash-linear-attention's i_h = i_hv // (HV // H).
//
// Per sequence n and value head h, with S the [K, V] state (f32 in the pool, index [k][v]):
//   S = state[state_indices[n], h]   if has_initial_state is absent or has_initial_state[n] != 0
//     = 0                            otherwise
//   for each token t of the sequence, in order:
//     q_t, k_t = q[t, h / (Hv/Hk)], k[t, h / (Hv/Hk)]; when use_qk_l2norm_in_kernel:
//       x = x / sqrt(sum(x^2) + 1e-6)  (for q and k: flash-linear-attention's l2norm)
//     S     = S * exp(g[t, h])                       (g: log-space decay, normally <= 0)
//     delta = beta[t, h] * (v[t, h] - S^T k_t)       ([V])
//     S     = S + k_t delta^T
//     o[t, h] = S^T (scale * q_t)                    ([V], rounded once to the dtype)
//   state[state_indices[n], h] = S                   (the final state, written back in place)
// scale = 1 / sqrt(K) when the argument is 0. Slots not named by state_indices are left
// alone; the slots of one call's sequences must be distinct. A sequence of no tokens still
// writes its slot (its initial state, or zeros without one).
//
// Precision: q, k, v, o share a dtype (bf16, f16 or f32); g is f32 (vLLM's fused gating
// writes it in f32); beta is f32 or the dtype of q; the state pool is f32. The CUDA
// baselines compute in f32 and keep the state in f32 between tokens and chunks; the CPU
// reference accumulates in double.
//
// The recurrent form reads and writes each sequence's state once per call whatever the
// number of tokens, so it also serves decode with several tokens per sequence (speculative
// decoding's verification step).
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// The largest key head size the CUDA baselines take (Qwen3-Next and Qwen3.5 use 128).
inline constexpr int64_t kGatedDeltaMaxHeadK = 128;
// Tokens per chunk of the chunked form (flash-linear-attention's chunk size).
inline constexpr int64_t kGatedDeltaChunk = 64;

// The arguments shared by both forms (one layout, two op names).
struct GatedDeltaRuleArgs {
  TensorView o;                  // [T, Hv, V] written; dtype of q; contiguous
  TensorView state;              // [num_slots, Hv, K, V] f32 updated: the slots of the call's sequences are
                                 //   read (initial state) and written (final state); each slot a packed
                                 //   [Hv, K, V], the slot stride free (>= Hv K V)
  TensorView q;                  // [T, Hk, K] read; bf16/f16/f32; heads packed, token (row) stride free
  TensorView k;                  // [T, Hk, K] read; dtype of q; like q
  TensorView v;                  // [T, Hv, V] read; dtype of q; heads packed, token (row) stride free
  TensorView g;                  // [T, Hv] read; f32; contiguous: log-space decay
  TensorView beta;               // [T, Hv] read; f32 or dtype of q; contiguous
  TensorView cu_seqlens;         // [N+1] i32 read: 0 = cu_seqlens[0] <= ... <= cu_seqlens[N] = T
  TensorView state_indices;      // [N] i32 read: sequence n's slot, in [0, num_slots), distinct
  TensorView has_initial_state;  // [N] i32 read; optional (absent: every sequence starts from its slot):
                                 //   0 = start from zeros, the slot's contents ignored
  float scale;                   // > 0, or 0 for 1 / sqrt(K)
  int32_t use_qk_l2norm_in_kernel;  // 1: q and k L2-normalised per head inside the op
};

// The chunked form (prefill): the same function, computed in chunks of kGatedDeltaChunk
// tokens of one sequence (a UT transform within a chunk, the state passed from chunk to
// chunk), which turns most of the work into small matrix products.
struct ChunkGatedDeltaRuleArgs : GatedDeltaRuleArgs {
  static constexpr const char* kName = "chunk_gated_delta_rule";
};

// The recurrent form (decode): the same function, token by token.
struct FusedRecurrentGatedDeltaRuleArgs : GatedDeltaRuleArgs {
  static constexpr const char* kName = "fused_recurrent_gated_delta_rule";
};

}  // namespace fk::ops
