#include "models/vlm/qwen3_vl/presets.h"

namespace fk::models::vlm {

// Qwen/Qwen3-VL-8B-Instruct's config.json.
const char* const kQwen3VL8BConfig = R"({
  "architectures": ["Qwen3VLForConditionalGeneration"],
  "image_token_id": 151655,
  "model_type": "qwen3_vl",
  "text_config": {
    "attention_bias": false,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "dtype": "bfloat16",
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 12288,
    "max_position_embeddings": 262144,
    "model_type": "qwen3_vl_text",
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"mrope_interleaved": true, "mrope_section": [24, 20, 20], "rope_type": "default"},
    "rope_theta": 5000000,
    "use_cache": true,
    "vocab_size": 151936
  },
  "tie_word_embeddings": false,
  "video_token_id": 151656,
  "vision_config": {
    "deepstack_visual_indexes": [8, 16, 24],
    "depth": 27,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 1152,
    "in_channels": 3,
    "initializer_range": 0.02,
    "intermediate_size": 4304,
    "model_type": "qwen3_vl",
    "num_heads": 16,
    "num_position_embeddings": 2304,
    "out_hidden_size": 4096,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2
  },
  "vision_end_token_id": 151653,
  "vision_start_token_id": 151652
})";

// 3 vision blocks of 32 (2 heads of 16), a 4 x 4 position grid, 4 x 4 patches, deepstack
// after blocks 0 and 2, merged to 24 (the text width); a 2-layer text model of 24 with
// heads of 16 (M-RoPE sections 4/2/2 of its 8 frequencies).
const char* const kTinyQwen3VLConfig = R"({
  "architectures": ["Qwen3VLForConditionalGeneration"],
  "image_token_id": 60,
  "model_type": "qwen3_vl",
  "text_config": {
    "attention_bias": false,
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 24,
    "intermediate_size": 48,
    "max_position_embeddings": 512,
    "model_type": "qwen3_vl_text",
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "num_key_value_heads": 1,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"mrope_interleaved": true, "mrope_section": [4, 2, 2], "rope_type": "default"},
    "rope_theta": 10000,
    "vocab_size": 64
  },
  "tie_word_embeddings": false,
  "video_token_id": 61,
  "vision_config": {
    "deepstack_visual_indexes": [0, 2],
    "depth": 3,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 32,
    "in_channels": 3,
    "intermediate_size": 48,
    "model_type": "qwen3_vl",
    "num_heads": 2,
    "num_position_embeddings": 16,
    "out_hidden_size": 24,
    "patch_size": 4,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2
  },
  "vision_end_token_id": 59,
  "vision_start_token_id": 58
})";

}  // namespace fk::models::vlm
