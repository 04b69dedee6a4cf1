// A DLRM's weights on one device, named as facebookresearch/dlrm's DLRM_Net state dict names
// them (the layout of MLPerf's DLRM checkpoints):
//   emb_l.<t>.weight          [rows_t, D]   the embedding table of sparse feature t
//   bot_l.<2l>.weight / bias  [out, in]     bottom MLP layer l (nn.Sequential of Linear, ReLU:
//                                           the Linears sit at the even indices)
//   top_l.<2l>.weight / bias  [out, in]     top MLP layer l (Linear, ReLU, ..., Linear, Sigmoid)
// Each linear weight is held with its rows padded to a multiple of 8 elements (dlrm_padded):
// the GEMM reads the [out, in] view of it, every row 16-byte aligned; the padding is never
// read.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/recsys/dlrm/dlrm_config.h"

namespace fk::models::recsys {

struct DlrmLinear {
  Tensor weight;  // [out, dlrm_padded(in)]
  Tensor bias;    // [out]
  int64_t in = 0;
  // The layer's [out, in] weight: the padded rows' first `in` elements.
  TensorView weight_view() const;
};

struct DlrmWeights {
  std::vector<Tensor> tables;  // [rows_t, D] per table
  std::vector<DlrmLinear> bottom, top;
};

// The checkpoint's tensors, named and shaped as DLRM_Net's state dict.
std::vector<TensorDecl> dlrm_weight_decls(const DlrmConfig& c, DType dtype);

// Reads every tensor from the checkpoint at `path` (a folder, a .safetensors file or a shard
// index), converting to `dtype`. Throws naming the missing or mis-shaped tensor.
DlrmWeights load_dlrm_weights(const DlrmConfig& c, const std::filesystem::path& path, DType dtype, Device device);

// Random weights of the config's shapes (dummy weights), drawn on the device from
// Philox(seed): table entries uniform over +-sqrt(3 / D) (rows of about unit norm, so dot
// products of pooled rows stay of order one), projections with standard deviation
// 1/sqrt(fan_in), small biases.
DlrmWeights random_dlrm_weights(const DlrmConfig& c, DType dtype, Device device, uint64_t seed, void* stream);

}  // namespace fk::models::recsys
