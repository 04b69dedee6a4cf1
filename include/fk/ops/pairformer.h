// Ops of the AlphaFold3-design trunk (OpenFold3's Pairformer): attention with an additive
// pair bias, the triangle updates of the pair representation, and the Pairformer block.
// Algorithm numbers are those of the AlphaFold3 paper's supplementary information.
//
// Shapes beside each field: B structures (the batch), N tokens, Cz pair channels, Cs single
// channels, Hh heads of D channels, C the triangle multiplication's hidden channels. The
// pair representation z is [B, N, N, Cz] (row i, column j), the single representation s is
// [B, N, Cs]. Masks are 0/1 values in the activations' dtype (a structure shorter than N is
// padded; a masked-out token is neither attended to nor summed over).
//
// Common rules:
// - Weights are the PyTorch layout [out_features, in_features]; every projection of these
//   algorithms is LinearNoBias except where a field says otherwise. The LayerNorms have a
//   weight and a bias (eps 1e-5, biased variance).
// - Dtypes: f32, f16 or bf16 (f64 for the oracle); every tensor has the dtype of the
//   residual stream it updates. Math is fp32 (CUDA) or double (CPU reference); the
//   workspace intermediates are held in that dtype, as the composed baseline stores them.
// - Every tensor is packed (contiguous). No written tensor may overlap another tensor.
// - The triangle and pair-bias ops update their residual stream IN PLACE (z += update,
//   s += update): the Pairformer block is a chain of residual updates on two buffers.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// Multi-head attention with an additive bias shared by groups of rows (L1): the attention
// core of triangle attention (rows of the pair representation attend along the row, with a
// bias from the pair representation) and of AttentionPairBias (the single representation
// attends over tokens, biased by the pair representation).
//
//   out[r, i, h, :] = sum_k p[k] v[r, k, h, :],
//   p = softmax_k( scale * q[r, i, h, :] . k[r, k, h, :] + bias[r / (R / G), h, i, k]
//                  + (mask[r, k] ? 0 : -inf) )
//
// R rows of S positions each; the bias has G groups (G divides R): row r uses group
// r / (R / G). Triangle attention over a structure's N rows uses one bias for all of them
// (R = B N, G = B); the single attention has one row per structure (R = G = B). A query
// whose keys are all masked writes zeros.
struct PairBiasAttentionArgs {
  static constexpr const char* kName = "pair_bias_attention";
  TensorView out;   // [R, S, Hh, D] written; dtype of q
  TensorView q;     // [R, S, Hh, D] read; f32/f16/bf16
  TensorView k;     // [R, S, Hh, D] read; dtype of q
  TensorView v;     // [R, S, Hh, D] read; dtype of q
  TensorView bias;  // [G, Hh, S, S] read; dtype of q
  TensorView mask;  // [R, S] read; dtype of q; 0 or 1 per key; optional (absent: all keys)
  float scale;      // the logit scale, finite and > 0 (AlphaFold3: 1 / sqrt(D))
};

// Triangle multiplicative update, outgoing (Algorithm 12) or incoming (Algorithm 13) edges,
// IN PLACE (L2):
//   x = layer_norm(z, ln_in)
//   [ag | ap | bg | bp | g] = x @ in_weight^T                 (C, C, C, C, Cz channels)
//   a = sigmoid(ag) * ap * mask,  b = sigmoid(bg) * bp * mask  (mask[b, i, j] per pair)
//   t[i, j, c] = sum_k a[i, k, c] b[j, k, c]   (outgoing)
//              = sum_k a[k, i, c] b[k, j, c]   (incoming)
//   z += sigmoid(g) * (layer_norm(t, ln_out) @ out_weight^T)
// The k sum is a batched GEMM per channel (N^3 C multiply-adds): the op's cost.
struct TriangleMultiplicationWeights {
  TensorView ln_in_weight;    // [Cz] read
  TensorView ln_in_bias;      // [Cz] read
  TensorView in_weight;       // [4 C + Cz, Cz] read: a gate, a projection, b gate, b projection, g rows
  TensorView ln_out_weight;   // [C] read
  TensorView ln_out_bias;     // [C] read
  TensorView out_weight;      // [Cz, C] read
};
struct TriangleMultiplicationArgs {
  static constexpr const char* kName = "triangle_multiplication";
  TensorView pair;            // [B, N, N, Cz] inout: z
  TensorView mask;            // [B, N, N] read; optional (absent: every pair)
  TriangleMultiplicationWeights w;
  TensorView normed;          // [B, N, N, Cz] workspace
  TensorView projected;       // [B, N, N, 4 C + Cz] workspace
  TensorView left;            // [B, C, N, N] workspace: a, channel-major for the GEMMs
  TensorView right;           // [B, C, N, N] workspace: b
  TensorView product;         // [B, N, N, C] workspace: t
  TensorView update;          // [B, N, N, Cz] workspace
  int32_t incoming;           // 0: outgoing edges (Algorithm 12); 1: incoming (Algorithm 13)
};

