// BGE-M3's sparse and ColBERT heads as the BGE-M3 repository ships them: beside the
// XLM-RoBERTa checkpoint, sparse_linear.pt (the state dict of torch.nn.Linear(H, 1)) and
// colbert_linear.pt (torch.nn.Linear(H, H)), each holding "weight" and "bias". Both are read
// as shipped (torch_state_dict.h); a safetensors form of the same state dict
// (sparse_linear.safetensors, colbert_linear.safetensors) is preferred where present. A
// folder with neither head has no heads (a plain XLM-RoBERTa checkpoint); one head without
// the other is a named error.
#pragma once
#include <cstdint>
#include <filesystem>

#include "models/encoder/xlm_roberta_weights.h"

namespace fk::models::encoder {

BgeM3HeadWeights load_bge_m3_heads(const std::filesystem::path& folder, int64_t hidden, DType dtype, Device device);

}  // namespace fk::models::encoder
