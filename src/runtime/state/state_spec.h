// What state a model keeps per sequence, declared per layer group (DESIGN.md, "Models,
// state and run patterns"). The serving patterns size and allocate state from these
// declarations alone, so a new kind of model adds layers, not a new engine:
//   - none: stateless layers (encoders, one-shot Batch models);
//   - paged KV: attention keys and values in fixed-size pages, full or sliding window;
//   - recurrent slot: a fixed number of bytes per sequence (conv + SSM / linear-attention
//     state), whatever the sequence's length;
//   - cross-attention cache: keys and values of an encoder output, written once per request.
// Hybrid models (Jamba, Qwen3-Next, Kimi-Linear) list one group per kind they use.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fk/dtype.h"

namespace fk::runtime {

enum class StateKind : uint8_t { none, paged_kv, recurrent_slot, cross_attention };

// recurrent_slot: one tensor of a layer's state, e.g. Mamba2's "conv" [conv_dim, kernel - 1]
// and "ssm" [heads, head_dim, state_dim], so that the ops get typed views of a slot.
struct StateTensor {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  int64_t bytes() const {
    int64_t n = static_cast<int64_t>(dtype_size(dtype));
    for (int64_t d : shape) n *= d;
    return n;
  }
};

struct StateSpec {
  std::string group;  // "attention", "mamba", "linear_attention": names the layer group in errors
  StateKind kind = StateKind::none;
  std::vector<int64_t> layers;  // the model's layer indices in this group

  // paged_kv and cross_attention: per layer, per token, kv_heads x head_dim for k and for v.
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  DType dtype = DType::bf16;
  // paged_kv: 0 is full attention; else each query sees the last `sliding_window` positions.
  int64_t sliding_window = 0;
  // cross_attention: the encoder positions one request's cache holds.
  int64_t max_encoder_tokens = 0;

  // recurrent_slot: the bytes one sequence's state takes in each layer of the group
  // (conv state + recurrent state), fixed whatever the sequence's length.
  int64_t slot_bytes_per_layer = 0;
  // recurrent_slot, optional: the tensors those bytes hold, in order (their bytes add up to
  // slot_bytes_per_layer). Empty: a layer's state is slot_bytes_per_layer bytes (u8).
  std::vector<StateTensor> slot_tensors;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  // Bytes of one token of this group's KV (all its layers; paged_kv and cross_attention).
  int64_t kv_bytes_per_token() const {
    return num_layers() * 2 * kv_heads * head_dim * static_cast<int64_t>(dtype_size(dtype));
  }
  // Bytes of one sequence's recurrent state across the group's layers (recurrent_slot).
  int64_t slot_bytes() const { return num_layers() * slot_bytes_per_layer; }
};

// "none", "paged_kv", "recurrent_slot", "cross_attention".
std::string_view state_kind_name(StateKind kind);

}  // namespace fk::runtime
