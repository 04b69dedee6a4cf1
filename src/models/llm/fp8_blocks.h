// Block-scaled fp8 weights, as fused_experts takes them (DeepSeek-V3's and vLLM's block
// fp8): a [..., R, C] weight held as f8e4m3fn values q with one f32 scale per 128 x 128
// block, scale [..., ceil(R/128), ceil(C/128)]; the weight's value is
// q[r, c] * scale[r / 128, c / 128]. HF checkpoints store that multiplier beside each
// quantized weight X as "X_scale_inv" (X.weight -> X.weight_scale_inv).
#pragma once
#include <cstdint>

#include "fk/tensor.h"

namespace fk::engine {

inline constexpr int64_t kFp8Block = 128;
inline constexpr float kFp8Max = 448.0f;  // largest finite f8e4m3fn

struct Fp8Blocks {
  Tensor weight;  // [..., R, C] f8e4m3fn
  Tensor scale;   // [..., ceil(R/128), ceil(C/128)] f32
};

// The scale grid of a [..., R, C] weight: [..., ceil(R/128), ceil(C/128)].
Shape fp8_scale_shape(const Shape& weight_shape);

// Quantizes `w` (bf16, f16 or f32, contiguous, rank >= 2; the leading dimensions index
// separate matrices) on its own device, block by block as DeepSeek-V3's weights were:
// scale = absmax / 448 (1 for an all-zero block), q = w / scale rounded to the nearest
// f8e4m3fn (ties to even; the division's rounding may push absmax / scale just past 448,
// which saturates to 448). Both divisions are IEEE float divisions, so the host and the
// device write the same bits.
Fp8Blocks quantize_fp8_blocks(const Tensor& w, void* stream = nullptr);

// The CUDA launch (models/llm/cuda/fp8_blocks.cu; a "built without CUDA" error in CPU builds):
// w [M, R, C], q [M, R, C] f8e4m3fn, scale [M, ceil(R/128), ceil(C/128)] f32, all contiguous.
void quantize_fp8_blocks_cuda(const TensorView& w, const TensorView& q, const TensorView& scale, void* stream);

}  // namespace fk::engine