// Triangle attention around the starting node (Algorithm 14) or the ending node
// (Algorithm 15), IN PLACE (L2):
//   x = layer_norm(z, ln)
//   [q | k | v | g] = x @ qkvg_weight^T          (Hh D channels each)
//   bias[b, h, i, j] = x[b, i, j, :] . bias_weight[h, :]
//   starting node: o[i, j] = pair_bias_attention of row i: query j over keys k = (i, k),
//                  bias[h, j, k], mask[b, i, k]
//   ending node:   the same on the transposed pair (query (j, i) over keys (k, i), bias
//                  [h, j, k] of the transposed x, i.e. bias[h, k, j] of x), written back
//                  transposed
//   z += (sigmoid(g) * o) @ out_weight^T
// scale = 1 / sqrt(D).
struct TriangleAttentionWeights {
  TensorView ln_weight;     // [Cz] read
  TensorView ln_bias;       // [Cz] read
  TensorView qkvg_weight;   // [4 Hh D, Cz] read: q, k, v, g rows
  TensorView bias_weight;   // [Hh, Cz] read
  TensorView out_weight;    // [Cz, Hh D] read
};
struct TriangleAttentionArgs {
  static constexpr const char* kName = "triangle_attention";
  TensorView pair;          // [B, N, N, Cz] inout: z
  TensorView mask;          // [B, N, N] read; optional (absent: every pair)
  TriangleAttentionWeights w;
  TensorView normed;        // [B, N, N, Cz] workspace
  TensorView qkvg;          // [B, N, N, 4 Hh D] workspace
  TensorView q, k, v;       // [B N, N, Hh, D] workspace each (rows of the possibly transposed pair)
  TensorView bias;          // [B, Hh, N, N] workspace
  TensorView attn;          // [B N, N, Hh, D] workspace
  TensorView gated;         // [B, N, N, Hh D] workspace
  TensorView update;        // [B, N, N, Cz] workspace
  int32_t num_heads;        // Hh (AlphaFold3: 4, D = 32)
  int32_t ending;           // 0: starting node (Algorithm 14); 1: ending node (Algorithm 15)
};

// AttentionPairBias without conditioning (Algorithm 24 as the Pairformer uses it), IN PLACE
// on the single representation (L2):
//   a = layer_norm(s, ln_single);  q = a @ q_weight^T + q_bias;  [k | v | g] = a @ kvg_weight^T
//   bias[b, h, i, j] = layer_norm(z, ln_pair)[b, i, j, :] . bias_weight[h, :]
//   o = pair_bias_attention(q, k, v, bias, mask[b, j]) with scale 1 / sqrt(D)
//   s += (sigmoid(g) * o) @ out_weight^T
struct SingleAttentionPairBiasWeights {
  TensorView ln_single_weight, ln_single_bias;  // [Cs] read each
  TensorView ln_pair_weight, ln_pair_bias;      // [Cz] read each
  TensorView q_weight;        // [Hh D, Cs] read
  TensorView q_bias;          // [Hh D] read
  TensorView kvg_weight;      // [3 Hh D, Cs] read: k, v, g rows
  TensorView bias_weight;     // [Hh, Cz] read
  TensorView out_weight;      // [Cs, Hh D] read
};
struct SingleAttentionPairBiasArgs {
  static constexpr const char* kName = "single_attention_pair_bias";
  TensorView single;          // [B, N, Cs] inout: s
  TensorView pair;            // [B, N, N, Cz] read: z
  TensorView mask;            // [B, N] read; optional (absent: every token)
  SingleAttentionPairBiasWeights w;
  TensorView normed_single;   // [B, N, Cs] workspace
  TensorView normed_pair;     // [B, N, N, Cz] workspace
  TensorView q;               // [B, N, Hh, D] workspace
  TensorView kvg;             // [B, N, 3 Hh D] workspace
  TensorView k, v, g;         // [B, N, Hh, D] workspace each
  TensorView bias;            // [B, Hh, N, N] workspace
  TensorView attn;            // [B, N, Hh, D] workspace
  TensorView update;          // [B, N, Cs] workspace
  int32_t num_heads;          // Hh (AlphaFold3's Pairformer: 16, D = 24)
};

// The SwiGLU transition (Algorithm 11), IN PLACE (L2):
//   a = layer_norm(x, ln);  [u | w] = a @ in_weight^T  (F channels each)
//   x += (silu(u) * w) @ out_weight^T
// x is the pair ([B N N, Cz]) or the single representation ([B N, Cs]) as rows.
struct TransitionWeights {
  TensorView ln_weight;   // [C] read
  TensorView ln_bias;     // [C] read
  TensorView in_weight;   // [2 F, C] read: u rows, then w rows (AlphaFold3: F = 4 C)
  TensorView out_weight;  // [C, F] read
};
struct TransitionArgs {
  static constexpr const char* kName = "pairformer_transition";
  TensorView x;           // [T, C] inout
  TransitionWeights w;
  TensorView normed;      // [T, C] workspace
  TensorView hidden;      // [T, 2 F] workspace
  TensorView act;         // [T, F] workspace
  TensorView update;      // [T, C] workspace
};

}  // namespace fk::ops
