// An XLM-RoBERTa encoder's weights on one device, in the layout the forward pass wants
// (query, key and value fused into one [3H, H] matrix and [3H] bias: one GEMM), read from
// the upstream checkpoint under its own names (XLMRobertaModel's state dict; a "roberta."
// prefix, as the task-head classes save it, is accepted, and BERT's "bert."; the pooler is
// not used), or drawn at random. ColBERT's projection is the checkpoint's "linear.weight"
// (HF_ColBERT saves it beside "bert.*"). BGE-M3's sparse and ColBERT heads come from the files the BGE-M3 repository
// ships beside the checkpoint, sparse_linear.* and colbert_linear.* (torch.nn.Linear state
// dicts: "weight" and "bias"), read as shipped or from a safetensors form (bge_m3_heads.h).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/encoder/xlm_roberta_config.h"
#include "models/model.h"

namespace fk::models::encoder {

struct EncoderLayerWeights {
  Tensor qkv, qkv_bias;            // [3H, H], [3H]: query, key, value rows in that order
  Tensor attn_out, attn_out_bias;  // [H, H], [H]
  Tensor attn_norm, attn_norm_bias;  // [H], [H]: the LayerNorm after the attention block
  Tensor up, up_bias;              // [I, H], [I] (intermediate.dense)
  Tensor down, down_bias;          // [H, I], [H] (output.dense)
  Tensor out_norm, out_norm_bias;  // [H], [H]: the LayerNorm after the MLP
};

// BGE-M3's heads: sparse_linear (H -> 1, ReLU'd per token) and colbert_linear (H -> H).
struct BgeM3HeadWeights {
  Tensor sparse, sparse_bias;    // [1, H], [1]
  Tensor colbert, colbert_bias;  // [H, H], [H]
  bool present() const { return sparse.defined(); }
};

struct XlmRobertaWeights {
  Tensor word, position, token_type;  // [V, H], [P, H], [types, H]
  Tensor embed_norm, embed_norm_bias; // [H], [H]
  std::vector<EncoderLayerWeights> layers;
  BgeM3HeadWeights heads;
  Tensor colbert_projection;  // [dim, H]: ColBERT's linear (no bias); undefined otherwise
};

// The upstream checkpoint's tensors (upstream names and shapes), then the heads' tensors
// named as their files hold them ("sparse_linear.weight": weight of sparse_linear.*).
std::vector<TensorDecl> xlm_roberta_weight_decls(const XlmRobertaConfig& c, DType dtype);

// Reads the backbone from the checkpoint at `path` (a folder, a .safetensors file or a
// shard index) and the heads from that folder, converting to `dtype`. Throws naming the
// missing or mis-shaped tensor. A folder without head files gives no heads.
XlmRobertaWeights load_xlm_roberta_weights(const XlmRobertaConfig& c, const std::filesystem::path& path, DType dtype,
                                           Device device, void* stream);

// Random weights of the config's shapes (dummy weights): projections with standard
// deviation 1/sqrt(fan_in), embeddings in [-1/2, 1/2), norms near their identity, small
// biases; the heads included. Drawn on the device from Philox(seed).
XlmRobertaWeights random_xlm_roberta_weights(const XlmRobertaConfig& c, DType dtype, Device device, uint64_t seed,
                                             void* stream);

}  // namespace fk::models::encoder
