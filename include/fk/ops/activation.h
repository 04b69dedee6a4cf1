// Activation ops of decoder MLPs and heads. Shapes are written beside each field: T tokens
// (packed), d the intermediate size, H a row length.
//
// Common rules:
// - Dtypes: f32, f16 or bf16; out has the dtype of input. Math is fp32 (CUDA) or double
//   (CPU reference), rounded once to the output dtype.
// - "rows contiguous": the last dimension has stride 1; the row stride is free.
// - out must not overlap input (except where an op says it works in place).
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// How GELU is evaluated (PyTorch's `approximate` argument).
enum class GeluApprox : int32_t {
  none = 0,  // 0.5 x (1 + erf(x / sqrt(2)))
  tanh = 1,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};

// SwiGLU gate (Llama, Qwen, Mistral): out[t, j] = silu(input[t, j]) * input[t, d + j],
// silu(x) = x / (1 + exp(-x)). The input row is [gate | up], as the fused gate_up GEMM writes it.
struct SiluAndMulArgs {
  static constexpr const char* kName = "silu_and_mul";
  TensorView out;    // [T, d]  written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, 2d] read; f32/f16/bf16; rows contiguous (row stride free)
};

// GeGLU gate (Gemma: approximate = tanh): out[t, j] = gelu(input[t, j]) * input[t, d + j].
struct GeluAndMulArgs {
  static constexpr const char* kName = "gelu_and_mul";
  TensorView out;    // [T, d]  written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, 2d] read; f32/f16/bf16; rows contiguous (row stride free)
  GeluApprox approximate;
};

// out = gelu(input), element-wise.
struct GeluArgs {
  static constexpr const char* kName = "gelu";
  TensorView out;    // [T, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  GeluApprox approximate;
};

// Squared ReLU (Primer, Nemotron): out = max(input, 0)^2, element-wise (NaN propagates).
struct Relu2Args {
  static constexpr const char* kName = "relu2";
  TensorView out;    // [T, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
};

// ReLU: out = max(input, 0), element-wise (NaN propagates, as torch.relu). The activation
// between DLRM's MLP layers (nn.ReLU after each linear).
struct ReluArgs {
  static constexpr const char* kName = "relu";
  TensorView out;    // [T, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
};

// Gemma 2's logit soft-capping, IN PLACE: logits = cap * tanh(logits / cap).
// In place because its one caller (the LM head's output before sampling) never needs the
// raw logits again, and a [tokens, vocab] f32 copy is the largest activation of a step.
struct LogitSoftcapArgs {
  static constexpr const char* kName = "logit_softcap";
  TensorView logits;  // [T, V] updated; f32/f16/bf16; rows contiguous (row stride free)
  float cap;          // > 0 (Gemma 2: 30 for final logits)
};

}  // namespace fk::ops
