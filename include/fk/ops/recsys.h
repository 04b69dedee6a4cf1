// Ops of recommendation models (DLRM): the pooled lookup of a sample's categorical ids in an
// embedding table, and the pairwise dot-product interaction of a sample's feature vectors.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// How a bag's rows are pooled (PyTorch's nn.EmbeddingBag mode; its "max" = 2 is not taken).
enum class EmbeddingBagMode : int32_t {
  sum = 0,   // the rows added up, each times its per_sample_weight when those are given
  mean = 1,  // their sum divided by the bag's length
};

// out[b, :] = pooled rows of table at the indices of bag b (PyTorch's nn.EmbeddingBag /
// F.embedding_bag with include_last_offset = True):
//   bag b = indices[offsets[b] .. offsets[b + 1])
//   sum:  out[b, :] = sum over i in bag b of w_i * table[indices[i], :]   (w_i = 1 without weights)
//   mean: out[b, :] = (sum over i in bag b of table[indices[i], :]) / |bag b|
// An empty bag gives a row of zeros (both modes). Accumulated in fp32 (CUDA) or double (CPU
// reference), rounded once to the dtype.
//
// Shapes: B bags (samples), N indices, V table rows, D the embedding width. offsets has
// B + 1 entries, non-decreasing, within [0, N]. PyTorch's convention is offsets[0] = 0 and
// offsets[B] = N; a slice of one packed offsets array is also accepted (offsets[0] > 0,
// offsets[B] < N: FBGEMM's table-batched layout, one [T * B + 1] offsets array over the
// concatenated indices of T tables), so each table's call reads its part without a copy.
// Indices outside every bag are not read.
//
// Precondition: every index inside a bag lies in [0, V) (the data pipeline hashes the raw
// categorical ids into the table, MLPerf's max_ind_range). On violation:
// - the CPU implementation (and oracle) fails with FK_ERR_INVALID_ARGUMENT naming the first
//   bad index, its position and its bag, before writing anything; it also checks the offsets
//   and names the first bad entry;
// - the CUDA implementation cannot report errors from the device without a synchronisation:
//   an index outside [0, V) adds nothing (its row is not read; a mean still counts it), and
//   each offset is clamped into [0, N] (a bag ending before it starts is empty). It never
//   reads outside its tensors; wrong metadata gives wrong values, not a fault.
struct EmbeddingBagArgs {
  static constexpr const char* kName = "embedding_bag";
  TensorView out;                 // [B, D] written; dtype of table; rows contiguous (row stride free)
  TensorView table;               // [V, D] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView indices;             // [N] read; i32 or i64; contiguous
  TensorView offsets;             // [B + 1] read; dtype of indices; contiguous
  TensorView per_sample_weights;  // [N] read; dtype of table; contiguous; optional (sum mode only)
  EmbeddingBagMode mode;
};

// DLRM's dot interaction without self-interaction (facebookresearch/dlrm's
// interact_features with arch_interaction_op "dot", arch_interaction_itself False), per
// sample b over its F + 1 vectors x_0 = dense[b, :], x_f = sparse[b, f - 1, :] (f = 1..F):
//   out[b, 0 : D]                   = dense[b, :]                (copied, no rounding)
//   out[b, D + i (i - 1) / 2 + j]   = x_i . x_j   for 0 <= j < i <= F
// i.e. the strict lower triangle of the Gram matrix in row-major order: (1,0), (2,0), (2,1),
// (3,0), ... The top MLP reads the [B, D + (F + 1) F / 2] rows (MLPerf's DLRM: D = 128,
// F = 26: 128 + 351 = 479 features). Dot products accumulate in fp32 (CUDA) or double (CPU
// reference), each rounded once to the dtype.
//
// Layout: the last dimension of every tensor is contiguous. dense and out have free row
// strides; sparse's batch and feature strides are free (non-negative, feature rows not
// overlapping), so the bottom MLP's output and the pooled embeddings may share one
// [B, F + 1, D] buffer (dense = its vector 0, sparse = vectors 1..F) and the embedding
// lookups write straight into it. Dtypes: f32, f16 or bf16, one for all (the CPU oracle
// writes f64). The CUDA baseline takes F + 1 <= 96 vectors; it reports FK_ERR_UNSUPPORTED
// beyond that.
struct DlrmInteractionArgs {
  static constexpr const char* kName = "dlrm_interaction";
  TensorView out;     // [B, D + (F + 1) F / 2] written; dtype of dense; rows contiguous (row stride free)
  TensorView dense;   // [B, D] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView sparse;  // [B, F, D] read; dtype of dense; D contiguous, batch and feature strides free
};

// DLRM's interaction and top MLP as one op (L3), over B samples:
//   h_0 = dlrm_interaction(dense, sparse)                      [B, Z], Z = D + (F + 1) F / 2
//   h_{l+1} = relu(h_l W_l^T + b_l)          for l < L - 1      [B, N_l]
//   logits  = h_{L-1} W_{L-1}^T + b_{L-1}                       [B, N_{L-1}] (DLRM: 1)
// i.e. the registry calls dlrm_interaction, then per layer linear and relu (none after the
// last), each output rounded to the dtype as the model stores it (the oracle rounds there
// too and keeps everything else in f64). The weights come in the model's layout: layer l's
// [N_l, K_l] matrix (K_0 = Z, K_l = N_{l-1}) in rows padded to a multiple of 8 elements
// (16-byte aligned rows for the GEMMs), [N_l, pad8(K_l)]; the padding is never read. The
// workspaces hold the interaction ([B, pad8(Z)]) and a layer's output before and after its
// relu ([B, pad8(max N_l)] each), in the dtype.
// Dtypes: f16 or bf16, one for all (the CPU oracle writes f64 logits). At most 8 layers.
struct DlrmTopArgs {
  static constexpr const char* kName = "dlrm_top";
  static constexpr int kMaxLayers = 8;
  TensorView logits;                  // [B, N_{L-1}] written; rows contiguous (row stride free)
  TensorView dense;                   // [B, D] read: the bottom MLP's output; row stride free
  TensorView sparse;                  // [B, F, D] read: the pooled embeddings; batch and feature strides free
  TensorView weight[kMaxLayers];      // [N_l, pad8(K_l)] read; contiguous; the first `layers`
  TensorView bias[kMaxLayers];        // [N_l] read; contiguous; the first `layers`
  TensorView interaction;             // [B, pad8(Z)] workspace; contiguous
  TensorView pre;                     // [B, pad8(max N_l)] workspace; contiguous
  TensorView post;                    // [B, pad8(max N_l)] workspace; contiguous
  int32_t layers;                     // L, 1 to kMaxLayers
};

}  // namespace fk::ops
