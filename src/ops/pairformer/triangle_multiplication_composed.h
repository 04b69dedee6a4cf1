// triangle_multiplication as registry calls (layer_norm, linear) around each backend's own
// steps: the gating into channel-major workspaces, the per-channel GEMMs, the transposition
// back to token-major and the output gate. triangle_multiplication_def.cpp runs it with the
// CPU steps; triangle_multiplication_cuda.cpp with the CUDA ones.
#pragma once
#include <cstdint>

#include "fk/ops/pairformer.h"
#include "ops/pairformer/triangle_multiplication_gemm.h"

namespace fk::ops {

struct TriangleDims {
  int64_t batch, n, pair_channels, hidden;  // B, N, Cz, C
};

// Backend steps; every tensor packed, math in fp32 / double, rounded once to the dtype.
struct TriangleMultiplicationSteps {
  // left[b, c, r, k] = a, right[b, c, r, k] = b of the pair the GEMM's row r and column k
  // name: (r, k) outgoing, (k, r) incoming; a = sigmoid(ag) * ap * mask from `projected`.
  void (*gate)(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream);
  NtGemmFn gemm;
  // dst[b, i, j, c] = src[b, c, i, j] (C channels).
  void (*to_token_major)(const TensorView& dst, const TensorView& src, const TriangleDims& d, void* stream);
  // pair[b, i, j, :] += sigmoid(projected[b, i, j, 4 C:]) * update[b, i, j, :].
  void (*output_gate)(const TriangleMultiplicationArgs& a, const TriangleDims& d, void* stream);
};

// Checks every argument (named errors); `backend` cpu lets pair be f64 (the oracle).
TriangleDims validate_triangle_multiplication(const TriangleMultiplicationArgs& a, DeviceType backend);

void triangle_multiplication_composed(const TriangleMultiplicationArgs& a, DeviceType backend,
                                      const TriangleMultiplicationSteps& steps, void* stream);

}  // namespace fk::ops
