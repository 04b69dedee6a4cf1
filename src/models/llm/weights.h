// A decoder model's weights on one device, in the layout the forward pass wants: q, k and v
// projections fused into one [q + 2 kv, hidden] matrix (one GEMM), gate and up fused into
// one [2 * intermediate, hidden] matrix ([gate | up] rows, what silu_and_mul reads), norm
// weights as the norm ops take them; MoE layers hold their router and every expert's
// gate/up ([E, 2 * expert intermediate, hidden], gate rows first) and down projections
// stacked, as fused_experts reads them, and (Qwen2-MoE) their shared expert's gate/up
// fused like a dense MLP's, its down projection and its gate logit's weight row. Qwen3-Next's
// gated attention layers hold [q | k | v | gate] rows in qkv (q_proj's per-head [query; gate]
// rows split), its gated DeltaNet layers the lin_* tensors. Filled
// from an HF checkpoint or at random. With spec.moe.fp8 the experts are block fp8
// (fp8_blocks.h), everything else stays in the model dtype.
#pragma once
#include <cstdint>
#include <vector>

#include "models/llm/model_spec.h"
#include "core/safetensors/safetensors.h"
#include "fk/tensor.h"

namespace fk::engine {

struct LayerWeights {
  Tensor input_norm;               // [H]
  Tensor qkv, qkv_bias;            // [Hq*D + 2*Hk*D, H], [Hq*D + 2*Hk*D] (qkv_bias: optional)
  Tensor q_norm, k_norm;           // [D] (qk_norm only; offset already added for Gemma3), or
                                   // [Hq*D], [Hk*D] (qk_norm_across_heads)
  Tensor o_proj, o_bias;           // [H, Hq*D], [H] (optional)
  Tensor sinks;                    // [Hq] f32 (gpt-oss: attention sink logits; else absent)
  Tensor post_attn_norm;           // [H] (sandwich only)
  Tensor pre_mlp_norm;             // [H]
  Tensor gate_up, gate_up_bias;    // [2I, H], [2I] (optional)
  Tensor down, down_bias;          // [H, I], [H] (optional)
  Tensor post_mlp_norm;            // [H] (sandwich only)
  Tensor router;                   // [E, H] (MoE layers; gate_up/down are then absent)
  Tensor router_bias;              // [E] (gpt-oss; else absent)
  Tensor w13_bias, w2_bias;        // [E, 2Ie], [E, H] (gpt-oss's biased experts; else absent)
  Tensor w13, w2;                  // [E, 2Ie, H], [E, H, Ie]: model dtype, or f8e4m3fn (spec.moe.fp8)
  Tensor w13_scale, w2_scale;      // [E, ceil(2Ie/128), ceil(H/128)], [E, ceil(H/128), ceil(Ie/128)] f32
                                   // (spec.moe.fp8 only: one scale per 128x128 block, fp8_blocks.h)
  Tensor shared_gate_up;           // [2Is, H] (MoE layers with a shared expert; gate rows first)
  Tensor shared_down;              // [H, Is]
  Tensor shared_gate;              // [1, H]: the shared expert's gate logit is x . shared_gate[0]
  // Gated DeltaNet layers (Qwen3-Next), instead of qkv / o_proj / q_norm / k_norm. lin_in
  // is in_proj_qkvz and in_proj_ba with rows regrouped from per-key-head groups into
  // [q (Hk*K) | k (Hk*K) | v (Hv*V) | b (Hv) | a (Hv)], so each part is a column range of
  // one GEMM's output (and q | k | v, what the convolution reads, is contiguous); lin_z
  // holds the z rows, a GEMM of its own so that the gated norm reads z as packed heads.
  Tensor lin_in;                   // [2*Hk*K + Hv*V + 2*Hv, H]
  Tensor lin_z;                    // [Hv*V, H]
  Tensor conv_w;                   // [conv_dim, W] (conv1d.weight [conv_dim, 1, W])
  Tensor a_log, dt_bias;           // [Hv] f32
  Tensor lin_norm;                 // [V]: the gated RMSNorm's weight (plain, not an offset)
  Tensor lin_out;                  // [H, Hv*V]
};

struct ModelWeights {
  Tensor embed;         // [V, H]: the token table (and the head when tied)
  Tensor embed_input;   // [V, H]: what the input lookup reads: embed, or embed * sqrt(H) (Gemma)
  Tensor final_norm;    // [H]
  Tensor lm_head;       // [V, H]: embed when tied
  std::vector<LayerWeights> layers;
  int64_t bytes = 0;    // device memory held
};

// Reads every weight the spec needs from an HF checkpoint (config.json's model), converting
// to `dtype` (bf16 or f16) where the checkpoint differs. Throws naming the missing tensor or
// the tensor whose shape does not match the config. A block-fp8 checkpoint
// (spec.fp8_checkpoint) keeps its fp8 experts and their scales as stored and dequantizes
// every other fp8 weight (value * its X_scale_inv block scale, rounded once); with
// spec.moe.fp8, experts stored in 16 or 32 bits are quantized (quantize_fp8_blocks).
ModelWeights load_checkpoint_weights(const ModelSpec& spec, const safetensors::Checkpoint& ckpt, DType dtype,
                                     Device device, void* stream = nullptr);

// Random weights of the spec's shapes (the --dummy-weights of the benchmark): projections
// N(0, 1/sqrt(fan_in)), embeddings N(0, 1), norms at their identity (1, or 0 for Gemma's
// offset weights), biases N(0, 0.02); drawn on the device from Philox(seed). With
// spec.moe.fp8 the experts are those same draws quantized (quantize_fp8_blocks).
ModelWeights dummy_weights(const ModelSpec& spec, DType dtype, Device device, uint64_t seed, void* stream = nullptr);

}  // namespace fk::engine
