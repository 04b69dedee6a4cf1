// The Pairformer block (AlphaFold3 supplementary information, Algorithm 17; OpenFold3's
// PairFormerBlock) as one registry op (L3), IN PLACE on both representations:
//   z += TriangleMultiplicationOutgoing(z)      triangle_multiplication, incoming 0
//   z += TriangleMultiplicationIncoming(z)      triangle_multiplication, incoming 1
//   z += TriangleAttentionStartingNode(z)       triangle_attention, ending 0
//   z += TriangleAttentionEndingNode(z)         triangle_attention, ending 1
//   z += Transition(z)                          pairformer_transition over the B N N pair rows
//   s += AttentionPairBias(s, z)                single_attention_pair_bias
//   s += Transition(s)                          pairformer_transition over the B N single rows
// Each line is one call of the op of fk/ops/pairformer.h named beside it (its weights are the
// weight struct of that op; shapes and dtypes as there). The baseline makes exactly these
// calls through the registry, so a candidate for any of them reaches the block. Dropout
// (training only) is absent; the transitions' updates are not masked (Algorithm 11 has no
// mask: a padded token's own rows may differ from a masked implementation's, a real token's
// never do, because every op drops padded tokens from what it sums or attends over).
//
// Workspace: one flat tensor of the activations' dtype, at least
// pairformer_block_workspace_elements(dims) elements. The seven calls run one after the
// other, so each carves its workspace tensors from the start of the same buffer; each
// tensor starts at a multiple of kPairformerWorkspaceAlign elements (aligned for vector
// loads). The size is the largest of the seven calls' needs.
#pragma once
#include <algorithm>
#include <cstdint>

#include "fk/op.h"
#include "fk/ops/pairformer.h"

namespace fk::ops {

struct PairformerBlockWeights {
  TriangleMultiplicationWeights tri_mul_out;  // pair_stack.tri_mul_out
  TriangleMultiplicationWeights tri_mul_in;   // pair_stack.tri_mul_in
  TriangleAttentionWeights tri_att_start;     // pair_stack.tri_att_start
  TriangleAttentionWeights tri_att_end;       // pair_stack.tri_att_end
  TransitionWeights pair_transition;          // pair_stack.pair_transition, C = Cz
  SingleAttentionPairBiasWeights attn_pair_bias;
  TransitionWeights single_transition;        // C = Cs
};

struct PairformerBlockArgs {
  static constexpr const char* kName = "pairformer_block";
  TensorView single;       // [B, N, Cs] inout: s
  TensorView pair;         // [B, N, N, Cz] inout: z
  TensorView single_mask;  // [B, N] read; dtype of the pair; optional (absent: every token)
  TensorView pair_mask;    // [B, N, N] read; dtype of the pair; optional (absent: every pair)
  PairformerBlockWeights w;
  TensorView workspace;    // [W] workspace, W >= pairformer_block_workspace_elements
  int32_t tri_heads;       // triangle attention heads (AlphaFold3: 4 of 32 channels)
  int32_t single_heads;    // AttentionPairBias heads (AlphaFold3: 16 of 24 channels)
};

// The sizes the workspace depends on (taken from the arguments' shapes).
struct PairformerBlockDims {
  int64_t batch = 0, tokens = 0;  // B, N
  int64_t c_s = 0, c_z = 0;       // Cs, Cz
  int64_t c_mul = 0;              // C: the triangle multiplication's hidden channels
  int64_t tri_heads = 0, tri_head_dim = 0;
  int64_t single_heads = 0, single_head_dim = 0;
  int64_t pair_hidden = 0, single_hidden = 0;  // F of each transition
};

inline constexpr int64_t kPairformerWorkspaceAlign = 64;

inline int64_t pairformer_workspace_round(int64_t n) {
  return (n + kPairformerWorkspaceAlign - 1) / kPairformerWorkspaceAlign * kPairformerWorkspaceAlign;
}

// Elements of the workspace: the largest of the calls' workspace tensors summed (each
// rounded up to the alignment), in the order of their fields in fk/ops/pairformer.h.
inline int64_t pairformer_block_workspace_elements(const PairformerBlockDims& d) {
  const auto r = pairformer_workspace_round;
  const int64_t pairs = d.batch * d.tokens * d.tokens, toks = d.batch * d.tokens;
  const int64_t thd = d.tri_heads * d.tri_head_dim, shd = d.single_heads * d.single_head_dim;
  const int64_t tri_mul = r(pairs * d.c_z) + r(pairs * (4 * d.c_mul + d.c_z)) + 2 * r(pairs * d.c_mul) +
                          r(pairs * d.c_mul) + r(pairs * d.c_z);
  const int64_t tri_att = r(pairs * d.c_z) + r(pairs * 4 * thd) + 3 * r(pairs * thd) + r(pairs * d.tri_heads) +
                          r(pairs * thd) + r(pairs * thd) + r(pairs * d.c_z);
  const int64_t single_att = r(toks * d.c_s) + r(pairs * d.c_z) + r(toks * shd) + r(toks * 3 * shd) +
                             3 * r(toks * shd) + r(pairs * d.single_heads) + r(toks * shd) + r(toks * d.c_s);
  auto transition = [&](int64_t rows, int64_t c, int64_t f) {
    return r(rows * c) + r(rows * 2 * f) + r(rows * f) + r(rows * c);
  };
  return std::max({tri_mul, tri_att, single_att, transition(pairs, d.c_z, d.pair_hidden),
                   transition(toks, d.c_s, d.single_hidden)});
}

}  // namespace fk::ops
