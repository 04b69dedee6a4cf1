// The config of OpenFold3's Pairformer stack (the AlphaFold3 trunk's 48 Pairformer blocks),
// in the keys of OpenFold3's model config (architecture.pairformer):
//   {"model_type": "openfold3", "c_s": 384, "c_z": 128, "c_hidden_pair_bias": 24,
//    "no_heads_pair_bias": 16, "c_hidden_mul": 128, "c_hidden_pair_att": 32,
//    "no_heads_pair": 4, "no_blocks": 48, "transition_type": "swiglu", "transition_n": 4,
//    "fuse_projection_weights": false, "max_tokens": 384}
// The pairformer keys may also sit in a "pairformer" object, as OpenFold3 nests them.
// Every key but model_type is optional (default: OpenFold3's). max_tokens is the crop: the
// most tokens a structure may have (a longer one is refused by name). Refused by name: the
// relu transition (AlphaFold2's; AlphaFold3 uses SwiGLU), fused projection weights
// (AlphaFold2-Multimer's layout, with biases), sizes that are not positive.
#pragma once
#include <cstdint>
#include <string_view>

namespace fk::models::science {

struct OpenFold3Config {
  int64_t c_s = 384;                // single representation channels
  int64_t c_z = 128;                // pair representation channels
  int64_t c_hidden_pair_bias = 24;  // AttentionPairBias channels per head
  int64_t no_heads_pair_bias = 16;
  int64_t c_hidden_mul = 128;       // triangle multiplication hidden channels
  int64_t c_hidden_pair_att = 32;   // triangle attention channels per head
  int64_t no_heads_pair = 4;
  int64_t no_blocks = 48;
  int64_t transition_n = 4;         // transition hidden = transition_n x channels
  int64_t max_tokens = 384;         // the crop
};

OpenFold3Config parse_openfold3_config(std::string_view json_text, std::string_view source);

}  // namespace fk::models::science
