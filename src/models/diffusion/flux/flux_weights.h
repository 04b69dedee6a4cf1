// FLUX.1 transformer weights on one device, in the layout the forward pass wants, read
// from diffusers' FluxTransformer2DModel checkpoint under its own names or drawn at random.
// The one change of layout: each attention's to_q / to_k / to_v (and add_q_proj /
// add_k_proj / add_v_proj) are stacked into one [3H, H] matrix and [3H] bias, so the three
// projections are one GEMM whose output q, k and v are column slices.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "fk/tensor.h"
#include "models/diffusion/flux/flux_config.h"
#include "models/model.h"

namespace fk::models::diffusion {

// A torch.nn.Linear: weight [out, in], bias [out].
struct FluxLinear {
  Tensor weight, bias;
};

// FluxTransformerBlock (double stream): image stream `x`, text stream `context`.
struct FluxDoubleBlockWeights {
  FluxLinear norm1, norm1_context;  // [6H, H]: shift, scale, gate (attention) | shift, scale, gate (MLP)
  FluxLinear qkv, add_qkv;          // [3H, H]: to_q|to_k|to_v, add_q_proj|add_k_proj|add_v_proj
  Tensor norm_q, norm_k, norm_added_q, norm_added_k;  // [D] RMSNorm weights
  FluxLinear to_out, to_add_out;    // [H, H]
  FluxLinear ff_up, ff_down;        // ff.net.0.proj [4H, H], ff.net.2 [H, 4H]
  FluxLinear ff_context_up, ff_context_down;
};

// FluxSingleTransformerBlock: the joint [text; image] sequence.
struct FluxSingleBlockWeights {
  FluxLinear norm;      // [3H, H]: shift, scale, gate
  FluxLinear qkv;       // [3H, H]
  Tensor norm_q, norm_k;
  FluxLinear proj_mlp;  // [4H, H]
  FluxLinear proj_out;  // [H, 5H]: input is [attention | gelu(MLP)]
};

struct FluxWeights {
  FluxLinear x_embedder, context_embedder;
  FluxLinear time_1, time_2;          // time_text_embed.timestep_embedder.linear_1 / linear_2
  FluxLinear guidance_1, guidance_2;  // time_text_embed.guidance_embedder.* (guidance_embeds only)
  FluxLinear text_1, text_2;          // time_text_embed.text_embedder.linear_1 / linear_2
  std::vector<FluxDoubleBlockWeights> double_blocks;
  std::vector<FluxSingleBlockWeights> single_blocks;
  FluxLinear norm_out;                // [2H, H]: scale, shift (AdaLayerNormContinuous's order)
  FluxLinear proj_out;                // [p*p*C, H]
};

// Every tensor of the upstream checkpoint, named and shaped as diffusers stores it.
std::vector<TensorDecl> flux_weight_decls(const FluxConfig& c, DType dtype);

// Reads the checkpoint at `path` (a folder, a .safetensors file or a shard index),
// converting to `dtype`. Throws naming the missing or mis-shaped tensor.
FluxWeights load_flux_weights(const FluxConfig& c, const std::filesystem::path& path, DType dtype, Device device);

// Dummy weights of the config's shapes drawn on the device from Philox(seed): projections
// with standard deviation 1/sqrt(fan_in), small biases, RMSNorm weights near 1.
FluxWeights random_flux_weights(const FluxConfig& c, DType dtype, Device device, uint64_t seed, void* stream);

}  // namespace fk::models::diffusion
